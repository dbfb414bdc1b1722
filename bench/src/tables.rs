//! The paper's two tables: addition (1-Add, 6-Add in GB/s) and multiplication (1-Mul, Poly in
//! Gu32ops/s), each figure next to the same-run copy bandwidth and the anchors.

use crate::anchors;
use crate::json::fixed;
use crate::kernels::*;
use crate::measure::{Bench, Measured, Reference, TOTAL_LOG};
use crate::variant::Variant;
use bigfuse::{Hints, Kernel};
use serde::Serialize;
use std::fmt::Write as _;

/// One size: the copy, then per variant the two kernels' figures (NaN where a variant failed).
#[derive(Clone, Debug)]
pub struct Row {
    pub log: u32,
    pub copy_gbs: f64,
    /// Per variant: (first kernel, second kernel, details of the first, details of the second).
    pub figures: Vec<(f64, f64, Option<Measured>, Option<Measured>)>,
}

/// GB/s of an addition at 2^log bits over the paper's NumInsts = 2^32 / NumBits.
pub fn add_gbs(log: u32, ms: f64) -> f64 {
    crate::ops::add_gbs(1 << log, 1 << (TOTAL_LOG - log), ms)
}

/// Gu32ops/s of `products` multiplications at 2^log bits over NumInsts = 2^32 / NumBits.
pub fn gu32ops(log: u32, products: f64, ms: f64) -> f64 {
    crate::ops::gu32ops(1 << log, 1 << (TOTAL_LOG - log), products, ms)
}

fn progress(what: &str, log: u32, variant: &Variant) {
    eprintln!("  {what} 2^{log} [{}]", variant.name);
}

/// One benchmarked kernel: its label, the kernel, its reference, and its figure from (log, ms).
type Column = (
    &'static str,
    &'static Kernel,
    Reference,
    fn(u32, f64) -> f64,
);

/// Times each column's kernel at 2^lo .. 2^hi bits under every variant (a missing column is NaN).
fn measure_rows(
    bench: &mut Bench,
    what: &str,
    lo: u32,
    hi: u32,
    variants: &[Variant],
    columns: [Option<Column>; 2],
) -> bigfuse::Result<Vec<Row>> {
    let mut rows = Vec::new();
    for log in lo..=hi {
        if crate::stopped() {
            break;
        }
        let bits = 1u64 << log;
        let copy_gbs = bench.copy_gbs()?;
        let mut figures = Vec::new();
        for v in variants {
            progress(what, log, v);
            let mut measured = columns.iter().map(|c| {
                let (label, kernel, reference, metric) = (*c)?;
                match bench.measure(kernel, bits, &v.hints, reference) {
                    Ok(m) => Some((metric(log, m.ms), m)),
                    Err(e) => {
                        eprintln!("    {label}: {e}");
                        None
                    }
                }
            });
            let (a, b) = (measured.next().flatten(), measured.next().flatten());
            figures.push((
                a.as_ref().map_or(f64::NAN, |x| x.0),
                b.as_ref().map_or(f64::NAN, |x| x.0),
                a.map(|x| x.1),
                b.map(|x| x.1),
            ));
        }
        rows.push(Row {
            log,
            copy_gbs,
            figures,
        });
    }
    Ok(rows)
}

/// 1-Add and 6-Add at 2^lo .. 2^hi bits.
pub fn add(bench: &mut Bench, lo: u32, hi: u32, variants: &[Variant]) -> bigfuse::Result<Vec<Row>> {
    measure_rows(
        bench,
        "add",
        lo,
        hi,
        variants,
        [
            Some(("1-Add", add1::kernel()?, ref_add1, add_gbs)),
            Some(("6-Add", add6::kernel()?, ref_add6, add_gbs)),
        ],
    )
}

/// 1-Mul and Poly (four products) at 2^lo .. 2^hi bits.
pub fn mul(
    bench: &mut Bench,
    lo: u32,
    hi: u32,
    variants: &[Variant],
    poly_too: bool,
) -> bigfuse::Result<Vec<Row>> {
    let poly: Option<Column> = if poly_too {
        Some(("Poly", poly::kernel()?, ref_poly, |log, ms| {
            gu32ops(log, 4.0, ms)
        }))
    } else {
        None
    };
    measure_rows(
        bench,
        "mul",
        lo,
        hi,
        variants,
        [
            Some(("1-Mul", mul1::kernel()?, ref_mul1, |log, ms| {
                gu32ops(log, 1.0, ms)
            })),
            poly,
        ],
    )
}

pub fn cell(x: f64, reference: Option<f64>, pct: bool) -> String {
    if x.is_nan() {
        return "-".into();
    }
    match reference {
        Some(r) if pct => format!("{x:.0} ({:.1}%)", 100.0 * x / r),
        Some(r) => format!("{x:.0} ({:.2}x)", x / r),
        None => format!("{x:.0}"),
    }
}

pub fn detail(m: Option<&Measured>) -> String {
    m.map(|m| {
        let spill = if m.local_bytes > 0 {
            format!(", {} B local", m.local_bytes)
        } else {
            String::new()
        };
        let algo = if m.algo == "-" {
            String::new()
        } else {
            format!("{} ", m.algo)
        };
        let shared = if m.shared_bytes > 0 {
            format!(", {} B shared", m.shared_bytes)
        } else {
            String::new()
        };
        // A split plan's details are its first kernel's: say so.
        let parts = if m.parts > 1 {
            format!(", first of {} kernels", m.parts)
        } else {
            String::new()
        };
        format!(
            "{algo}T={} Q={} {} regs{spill}{shared}{parts}",
            m.threads_per_instance, m.q, m.registers
        )
    })
    .unwrap_or_default()
}

/// Markdown table of the addition rows (percentages of the same-run copy; best anchor alongside).
pub fn add_table(gpu: &str, runs: usize, rows: &[Row], variants: &[Variant]) -> String {
    let mut s = String::new();
    let _ = writeln!(
        s,
        "GPU: {gpu}. GB/s = 3*NumInsts*NumBits/8 / time (median of {runs}); copy = same-run device-to-device copy, read + written.\n"
    );
    for (vi, v) in variants.iter().enumerate() {
        let _ = writeln!(s, "Schedule `{}`:\n", v.name);
        let _ = writeln!(s, "| NumBits | copy GB/s | 1-Add GB/s (% copy) | 6-Add GB/s (% copy) | best anchor 1-Add / 6-Add | 1-Add kernel | 6-Add kernel |");
        let _ = writeln!(s, "|---|---|---|---|---|---|---|");
        for r in rows {
            let (one, six, d1, d6) = &r.figures[vi];
            let anchor = anchors::best_add(r.log)
                .map(|(a, b)| format!("{a:.0} / {b:.0}"))
                .unwrap_or_else(|| "-".into());
            let _ = writeln!(
                s,
                "| 2^{} | {:.0} | {} | {} | {anchor} | {} | {} |",
                r.log,
                r.copy_gbs,
                cell(*one, Some(r.copy_gbs), true),
                cell(*six, Some(r.copy_gbs), true),
                detail(d1.as_ref()),
                detail(d6.as_ref())
            );
        }
        s.push('\n');
    }
    s
}

/// Markdown table of the multiplication rows (ratios to the best anchor).
pub fn mul_table(gpu: &str, runs: usize, rows: &[Row], variants: &[Variant]) -> String {
    let mut s = String::new();
    let _ = writeln!(
        s,
        "GPU: {gpu}. Gu32ops/s = 300*NumInsts*m*log2(m) / time (median of {runs}), m = NumBits/32; Poly counts four products. Ratios are to the best anchor.\n"
    );
    for (vi, v) in variants.iter().enumerate() {
        let _ = writeln!(s, "Schedule `{}`:\n", v.name);
        let _ = writeln!(s, "| NumBits | copy GB/s | 1-Mul (x best) | Poly (x best) | Poly / 1-Mul | 1-Mul kernel | Poly kernel |");
        let _ = writeln!(s, "|---|---|---|---|---|---|---|");
        for r in rows {
            let (one, p, d1, dp) = &r.figures[vi];
            let best = anchors::best_mul(r.log);
            let _ = writeln!(
                s,
                "| 2^{} | {:.0} | {} | {} | {} | {} | {} |",
                r.log,
                r.copy_gbs,
                cell(*one, best.map(|b| b.0), false),
                cell(*p, best.map(|b| b.1), false),
                if p.is_nan() {
                    "-".into()
                } else {
                    format!("{:.2}", p / one)
                },
                detail(d1.as_ref()),
                detail(dp.as_ref())
            );
        }
        s.push('\n');
    }
    s
}

/// The JSON of a table (`bench add`, `bench mul`): per size the copy and per variant its two
/// figures under `names`, both kernels' registers and the hints it ran with.
#[derive(Serialize)]
pub struct TableJson<'a> {
    bench: &'a str,
    gpu: &'a str,
    runs: usize,
    rows: Vec<RowJson<'a>>,
}

#[derive(Serialize)]
struct RowJson<'a> {
    num_bits: u64,
    copy_gbs: Option<f64>,
    variants: Vec<VariantJson<'a>>,
}

#[derive(Serialize)]
struct VariantJson<'a> {
    /// As given on the command line (`default` for none).
    variant: &'a str,
    #[serde(flatten)]
    figures: Figures<'a>,
    regs: [Option<u32>; 2],
    /// All of them, the environment's `BIGFUSE_*` included (their text form).
    hints: &'a Hints,
}

/// Two figures under their names (`add1_gbs`, `add6_gbs`): entries of the variant's object.
struct Figures<'a>([(&'a str, Option<f64>); 2]);

impl Serialize for Figures<'_> {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.collect_map(self.0.iter().map(|(name, x)| (name, x)))
    }
}

/// `bench paper`: both tables.
#[derive(Serialize)]
pub struct PaperJson<'a> {
    pub add: TableJson<'a>,
    pub mul: TableJson<'a>,
}

/// The JSON of rows (registers from each variant's details).
pub fn json<'a>(
    kind: &'a str,
    gpu: &'a str,
    runs: usize,
    rows: &[Row],
    variants: &'a [Variant],
    names: (&'a str, &'a str),
) -> TableJson<'a> {
    let regs = |d: &Option<Measured>| d.as_ref().map(|m| m.registers);
    TableJson {
        bench: kind,
        gpu,
        runs,
        rows: rows
            .iter()
            .map(|r| RowJson {
                num_bits: 1u64 << r.log,
                copy_gbs: fixed(r.copy_gbs, 1),
                variants: variants
                    .iter()
                    .zip(&r.figures)
                    .map(|(v, (a, b, da, db))| VariantJson {
                        variant: &v.name,
                        figures: Figures([(names.0, fixed(*a, 1)), (names.1, fixed(*b, 1))]),
                        regs: [regs(da), regs(db)],
                        hints: &v.hints,
                    })
                    .collect(),
            })
            .collect(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::json::pretty;
    use crate::json::tests::{gpu_reads_back, same_shape, AWKWARD_GPU};

    fn measured(registers: u32) -> Measured {
        Measured {
            ms: 1.0,
            registers,
            local_bytes: 0,
            q: 2,
            threads_per_instance: 32,
            shared_bytes: 0,
            algo: "-".into(),
            parts: 1,
        }
    }

    fn variants() -> Vec<Variant> {
        vec![
            Variant {
                name: "default".into(),
                hints: Hints::default(),
            },
            Variant {
                name: "q=4,minb=1".into(),
                hints: Hints {
                    q: Some(4),
                    min_blocks: Some(1),
                    ..Hints::default()
                },
            },
        ]
    }

    fn rows() -> Vec<Row> {
        vec![Row {
            log: 9,
            copy_gbs: 4145.06,
            figures: vec![
                (144427.84, f64::NAN, Some(measured(62)), None),
                (146543.0, 173216.94, Some(measured(70)), Some(measured(124))),
            ],
        }]
    }

    #[test]
    fn table_json_is_escaped_and_shaped_as_before() {
        let (vs, rows) = (variants(), rows());
        let names = ("mul1_gu32ops", "poly_gu32ops");
        let json = pretty(&json("mul", AWKWARD_GPU, 10, &rows, &vs, names));
        let v = gpu_reads_back(&json, "/gpu");
        let row = &v["rows"][0];
        assert_eq!(row["num_bits"], 512);
        assert_eq!(row["copy_gbs"], 4145.1);
        assert_eq!(row["variants"][0]["variant"], "default");
        assert_eq!(row["variants"][0]["mul1_gu32ops"], 144427.8);
        assert!(row["variants"][0]["poly_gu32ops"].is_null());
        assert_eq!(row["variants"][0]["regs"], serde_json::json!([62, null]));
        assert_eq!(row["variants"][1]["poly_gu32ops"], 173216.9);
        assert_eq!(
            row["variants"][1]["hints"],
            "q=4,block=-,width=-,minb=1,ntt=-,chunk=-,thread=-,group=-,divw=-,span=-,gntt=-,coords=-,park=-"
        );
        let hints: Hints = serde_json::from_value(row["variants"][1]["hints"].clone()).unwrap();
        assert_eq!(hints, vs[1].hints);
        same_shape(
            &v,
            include_str!("../results/mul-variants-h200-2026-11-22.json"),
            &[
                ("", &[]),
                ("/rows/0", &[]),
                ("/rows/0/variants/0", &["hints"]),
            ],
        );
    }

    #[test]
    fn paper_json_holds_both_tables_as_before() {
        let (vs, rows) = (variants(), rows());
        let json = pretty(&PaperJson {
            add: json("add", AWKWARD_GPU, 10, &rows, &vs, ("add1_gbs", "add6_gbs")),
            mul: json(
                "mul",
                AWKWARD_GPU,
                10,
                &rows,
                &vs,
                ("mul1_gu32ops", "poly_gu32ops"),
            ),
        });
        gpu_reads_back(&json, "/add/gpu");
        let v = gpu_reads_back(&json, "/mul/gpu");
        assert_eq!(v["add"]["rows"][0]["variants"][1]["add6_gbs"], 173216.9);
        same_shape(
            &v,
            include_str!("../results/paper-h100-2026-11-23-final.json"),
            &[
                ("", &[]),
                ("/add", &[]),
                ("/add/rows/0/variants/0", &["hints"]),
                ("/mul/rows/0/variants/0", &["hints"]),
            ],
        );
    }
}
