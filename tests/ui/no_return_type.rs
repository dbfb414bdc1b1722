#[bigfuse::kernel]
fn f(a: U<BITS>, b: U<BITS>) {
    a + b;
}

fn main() {}
