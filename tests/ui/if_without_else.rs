#[bigfuse::kernel]
fn f(a: U<BITS>, b: U<BITS>) -> U<BITS> {
    if a < b { a }
}

fn main() {}
