//! PNG plots of the paper tables: throughput against NumBits, one line per column, anchors dashed.

use crate::anchors;
use crate::tables::Row;
use plotters::prelude::*;
use std::path::{Path, PathBuf};

/// A TrueType font for the labels: `$BIGFUSE_FONT`, else DejaVu Sans found under the usual
/// places (system fonts, matplotlib's bundled fonts).
fn find_font() -> Option<PathBuf> {
    if let Some(p) = std::env::var_os("BIGFUSE_FONT") {
        return Some(PathBuf::from(p));
    }
    fn search(dir: &Path, depth: u32) -> Option<PathBuf> {
        let entries = std::fs::read_dir(dir).ok()?;
        let mut subdirs = Vec::new();
        for e in entries.flatten() {
            let p = e.path();
            if p.file_name().is_some_and(|n| n == "DejaVuSans.ttf") {
                return Some(p);
            }
            if depth > 0 && p.is_dir() && !p.is_symlink() {
                subdirs.push(p);
            }
        }
        subdirs.into_iter().find_map(|d| search(&d, depth - 1))
    }
    [
        "/usr/share/fonts",
        "/usr/local/share/fonts",
        "/opt",
        "/usr/lib",
        "/usr/local/lib",
    ]
    .iter()
    .find_map(|d| search(Path::new(d), 10))
}

fn register_font() -> Result<(), String> {
    let path = find_font().ok_or(
        "no DejaVuSans.ttf found for the plot labels: set BIGFUSE_FONT to a TrueType font",
    )?;
    let bytes = std::fs::read(&path).map_err(|e| format!("reading {}: {e}", path.display()))?;
    let bytes: &'static [u8] = Box::leak(bytes.into_boxed_slice());
    plotters::style::register_font("sans-serif", FontStyle::Normal, bytes)
        .map_err(|_| format!("{} is not a usable font", path.display()))
}

type Series = (String, Vec<(f64, f64)>, RGBColor, bool);

fn draw(
    path: &Path,
    title: &str,
    y_label: &str,
    log_y: bool,
    legend: SeriesLabelPosition,
    series: &[Series],
) -> Result<(), String> {
    let err = |e: &dyn std::fmt::Display| format!("drawing {}: {e}", path.display());
    let root = BitMapBackend::new(path, (1100, 700)).into_drawing_area();
    root.fill(&WHITE).map_err(|e| err(&e))?;
    let pts = series.iter().flat_map(|s| s.1.iter());
    let (xmin, xmax) = pts
        .clone()
        .fold((f64::MAX, f64::MIN), |(a, b), p| (a.min(p.0), b.max(p.0)));
    let (ymin, ymax) = pts.fold((f64::MAX, f64::MIN), |(a, b), p| (a.min(p.1), b.max(p.1)));
    let mut chart_builder = ChartBuilder::on(&root);
    chart_builder
        .caption(title, ("sans-serif", 26))
        .margin(20)
        .x_label_area_size(50)
        .y_label_area_size(90);
    if log_y {
        let chart = chart_builder
            .build_cartesian_2d(xmin - 0.3..xmax + 0.3, (ymin * 0.7..ymax * 1.4).log_scale())
            .map_err(|e| err(&e))?;
        lines(chart, y_label, series, legend).map_err(|e| err(&e))?;
    } else {
        let chart = chart_builder
            .build_cartesian_2d(xmin - 0.3..xmax + 0.3, 0.0..ymax * 1.15)
            .map_err(|e| err(&e))?;
        lines(chart, y_label, series, legend).map_err(|e| err(&e))?;
    }
    root.present().map_err(|e| err(&e))
}

/// The mesh, one line (with points) per series, and the legend, on a linear or logarithmic chart.
fn lines<'a, DB, Y>(
    mut chart: ChartContext<'a, DB, Cartesian2d<plotters::coord::types::RangedCoordf64, Y>>,
    y_label: &str,
    series: &[Series],
    legend: SeriesLabelPosition,
) -> Result<(), String>
where
    DB: DrawingBackend + 'a,
    Y: Ranged<ValueType = f64> + plotters::coord::ranged1d::ValueFormatter<f64>,
{
    let e = |x: &dyn std::fmt::Display| x.to_string();
    chart
        .configure_mesh()
        .x_desc("log2 NumBits")
        .y_desc(y_label)
        .draw()
        .map_err(|x| e(&x))?;
    for (name, pts, color, dashed) in series {
        let style = ShapeStyle::from(color).stroke_width(if *dashed { 1 } else { 3 });
        chart
            .draw_series(LineSeries::new(pts.iter().copied(), style))
            .map_err(|x| e(&x))?
            .label(name.as_str())
            .legend(move |(x, y)| PathElement::new(vec![(x, y), (x + 20, y)], style));
        chart
            .draw_series(pts.iter().map(|p| Circle::new(*p, 3, style.filled())))
            .map_err(|x| e(&x))?;
    }
    chart
        .configure_series_labels()
        .background_style(WHITE.mix(0.8))
        .border_style(BLACK)
        .position(legend)
        .draw()
        .map_err(|x| e(&x))
}

fn ours(rows: &[Row], pick: impl Fn(&Row) -> f64) -> Vec<(f64, f64)> {
    rows.iter()
        .map(|r| (r.log as f64, pick(r)))
        .filter(|p| p.1.is_finite())
        .collect()
}

fn anchor(points: impl Iterator<Item = (u32, f64)>, lo: u32, hi: u32) -> Vec<(f64, f64)> {
    points
        .filter(|(l, v)| *l >= lo && *l <= hi && v.is_finite())
        .map(|(l, v)| (l as f64, v))
        .collect()
}

/// Writes `add.png` and `mul.png` into `dir` (either table may be empty).
pub fn paper(dir: &Path, add: &[Row], mul: &[Row], gpu: &str) -> Result<Vec<PathBuf>, String> {
    register_font()?;
    std::fs::create_dir_all(dir).map_err(|e| format!("creating {}: {e}", dir.display()))?;
    let mut written = Vec::new();
    if !add.is_empty() {
        let (lo, hi) = (add[0].log, add[add.len() - 1].log);
        let series: Vec<Series> = vec![
            (
                "bigfuse 1-Add".into(),
                ours(add, |r| r.figures[0].0),
                RED,
                false,
            ),
            (
                "bigfuse 6-Add".into(),
                ours(add, |r| r.figures[0].1),
                BLUE,
                false,
            ),
            (
                "copy (same run)".into(),
                ours(add, |r| r.copy_gbs),
                BLACK,
                true,
            ),
            (
                "CGBN 1-Add".into(),
                anchor(anchors::ADD.iter().map(|r| (r.0, r.1)), lo, hi),
                MAGENTA,
                true,
            ),
            (
                "CGBN 6-Add".into(),
                anchor(anchors::ADD.iter().map(|r| (r.0, r.2)), lo, hi),
                CYAN,
                true,
            ),
            (
                "paper CUDA 1-Add".into(),
                anchor(anchors::ADD.iter().map(|r| (r.0, r.3)), lo, hi),
                RGBColor(200, 120, 0),
                true,
            ),
            (
                "paper CUDA 6-Add".into(),
                anchor(anchors::ADD.iter().map(|r| (r.0, r.4)), lo, hi),
                GREEN,
                true,
            ),
        ];
        let p = dir.join("add.png");
        draw(
            &p,
            &format!("Addition on {gpu}"),
            "GB/s",
            false,
            SeriesLabelPosition::LowerLeft,
            &series,
        )?;
        written.push(p);
    }
    if !mul.is_empty() {
        let (lo, hi) = (mul[0].log, mul[mul.len() - 1].log);
        let series: Vec<Series> = vec![
            (
                "bigfuse 1-Mul".into(),
                ours(mul, |r| r.figures[0].0),
                RED,
                false,
            ),
            (
                "bigfuse Poly".into(),
                ours(mul, |r| r.figures[0].1),
                BLUE,
                false,
            ),
            (
                "CGBN 1-Mul".into(),
                anchor(anchors::MUL.iter().map(|r| (r.0, r.1)), lo, hi),
                MAGENTA,
                true,
            ),
            (
                "CGBN Poly".into(),
                anchor(anchors::MUL.iter().map(|r| (r.0, r.2)), lo, hi),
                CYAN,
                true,
            ),
            (
                "paper classical 1-Mul".into(),
                anchor(anchors::MUL.iter().map(|r| (r.0, r.3)), lo, hi),
                RGBColor(200, 120, 0),
                true,
            ),
            (
                "paper FFT 1-Mul".into(),
                anchor(anchors::MUL.iter().map(|r| (r.0, r.5)), lo, hi),
                GREEN,
                true,
            ),
        ];
        let p = dir.join("mul.png");
        draw(
            &p,
            &format!("Multiplication on {gpu}"),
            "Gu32ops/s",
            true,
            SeriesLabelPosition::UpperRight,
            &series,
        )?;
        written.push(p);
    }
    Ok(written)
}

/// `e2e-<op>.png` for each operation: milliseconds per call against NumBits over the sweep
/// (NumBits x n constant), one line per figure of `bench e2e`; figures with no value are left out.
pub fn e2e(
    dir: &Path,
    report: &crate::e2e_report::Report,
    ops: &[crate::ops::Op],
) -> Result<Vec<PathBuf>, String> {
    use crate::e2e_report::Row;
    register_font()?;
    std::fs::create_dir_all(dir).map_err(|e| format!("creating {}: {e}", dir.display()))?;
    let mut written = Vec::new();
    for op in ops {
        let rows: Vec<&Row> = report
            .rows
            .iter()
            .filter(|r| r.op == op.name() && r.sweep)
            .collect();
        let points = |pick: fn(&Row) -> Option<f64>| -> Vec<(f64, f64)> {
            rows.iter()
                .filter_map(|r| {
                    pick(r)
                        .filter(|v| v.is_finite() && *v > 0.0)
                        .map(|v| (r.bits.trailing_zeros() as f64, v))
                })
                .collect()
        };
        let series: Vec<Series> = [
            ("(a) run, BigUint", points(|r| r.a_ms), RED, false),
            ("(b) run_into, limbs", points(|r| r.b_ms), BLUE, false),
            (
                "(c) launch + wait, batches",
                points(|r| r.c_ms),
                GREEN,
                false,
            ),
            (
                "(d) kernel alone",
                points(|r| r.d_ms),
                RGBColor(200, 120, 0),
                false,
            ),
            ("(e) floor", points(|r| r.floor_ms), BLACK, true),
            (
                "(f) GMP, all host cores",
                points(|r| r.gmp_ms),
                MAGENTA,
                true,
            ),
        ]
        .into_iter()
        .filter(|s| !s.1.is_empty())
        .map(|(name, pts, color, dashed)| (name.to_string(), pts, color, dashed))
        .collect();
        if series.is_empty() {
            continue;
        }
        let p = dir.join(format!("e2e-{}.png", op.name()));
        draw(
            &p,
            &format!(
                "{}: ms per call, NumBits x n = 2^{}, {}",
                op.name(),
                report.total_log,
                report.gpu
            ),
            "ms",
            true,
            // Times grow with NumBits for products and stay flat for additions: the legend goes
            // where the lines are not.
            SeriesLabelPosition::LowerRight,
            &series,
        )?;
        written.push(p);
    }
    Ok(written)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn plots_are_png_files() {
        if find_font().is_none() {
            eprintln!("no DejaVuSans.ttf on this machine: the plot test has nothing to draw with");
            return;
        }
        let rows = |base: f64| -> Vec<Row> {
            (9..=12)
                .map(|log| Row {
                    log,
                    copy_gbs: 4100.0,
                    figures: vec![(base * log as f64, base * 0.9 * log as f64, None, None)],
                })
                .collect()
        };
        let dir = std::env::var_os("BIGFUSE_PLOT_TEST_DIR")
            .map(PathBuf::from)
            .unwrap_or_else(|| {
                std::env::temp_dir().join(format!("bigfuse-plot-test-{}", std::process::id()))
            });
        let files = paper(&dir, &rows(300.0), &rows(10000.0), "test GPU").unwrap();
        assert_eq!(files.len(), 2);
        for f in files {
            let bytes = std::fs::read(&f).unwrap();
            assert!(
                bytes.len() > 1000 && bytes.starts_with(b"\x89PNG"),
                "{}",
                f.display()
            );
        }
        if std::env::var_os("BIGFUSE_PLOT_TEST_DIR").is_none() {
            let _ = std::fs::remove_dir_all(dir);
        }
    }

    #[test]
    fn e2e_plots_are_png_files() {
        use crate::e2e_report::{Report, Row};
        use crate::ops::ALL;
        if find_font().is_none() {
            eprintln!("no DejaVuSans.ttf on this machine: the plot test has nothing to draw with");
            return;
        }
        let mut rows = Vec::new();
        for op in ALL {
            for log in 9..=12u32 {
                let mut r = Row::new(op, 1 << log, 1 << (28 - log), true);
                let x = log as f64;
                (r.a_ms, r.b_ms, r.c_ms, r.d_ms) =
                    (Some(9.0 * x), Some(4.0 * x), Some(x), Some(0.9 * x));
                (r.h2d_gbs, r.d2h_gbs) = (Some(50.0), Some(50.0));
                r.finish(op);
                rows.push(r);
            }
        }
        let report = Report {
            bench: "e2e",
            gpu: "test GPU".into(),
            host_threads: 2,
            runs: 1,
            total_log: 28,
            input_sets: 2,
            pcie_copy_bytes: 1 << 28,
            gmp: "not built".into(),
            rows,
            chains: Vec::new(),
            bars: Vec::new(),
        };
        let dir = std::env::var_os("BIGFUSE_PLOT_TEST_DIR")
            .map(PathBuf::from)
            .unwrap_or_else(|| {
                std::env::temp_dir().join(format!("bigfuse-e2e-plot-test-{}", std::process::id()))
            });
        let files = e2e(&dir, &report, &ALL).unwrap();
        assert_eq!(files.len(), 3);
        assert!(files[2].ends_with("e2e-poly.png"));
        for f in files {
            let bytes = std::fs::read(&f).unwrap();
            assert!(
                bytes.len() > 1000 && bytes.starts_with(b"\x89PNG"),
                "{}",
                f.display()
            );
        }
        if std::env::var_os("BIGFUSE_PLOT_TEST_DIR").is_none() {
            let _ = std::fs::remove_dir_all(dir);
        }
    }
}
