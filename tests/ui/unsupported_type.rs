#[bigfuse::kernel]
fn f(a: String) -> u64 {
    1u64
}

fn main() {}
