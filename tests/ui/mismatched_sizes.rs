#[bigfuse::kernel]
fn f(a: U<A>, b: U<B>) -> U<A> {
    a + b
}

fn main() {}
