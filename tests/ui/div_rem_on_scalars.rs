#[bigfuse::kernel]
fn f(a: u64, b: u64) -> u64 {
    let (q, _r) = a.div_rem(b);
    q
}

fn main() {}
