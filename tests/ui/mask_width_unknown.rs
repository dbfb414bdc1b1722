#[bigfuse::kernel]
fn f(a: U<BITS>, len: u32) -> bool {
    let m = U::mask(len);
    a == m
}

fn main() {}
