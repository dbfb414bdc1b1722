//! The "Done when" bars: a measured value against a limit, passed, failed, or not
//! measured (and why).

use serde::Serialize;
use std::fmt::Write as _;

#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Bar {
    pub what: String,
    pub value: Option<f64>,
    /// `<=` or `>=`.
    pub cmp: &'static str,
    pub limit: f64,
    pub unit: &'static str,
    /// None: not measured (see `note`).
    pub pass: Option<bool>,
    pub note: Option<String>,
}

impl Bar {
    fn new(
        what: String,
        value: Option<f64>,
        cmp: &'static str,
        limit: f64,
        unit: &'static str,
    ) -> Bar {
        let value = value.filter(|v| v.is_finite());
        let pass = value.map(|v| if cmp == "<=" { v <= limit } else { v >= limit });
        Bar {
            note: value.is_none().then(|| "not measured".to_string()),
            what,
            value,
            cmp,
            limit,
            unit,
            pass,
        }
    }

    /// value <= limit.
    pub fn at_most(
        what: impl Into<String>,
        value: Option<f64>,
        limit: f64,
        unit: &'static str,
    ) -> Bar {
        Bar::new(what.into(), value, "<=", limit, unit)
    }

    /// value >= limit.
    pub fn at_least(
        what: impl Into<String>,
        value: Option<f64>,
        limit: f64,
        unit: &'static str,
    ) -> Bar {
        Bar::new(what.into(), value, ">=", limit, unit)
    }

    /// Why there is no value (replaces "not measured").
    pub fn because(mut self, why: impl Into<String>) -> Bar {
        if self.value.is_none() {
            self.note = Some(why.into());
        }
        self
    }

    pub fn line(&self) -> String {
        let status = match self.pass {
            Some(true) => "PASS",
            Some(false) => "FAIL",
            None => "n/a ",
        };
        match self.value {
            Some(v) => format!(
                "{status}  {}: {}{} {} {}{}",
                self.what,
                number(v),
                self.unit,
                self.cmp,
                number(self.limit),
                self.unit
            ),
            None => format!(
                "{status}  {}: {} (bar {} {}{})",
                self.what,
                self.note.as_deref().unwrap_or("not measured"),
                self.cmp,
                number(self.limit),
                self.unit
            ),
        }
    }
}

/// Three significant digits or so: 0.0123, 1.23, 12.3, 1234.
pub fn number(x: f64) -> String {
    let a = x.abs();
    if !x.is_finite() {
        "-".into()
    } else if a == 0.0 {
        "0".into()
    } else if a < 0.01 {
        format!("{x:.4}")
    } else if a < 1.0 {
        format!("{x:.3}")
    } else if a < 10.0 {
        format!("{x:.2}")
    } else if a < 100.0 {
        format!("{x:.1}")
    } else {
        format!("{x:.0}")
    }
}

/// The bars as a block of lines under a title, with a count.
pub fn block(title: &str, bars: &[Bar]) -> String {
    let mut s = String::new();
    let count = |p: Option<bool>| bars.iter().filter(|b| b.pass == p).count();
    let _ = writeln!(
        s,
        "{title}: {} passed, {} failed, {} not measured",
        count(Some(true)),
        count(Some(false)),
        count(None)
    );
    for b in bars {
        let _ = writeln!(s, "  {}", b.line());
    }
    s
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bars_compare_and_explain() {
        let b = Bar::at_most("x / floor", Some(1.2), 1.5, "x");
        assert_eq!(b.pass, Some(true));
        assert_eq!(b.line(), "PASS  x / floor: 1.20x <= 1.50x");
        assert_eq!(Bar::at_most("t", Some(1.6), 1.5, "x").pass, Some(false));
        assert_eq!(Bar::at_least("s", Some(3.0), 3.0, "x").pass, Some(true));
        assert_eq!(Bar::at_least("s", Some(2.9), 3.0, "x").pass, Some(false));
        let n = Bar::at_least("vs GMP", None, 3.0, "x").because("GMP not built");
        assert_eq!(n.pass, None);
        assert_eq!(n.line(), "n/a   vs GMP: GMP not built (bar >= 3.00x)");
        // A NaN is no measurement.
        assert_eq!(Bar::at_most("nan", Some(f64::NAN), 1.0, "").pass, None);
        let text = block("Done when", &[b, n]);
        assert!(text.starts_with("Done when: 1 passed, 0 failed, 1 not measured\n"));
    }

    #[test]
    fn numbers_keep_about_three_digits() {
        assert_eq!(number(0.0), "0");
        assert_eq!(number(0.001234), "0.0012");
        assert_eq!(number(0.1234), "0.123");
        assert_eq!(number(1.234), "1.23");
        assert_eq!(number(12.34), "12.3");
        assert_eq!(number(1234.4), "1234");
        assert_eq!(number(f64::NAN), "-");
    }
}
