#[bigfuse::kernel]
fn f<T>(a: U<BITS>, b: U<BITS>) -> U<BITS> {
    a + b
}

fn main() {}
