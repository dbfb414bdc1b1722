//! Every JSON the bench writes goes through serde: strings (GPU names, errors) escaped, missing
//! figures `null`, hints in their serde form (their text form as a string).

use serde::Serialize;

/// `value` as indented JSON with a final newline.
pub fn pretty<T: Serialize>(value: &T) -> String {
    // Only maps with non-string keys or failing `Serialize` impls fail, and the bench has neither;
    // should one appear, the file says so (escaped too) instead of the figures.
    serde_json::to_string_pretty(value)
        .unwrap_or_else(|e| serde_json::json!({ "error": e.to_string() }).to_string())
        + "\n"
}

/// `x` rounded to `digits` decimals as the bench's tables print it; `None` (null) for a missing
/// figure (NaN, infinite).
pub fn fixed(x: f64, digits: i32) -> Option<f64> {
    let scale = 10f64.powi(digits);
    x.is_finite().then(|| (x * scale).round() / scale)
}

/// The decimals that show `x` with `n` significant digits (at least none).
pub fn decimals(x: f64, n: i32) -> i32 {
    if x == 0.0 || !x.is_finite() {
        return 0;
    }
    (n - 1 - x.abs().log10().floor() as i32).max(0)
}

/// `x` rounded to `n` significant digits: rates that span orders of magnitude (ops per second of
/// divisions from 256 to 65536 bits) keep their figures.
pub fn significant(x: f64, n: i32) -> Option<f64> {
    fixed(x, decimals(x, n))
}

#[cfg(test)]
pub mod tests {
    use super::*;
    use serde_json::Value;
    use std::collections::BTreeSet;

    #[test]
    fn rates_keep_their_significant_digits() {
        assert_eq!(significant(0.000_331_234, 3), Some(0.000_331));
        assert_eq!(significant(1.2101, 3), Some(1.21));
        assert_eq!(significant(0.0, 3), Some(0.0));
        assert_eq!(decimals(123.4, 3), 0);
        assert_eq!(decimals(0.0451, 3), 4);
    }

    /// A GPU name that needs every kind of escaping.
    pub const AWKWARD_GPU: &str = "NVIDIA \"H100\" \\ 80GB\nHBM3\t\u{1}é";

    /// Parses `json` and checks that its `gpu` at `pointer` (a JSON pointer) reads back as
    /// [`AWKWARD_GPU`].
    pub fn gpu_reads_back(json: &str, pointer: &str) -> Value {
        let v: Value = serde_json::from_str(json).unwrap_or_else(|e| panic!("{e}: {json}"));
        assert_eq!(
            v.pointer(pointer).and_then(|g| g.as_str()),
            Some(AWKWARD_GPU),
            "{json}"
        );
        v
    }

    /// Checks, for each (JSON pointer, keys added since), that the object there in `new` has the
    /// keys of the one there in `old` (a file an earlier build wrote, from bench/results) and the
    /// added ones: old and new files read alike.
    pub fn same_shape(new: &Value, old: &str, objects: &[(&str, &[&str])]) {
        let old: Value = serde_json::from_str(old).unwrap();
        for (pointer, added) in objects {
            let keys = |v: &Value| -> BTreeSet<String> {
                v.pointer(pointer)
                    .and_then(Value::as_object)
                    .unwrap_or_else(|| panic!("no object at {pointer}: {v}"))
                    .keys()
                    .cloned()
                    .collect()
            };
            let mut want = keys(&old);
            want.extend(added.iter().map(|k| k.to_string()));
            assert_eq!(keys(new), want, "{pointer}");
        }
    }

    #[test]
    fn figures_keep_the_tables_decimals() {
        assert_eq!(fixed(4188.0123, 1), Some(4188.0));
        assert_eq!(fixed(1.00296, 4), Some(1.003));
        assert_eq!(fixed(223.3249, 2), Some(223.32));
        assert_eq!(fixed(f64::NAN, 1), None);
        assert_eq!(fixed(f64::INFINITY, 1), None);
        let json = serde_json::to_string(&[fixed(4145.06, 1), fixed(f64::NAN, 1)]).unwrap();
        assert_eq!(json, "[4145.1,null]");
    }

    #[test]
    fn a_failing_value_still_gives_valid_json() {
        // A map with non-string keys cannot be JSON.
        let bad: std::collections::BTreeMap<(u8, u8), u8> = [((1, 2), 3)].into();
        let v: Value = serde_json::from_str(&pretty(&bad)).unwrap();
        assert!(
            v["error"]
                .as_str()
                .unwrap()
                .contains("key must be a string"),
            "{v}"
        );
        let json = pretty(&serde_json::json!({ "gpu": AWKWARD_GPU }));
        assert!(json.ends_with("}\n"), "{json}");
        gpu_reads_back(&json, "/gpu");
    }
}
