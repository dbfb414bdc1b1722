#[bigfuse::kernel]
fn f(a: U<BITS>, b: U<BITS>) -> u32 {
    (a < b).count_ones()
}

fn main() {}
