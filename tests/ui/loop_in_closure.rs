#[bigfuse::kernel]
fn f(xs: [u64; N]) -> [u64; N] {
    xs.map(|x| {
        let mut y = x;
        for i in 0..3 {
            y = y * x;
        }
        y
    })
}

fn main() {}
