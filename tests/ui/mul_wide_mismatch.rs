#[bigfuse::kernel]
fn f(a: U<BITS>, b: U<256>) -> U<{2 * BITS}> {
    a.mul_wide(b)
}

fn main() {}
