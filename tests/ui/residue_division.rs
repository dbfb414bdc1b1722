#[bigfuse::kernel]
fn f(x: Zp<P>, y: Zp<P>) -> Zp<P> {
    x / y
}

fn main() {}
