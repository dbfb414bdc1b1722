//! The passes, in the order [`crate::compile`] runs them: one list that `explain` follows, a test
//! checks compile against, and the README's pipeline section names.

use bigfuse_core::{print, Func};

/// One pass: its name in `explain` and the file that holds it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Pass {
    pub name: &'static str,
    pub file: &'static str,
    /// What it does, in a line.
    pub what: &'static str,
}

/// Every pass and sub-pass of one kernel's compilation, in order. The first ones rewrite the IR
/// (each is recorded as a [`Stage`]); the last four decorate it and print their own sections.
pub const PASSES: &[Pass] = &[
    Pass {
        name: "specialize",
        file: "dsl-core/src/specialize.rs",
        what: "size parameters become constants",
    },
    Pass {
        name: "unroll",
        file: "codegen/src/loops.rs",
        what: "loops become their rounds, the round's index a constant; long loops of one-thread programs stay loops",
    },
    Pass {
        name: "fold",
        file: "codegen/src/fold.rs",
        what: "operations on constants with scalar results become constants (the width as a value, shift amounts)",
    },
    Pass {
        name: "residues",
        file: "codegen/src/residue.rs",
        what: "arithmetic modulo a big odd integer becomes Montgomery products, chains kept in Montgomery form",
    },
    Pass {
        name: "divide",
        file: "codegen/src/divide.rs",
        what: "big-integer division and square roots become Newton reciprocals, products and corrections",
    },
    Pass {
        name: "per_thread",
        file: "codegen/src/per_thread.rs",
        what: "a program of small whole values becomes one map over one-element arrays: one thread per instance",
    },
    Pass {
        name: "scalarize",
        file: "codegen/src/scalarize.rs",
        what: "arrays of big integers and tuples become per-element values",
    },
    Pass {
        name: "lower_zp",
        file: "codegen/src/modular.rs",
        what:
            "Zp<P> arithmetic becomes 64/128-bit integer arithmetic (Montgomery, delayed reduction)",
    },
    Pass {
        name: "lower",
        file: "codegen/src/lower.rs",
        what:
            "big-integer operations become map / scan / reduce over 64-bit limbs and limb products",
    },
    Pass {
        name: "dead_code",
        file: "codegen/src/fuse.rs",
        what: "nodes no output needs go",
    },
    Pass {
        name: "unzip",
        file: "codegen/src/fuse.rs",
        what: "maps read the arrays of a zip directly",
    },
    Pass {
        name: "recognise",
        file: "codegen/src/isel/recognise.rs",
        what: "user-written additions become the built-in addition pattern",
    },
    Pass {
        name: "merge_maps",
        file: "codegen/src/fuse.rs",
        what: "chains of element-wise maps merge into their consumers",
    },
    Pass {
        name: "isel",
        file: "codegen/src/isel/mod.rs",
        what: "carry scans proved, products planned: the table the later passes read",
    },
    Pass {
        name: "schedule",
        file: "codegen/src/schedule.rs",
        what: "threads per instance, elements per thread, instances per block",
    },
    Pass {
        name: "place",
        file: "codegen/src/place.rs",
        what: "registers for arrays, shared staging buffers reused by liveness",
    },
    Pass {
        name: "emit",
        file: "codegen/src/emit/",
        what: "CUDA C text",
    },
];

/// The IR after one pass, for `explain`.
#[derive(Clone, Debug)]
pub struct Stage {
    pub pass: &'static str,
    pub ir: String,
}

/// What a compilation's IR passes did, in order. A pass that leaves the IR as it was is recorded
/// as unchanged, so `explain` names every pass without repeating the program.
#[derive(Clone, Debug, Default)]
pub struct Stages {
    pub stages: Vec<Stage>,
    last: Option<String>,
}

/// The text `explain` shows for a pass that changed nothing.
pub const UNCHANGED: &str = "(unchanged)";

impl Stages {
    /// Records the IR after `pass` (a name of [`PASSES`]).
    pub fn record(&mut self, pass: &'static str, func: &Func) {
        debug_assert!(
            PASSES.iter().any(|p| p.name == pass),
            "`{pass}` is not in PASSES"
        );
        let ir = print(func);
        let shown = if self.last.as_deref() == Some(ir.as_str()) {
            UNCHANGED.to_string()
        } else {
            ir.clone()
        };
        self.last = Some(ir);
        self.stages.push(Stage { pass, ir: shown });
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{compile, Hints, Target};
    use bigfuse_core::{Builder, Size, Type};

    fn names() -> Vec<&'static str> {
        PASSES.iter().map(|p| p.name).collect()
    }

    #[test]
    fn compile_records_every_ir_pass_in_order() {
        let mut b = Builder::new("f", &["BITS"]);
        let t = Type::Big(Size::param(0));
        let x = b.param("a", t.clone());
        let y = b.param("b", t);
        let s = b.add(x, y).unwrap();
        let f = b.finish(&[s]).unwrap();
        let c = compile(&f, &[256], &Target::h100(), &Hints::default()).unwrap();
        let recorded: Vec<&str> = c.stages.iter().map(|s| s.pass).collect();
        let all = names();
        let ir_passes = &all[..all.iter().position(|n| *n == "isel").unwrap()];
        assert_eq!(recorded, ir_passes);
        // An addition of two parameters has no zip and no user addition.
        let unzip = c.stages.iter().find(|s| s.pass == "unzip").unwrap();
        assert_eq!(unzip.ir, UNCHANGED);
        let explain = c.explain();
        // emit's result is the source itself, not a section of explain.
        for n in all.iter().filter(|n| **n != "emit") {
            assert!(
                explain.contains(&format!("== {n} =="))
                    || explain.contains(&format!("== after {n} ==")),
                "{n} missing from explain:\n{explain}"
            );
        }
    }

    #[test]
    fn every_pass_file_exists() {
        let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("..");
        for p in PASSES {
            assert!(
                root.join(p.file).exists(),
                "{}: {} is missing",
                p.name,
                p.file
            );
        }
    }

    /// The README's pipeline section names every pass, in order, with its file.
    #[test]
    fn the_readme_lists_the_passes_in_order() {
        let readme = std::fs::read_to_string(
            std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../README.md"),
        )
        .unwrap();
        let mut from = 0;
        for p in PASSES {
            let line = format!("`{}` ({})", p.name, p.file);
            let at = readme[from..]
                .find(&line)
                .unwrap_or_else(|| panic!("README.md lacks `{line}` after the previous pass"));
            from += at + line.len();
        }
    }
}
