#[bigfuse::kernel]
fn f(a: U<BITS>, b: U<BITS>) -> (U<BITS>, bool) {
    (a, b)
}

fn main() {}
