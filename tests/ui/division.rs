// `/` and `%` take operands of one width; `div_rem` takes a divisor of another width.
#[bigfuse::kernel]
fn f(a: U<{ 2 * BITS }>, b: U<BITS>) -> U<BITS> {
    a % b
}

fn main() {}
