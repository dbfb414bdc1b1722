#[bigfuse::kernel]
fn f(a: U<BITS>, b: U<BITS>) -> U<BITS> {
    let mut c = a;
    for i in 0..BITS {
        if c > b {
            break;
        }
        c = c + a;
    }
    c
}

fn main() {}
