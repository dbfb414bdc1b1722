#[bigfuse::kernel]
fn f(a: U<BITS>) -> U<BITS> {
    let mut c = a;
    for i in 1..BITS {
        c = c * a;
    }
    c
}

fn main() {}
