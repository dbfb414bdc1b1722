#[bigfuse::kernel]
fn f(a: U<100>, b: U<100>) -> U<100> {
    a + b
}

fn main() {}
