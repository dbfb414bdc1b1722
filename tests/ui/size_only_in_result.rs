#[bigfuse::kernel]
fn f(a: U<BITS>) -> U<N> {
    a
}

fn main() {}
