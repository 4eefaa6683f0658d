//! Values given as text on the command line: expressions in the position
//! `x`, `y`, `z` and the time `t` (`1`, `sin(PI*x)*y`, `0.1*t`), for
//! boundary values, fluxes and loads.
//!
//! Parsing and evaluation are `exmex`'s (operators `+ - * / ^`, the usual
//! functions `sin`, `cos`, `tan`, `exp`, `ln`, `sqrt`, `abs`, …, the
//! constants `PI` (`π`) and `E`); this module fixes which variables an
//! expression may use and evaluates it at a point.

use exmex::{Express, FlatEx};
use serde::{Serialize, Serializer};

/// The variables an expression may name, in the order of [`Expression::at`].
pub const VARIABLES: [&str; 4] = ["x", "y", "z", "t"];

/// A scalar expression of `x`, `y`, `z` and `t`.
#[derive(Clone, Debug)]
pub struct Expression {
    /// The text as given.
    text: String,
    parsed: FlatEx<f64>,
    /// For each variable the expression names (exmex's order), its index
    /// in [`VARIABLES`].
    slots: Vec<usize>,
}

impl Expression {
    /// Parses `text`; an error names what is wrong: a syntax error, or a
    /// variable other than `x`, `y`, `z` and `t`.
    pub fn parse(text: &str) -> Result<Self, String> {
        let parsed = exmex::parse::<f64>(&plain_numbers(text)).map_err(|e| format!("`{text}` is not an expression: {e}"))?;
        let slots = parsed
            .var_names()
            .iter()
            .map(|v| VARIABLES.iter().position(|w| w == v).ok_or_else(|| format!("`{text}` names `{v}`: an expression may use x, y, z, t and the constants PI and E")))
            .collect::<Result<_, _>>()?;
        let me = Self { text: text.to_string(), parsed, slots };
        // evaluated once with as many values as it names, so that `at`
        // cannot fail later
        me.parsed.eval(&vec![0.0; me.slots.len()]).map_err(|e| format!("`{text}`: {e}"))?;
        Ok(me)
    }

    /// The constant `v`.
    pub fn constant(v: f64) -> Self {
        Self::parse(&format!("{v}")).expect("a number parses")
    }

    /// The value at position `x` and time `t`.
    pub fn at(&self, x: &[f64; 3], t: f64) -> f64 {
        let all = [x[0], x[1], x[2], t];
        let vars: Vec<f64> = self.slots.iter().map(|&s| all[s]).collect();
        self.parsed.eval(&vars).unwrap_or(f64::NAN)
    }

    /// Whether the value changes in time.
    pub fn depends_on_time(&self) -> bool {
        self.slots.contains(&3)
    }

    /// The value, when it names no variable.
    pub fn as_constant(&self) -> Option<f64> {
        self.slots.is_empty().then(|| self.at(&[0.0; 3], 0.0))
    }

    /// The text as given.
    pub fn text(&self) -> &str {
        &self.text
    }
}

impl std::fmt::Display for Expression {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.text)
    }
}

impl std::str::FromStr for Expression {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, String> {
        Self::parse(s)
    }
}

impl PartialEq for Expression {
    fn eq(&self, other: &Self) -> bool {
        self.text == other.text
    }
}

impl Serialize for Expression {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(&self.text)
    }
}

/// `text` with every number in scientific notation (`1.5e-3`), which
/// exmex does not read, written out in full (`0.0015`: Rust prints the
/// shortest decimal that reads back as the same f64).
fn plain_numbers(text: &str) -> String {
    static SCIENTIFIC: std::sync::LazyLock<regex::Regex> = std::sync::LazyLock::new(|| regex::Regex::new(r"(\d+\.?\d*|\.\d+)[eE][+-]?\d+").expect("a valid pattern"));
    let mut out = String::with_capacity(text.len());
    let mut last = 0;
    for m in SCIENTIFIC.find_iter(text) {
        // digits that end a name (`x1e2`) are the name's
        let in_name = text[..m.start()].chars().next_back().is_some_and(|c| c.is_alphanumeric() || c == '_');
        if let (false, Ok(v)) = (in_name, m.as_str().parse::<f64>()) {
            out.push_str(&text[last..m.start()]);
            out.push_str(&format!("{v}"));
            last = m.end();
        }
    }
    out.push_str(&text[last..]);
    out
}

/// One expression per component, from `a:b[:c]` (or one for all).
pub fn components(text: &str) -> Result<Vec<Expression>, String> {
    text.split(':').map(|p| Expression::parse(p.trim())).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn expressions_evaluate_at_points_and_times() {
        let e = Expression::parse("sin(PI*x)*y + 2*t - z^2").unwrap();
        let x = [0.5, 3.0, 2.0];
        assert!((e.at(&x, 0.25) - (3.0 + 0.5 - 4.0)).abs() < 1e-14);
        assert!(e.depends_on_time() && e.as_constant().is_none());
        // exmex orders the variables its own way: y alone, then t and x
        let f = Expression::parse("t - 10*x").unwrap();
        assert_eq!(f.at(&[1.0, 7.0, 7.0], 3.0), -7.0);
        assert!(!Expression::parse("y").unwrap().depends_on_time());
        assert_eq!(Expression::parse("-2.5").unwrap().as_constant(), Some(-2.5));
        assert_eq!(Expression::constant(0.1).as_constant(), Some(0.1));
        // scientific notation, not inside names
        for v in [1e-3, 2.5e17, -7.25e-300, 0.0] {
            assert_eq!(Expression::constant(v).as_constant(), Some(v));
        }
        assert_eq!(Expression::parse("1.5e-3*x + 2E2").unwrap().at(&[2.0, 0.0, 0.0], 0.0), 0.003 + 200.0);
        assert!(Expression::parse("x1e2").unwrap_err().contains("names `x1e2`"));
        let v = components("1:x:-t").unwrap();
        assert_eq!(v.iter().map(|e| e.at(&[2.0, 0.0, 0.0], 3.0)).collect::<Vec<_>>(), [1.0, 2.0, -3.0]);
    }

    #[test]
    fn bad_expressions_are_clear_errors() {
        assert!(Expression::parse("sin(PI*x").unwrap_err().contains("not an expression"));
        let e = Expression::parse("2*w").unwrap_err();
        assert!(e.contains("names `w`") && e.contains("x, y, z, t"), "{e}");
        assert!(Expression::parse("").is_err());
        assert!(components("1::2").is_err());
    }
}
