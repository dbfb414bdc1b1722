#[bigfuse::kernel]
fn f(a: U<BITS>) -> U<BITS> {
    let mut c = a;
    for i in 0..BITS / 64 {
        c = c * a;
    }
    c
}

fn main() {}
