#[bigfuse::kernel]
fn f(a: U<BITS>) -> U<BITS> {
    let mut c = a;
    for i in 0..4 {
        let d = c * a;
    }
    c
}

fn main() {}
