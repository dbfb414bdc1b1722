#[bigfuse::kernel]
fn f(a: U<BITS>, b: U<BITS>) -> U<BITS> {
    return a + b;
}

fn main() {}
