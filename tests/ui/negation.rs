#[bigfuse::kernel]
fn f(a: U<BITS>) -> U<BITS> {
    -a
}

fn main() {}
