#[bigfuse::kernel]
fn f(a: U<BITS>, b: U<BITS>) -> U<BITS> {
    let c = a;
    c = b;
    c
}

fn main() {}
