//! Operations that the threads of an instance compute together where one thread's registers do
//! not hold them: powers modulo a big integer ([`crate::montgomery`]) and gcds and inverses
//! ([`crate::gcd`]). A program of one thread per instance (one-element arrays) gets the threads
//! its widest such operation asks for, and every such operation of the program then runs on that
//! group (`schedule`).

use crate::error::CgResult;
use crate::gcd::GcdPlan;
use crate::montgomery::PowModPlan;
use bigfuse_core::Func;

/// The plan of one operation that may run on a group of threads.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Grouped {
    Power(PowModPlan),
    Gcd(GcdPlan),
}

impl Grouped {
    /// The threads its plan asks for.
    pub fn threads(&self) -> u32 {
        match self {
            Grouped::Power(p) => p.threads,
            Grouped::Gcd(p) => p.threads,
        }
    }

    /// The same operation computed by `threads` threads, where they split it.
    pub fn with_threads(self, threads: u32) -> CgResult<Grouped> {
        Ok(match self {
            Grouped::Power(p) => Grouped::Power(p.with_threads(threads)?),
            Grouped::Gcd(p) => Grouped::Gcd(p.with_threads(threads)?),
        })
    }

    /// About the registers one of its threads needs.
    pub fn registers(&self) -> u32 {
        match self {
            Grouped::Power(p) => p.registers(),
            Grouped::Gcd(p) => p.registers(),
        }
    }

    /// One line for `explain`.
    pub fn describe(&self) -> String {
        match self {
            Grouped::Power(p) => p.describe(),
            Grouped::Gcd(p) => p.describe(),
        }
    }
}

/// Every power, gcd and inverse of `f` (closures and loops included), one per operation and
/// width.
pub fn plans(f: &Func) -> Vec<Grouped> {
    let powers = crate::montgomery::plans(f).into_iter().map(Grouped::Power);
    let gcds = crate::gcd::plans(f).into_iter().map(Grouped::Gcd);
    powers.chain(gcds).collect()
}
