#[bigfuse::kernel]
fn f(a: U<BITS>) -> U<BITS> {
    a + 1
}

fn main() {}
