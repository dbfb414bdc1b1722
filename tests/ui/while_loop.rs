#[bigfuse::kernel]
fn f(a: U<BITS>, b: U<BITS>) -> U<BITS> {
    let mut c = a;
    while c < b {
        c = c + a;
    }
    c
}

fn main() {}
