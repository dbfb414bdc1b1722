#[bigfuse::kernel]
fn f(a: U<256>, b: U<256>, m: U<128>) -> U<256> {
    a.mul_mod(b, m)
}

#[bigfuse::kernel]
fn g(a: Zp<P>, b: Zp<P>) -> Zp<P> {
    a.add_mod(b, b)
}

#[bigfuse::kernel]
fn h(a: U<256>, b: U<256>) -> U<256> {
    a.sub_mod(b)
}

fn main() {}
