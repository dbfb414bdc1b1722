#[bigfuse::kernel]
fn f(a: U<BITS>, k: u32) -> U<BITS> {
    let mut c = a;
    for i in 0..k {
        c = c * a;
    }
    c
}

fn main() {}
