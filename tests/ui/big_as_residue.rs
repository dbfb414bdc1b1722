#[bigfuse::kernel]
fn f(a: U<BITS>, z: Zp<P>) -> Zp<P> {
    a as Zp<P> + z
}

fn main() {}
