//! How a thread holds values: register names (`v<node>` for values, `x<n>` for temporaries),
//! their declarations, and an array's shape as Q elements per thread, so that every step names
//! and indexes values the same way.

use super::{scalar::ctype, Emitter, Val};
use bigfuse_core::{Type, ValueId};

impl Emitter<'_> {
    pub(super) fn temp(&mut self) -> String {
        self.temps += 1;
        format!("x{}", self.temps)
    }

    /// Declares temporaries for `exprs` (leaves of type `ty`) and returns their names.
    pub(super) fn bind(&mut self, ty: &[Type], exprs: Vec<String>) -> Vec<String> {
        ty.iter()
            .zip(exprs)
            .map(|(t, e)| {
                let n = self.temp();
                self.line(format!("const {} {n} = {e};", ctype(t)));
                n
            })
            .collect()
    }

    /// Like `bind`, but the temporaries are mutable: accumulators, updated in place.
    pub(super) fn vars(&mut self, types: &[Type], init: &[String]) -> Vec<String> {
        types
            .iter()
            .zip(init)
            .map(|(t, i)| {
                let n = self.temp();
                self.line(format!("{} {n} = {i};", ctype(t)));
                n
            })
            .collect()
    }

    /// The registers of node `id` with their types: `v<node>`, or `v<node>_<k>` for leaf k of a
    /// tuple.
    pub(super) fn registers(&self, id: ValueId) -> Vec<(Type, String)> {
        let leaves = self.leaf_types(id);
        let single = leaves.len() == 1;
        leaves
            .into_iter()
            .enumerate()
            .map(|(k, t)| {
                let n = if single {
                    format!("v{}", id.0)
                } else {
                    format!("v{}_{k}", id.0)
                };
                (t, n)
            })
            .collect()
    }

    pub(super) fn declare_array(&mut self, id: ValueId, q: u32) -> Vec<String> {
        self.registers(id)
            .into_iter()
            .map(|(t, n)| {
                self.line(format!("{} {n}[{q}];", ctype(&t)));
                n
            })
            .collect()
    }

    /// Declares node `id`'s registers with `init` (one expression per leaf).
    pub(super) fn declare_scalar(&mut self, id: ValueId, init: Vec<String>) -> Vec<String> {
        self.registers(id)
            .into_iter()
            .enumerate()
            .map(|(k, (t, n))| {
                self.line(format!("{} {n} = {};", ctype(&t), init[k]));
                n
            })
            .collect()
    }

    pub(super) fn val(&self, id: ValueId) -> &Val {
        self.vals[id.index()]
            .as_ref()
            .expect("values are emitted before use")
    }

    pub(super) fn leaf_types(&self, id: ValueId) -> Vec<Type> {
        self.func.ty(id).leaves()
    }

    pub(super) fn array_parts(&self, id: ValueId) -> (Vec<String>, u32, u64) {
        match self.val(id) {
            Val::Array { leaves, q, len } => (leaves.clone(), *q, *len),
            other => unreachable!("expected an array, found {other:?}"),
        }
    }

    /// Element `q` of every leaf of an argument (arrays) or the argument itself (scalars).
    pub(super) fn element(&self, id: ValueId, q: &str) -> Vec<String> {
        match self.val(id) {
            Val::Array { leaves, .. } => leaves.iter().map(|l| format!("{l}[{q}]")).collect(),
            Val::Scalar(leaves) => leaves.clone(),
            Val::Global(_) => unreachable!("big parameters are read through limbs"),
            Val::Written => unreachable!("values written where computed are read by no node"),
        }
    }

    pub(super) fn array_shape(&self, ty: &Type) -> (u32, u64) {
        let Type::Array(_, n) = ty else {
            unreachable!()
        };
        let len = n.as_const().unwrap_or(0);
        (self.sched.q_of(len), len)
    }

    /// True when a thread's elements `[t*q, t*q+q)` may run past `len`.
    pub(super) fn padded(&self, q: u32, len: u64) -> bool {
        self.sched.threads_per_instance as u64 * q as u64 > len
    }
}
