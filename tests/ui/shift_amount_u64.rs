#[bigfuse::kernel]
fn f(a: U<BITS>, k: u64) -> U<BITS> {
    a.rotate_left(k)
}

fn main() {}
