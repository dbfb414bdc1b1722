#[bigfuse::kernel]
fn f(a: U<BITS>, b: U<BITS>) -> U<BITS> {
    let c = for i in 0..3 {};
    a
}

fn main() {}
