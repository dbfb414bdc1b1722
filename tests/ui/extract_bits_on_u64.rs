#[bigfuse::kernel]
fn f(x: u64, lo: u32) -> u64 {
    x.extract_bits(lo, 8)
}

fn main() {}
