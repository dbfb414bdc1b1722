#[bigfuse::kernel]
fn f(a: U<BITS>, b: U<BITS>) -> U<BITS> {
    a << b
}

fn main() {}
