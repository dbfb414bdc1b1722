#[bigfuse::kernel]
fn f(a: U<BITS>, b: U<BITS>) -> U<BITS> {
    a.wrapping_add(b)
}

fn main() {}
