#[bigfuse::kernel]
fn f(a: U<256>, b: U<512>) -> U<256> {
    a & b
}

fn main() {}
