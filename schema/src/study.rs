//! The study schema: a grid of runs around one base scenario (see `hetsim study`).
//!
//! A study names a base scenario, parameters to sweep (each a `--set` path with a list or a
//! range of values), variants (each a set of switches turned off, and optional extra
//! overrides: the ablations), seeds to repeat, and the summary metrics to collect. The runs are
//! the product parameters x variants x seeds, the first parameter varying slowest.

use serde::{Deserialize, Serialize};

use crate::units::parse_any_quantity;

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Study {
    pub name: String,
    /// The base scenario file, relative to the study file.
    pub base: String,
    #[serde(default)]
    pub params: Vec<Param>,
    #[serde(default = "full_model")]
    pub variants: Vec<Variant>,
    /// Seeds to repeat each run with (empty: the base scenario's seed).
    #[serde(default)]
    pub seeds: Vec<u64>,
    /// Dotted paths into each run's `summary.json`, e.g. `sim_time_s`, `flows.mean_duration_s`.
    pub metrics: Vec<String>,
    /// The parameter on the plots' x axis (default: the first).
    #[serde(default)]
    pub x: Option<String>,
}

fn full_model() -> Vec<Variant> {
    vec![Variant {
        name: "full".into(),
        disable: Vec::new(),
        set: Vec::new(),
    }]
}

/// One swept field.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Param {
    /// A `--set` path, e.g. `workload.Flows[0].size` or `platform.network.taper`; the path
    /// `base` instead picks the base scenario file (relative to the study file).
    pub path: String,
    /// Column name in `results.csv` and axis label (default: the path).
    #[serde(default)]
    pub name: Option<String>,
    pub values: Values,
    /// Other fields that move in lockstep: their i-th value goes with this one's i-th (e.g.
    /// the NIC bandwidth scaled with the GPUs per node).
    #[serde(default)]
    pub linked: Vec<Linked>,
}

/// A field set together with a parameter, one value per value of the parameter.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Linked {
    pub path: String,
    pub values: Vec<Value>,
}

/// The `path` of a parameter that picks the base scenario.
pub const BASE_PATH: &str = "base";

impl Param {
    pub fn label(&self) -> &str {
        self.name.as_deref().unwrap_or(&self.path)
    }
}

/// The values a parameter takes.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub enum Values {
    /// Listed values: numbers, or strings such as `"64KiB"` (passed on as `--set` would).
    List(Vec<Value>),
    /// `from`, `from * factor`, ... up to `to` inclusive (e.g. 8 B to 1 GiB by 2).
    Geometric { from: Value, to: Value, factor: f64 },
    /// `from`, `from + step`, ... up to `to` inclusive.
    Linear { from: Value, to: Value, step: f64 },
}

/// A parameter value as written: a number or a string.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(untagged, expecting = "a number or a string")]
pub enum Value {
    Number(f64),
    Text(String),
}

impl Value {
    /// The value in SI base units, if it is a quantity.
    pub fn number(&self) -> Option<f64> {
        match self {
            Value::Number(v) => Some(*v),
            Value::Text(t) => parse_any_quantity(t),
        }
    }

    /// The text given to `--set`.
    pub fn text(&self) -> String {
        match self {
            Value::Number(v) => format!("{v}"),
            Value::Text(t) => t.clone(),
        }
    }
}

/// Ranges hold at most this many values (a typo such as factor 1.0001 must not hang).
pub const MAX_VALUES: usize = 10_000;

impl Values {
    /// The values in order; errors say what is wrong with the range.
    pub fn expand(&self) -> Result<Vec<Value>, String> {
        let bounds = |from: &Value, to: &Value| -> Result<(f64, f64), String> {
            let a = from
                .number()
                .ok_or_else(|| format!("from: `{}` is not a quantity", from.text()))?;
            let b = to
                .number()
                .ok_or_else(|| format!("to: `{}` is not a quantity", to.text()))?;
            Ok((a, b))
        };
        let values: Vec<f64> = match self {
            Values::List(v) if v.is_empty() => return Err("an empty list of values".into()),
            Values::List(v) => return Ok(v.clone()),
            Values::Geometric { from, to, factor } => {
                let (a, b) = bounds(from, to)?;
                if !(a > 0.0 && b >= a && *factor > 1.0) {
                    return Err(format!(
                        "expected 0 < from <= to and factor > 1, got from {a}, to {b}, factor {factor}"
                    ));
                }
                let mut v = vec![a];
                // Relative slack so that 8 * 2^27 reaches 1 GiB despite rounding.
                while let Some(&last) = v.last() {
                    let next = last * factor;
                    if next > b * (1.0 + 1e-9) || v.len() > MAX_VALUES {
                        break;
                    }
                    v.push(next);
                }
                v
            }
            Values::Linear { from, to, step } => {
                let (a, b) = bounds(from, to)?;
                if !(b >= a && *step > 0.0) {
                    return Err(format!(
                        "expected from <= to and step > 0, got from {a}, to {b}, step {step}"
                    ));
                }
                let n = ((b - a) / step + 1e-9).floor() as usize + 1;
                (0..n.min(MAX_VALUES + 1))
                    .map(|i| a + i as f64 * step)
                    .collect()
            }
        };
        if values.len() > MAX_VALUES {
            return Err(format!("more than {MAX_VALUES} values"));
        }
        Ok(values.into_iter().map(Value::Number).collect())
    }
}

/// A model variant: switches turned off (an ablation) and extra overrides.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Variant {
    pub name: String,
    #[serde(default)]
    pub disable: Vec<String>,
    /// Extra `--set` overrides, `PATH=VALUE`.
    #[serde(default)]
    pub set: Vec<String>,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn geometric_sizes_reach_the_upper_bound() {
        let v = Values::Geometric {
            from: Value::Text("8B".into()),
            to: Value::Text("1GiB".into()),
            factor: 2.0,
        }
        .expand()
        .unwrap();
        // 8 = 2^3 to 2^30: 28 values.
        assert_eq!(v.len(), 28);
        assert_eq!(v.last().unwrap().number(), Some(1073741824.0));
    }

    #[test]
    fn linear_ranges_include_both_ends() {
        let v = Values::Linear {
            from: Value::Number(1.0),
            to: Value::Number(6.0),
            step: 1.0,
        }
        .expand()
        .unwrap();
        let n: Vec<f64> = v.iter().map(|x| x.number().unwrap()).collect();
        assert_eq!(n, vec![1.0, 2.0, 3.0, 4.0, 5.0, 6.0]);
        assert_eq!(v[0].text(), "1");
    }

    #[test]
    fn bad_ranges_say_why() {
        let e = Values::Geometric {
            from: Value::Number(0.0),
            to: Value::Number(8.0),
            factor: 2.0,
        }
        .expand()
        .unwrap_err();
        assert!(e.contains("0 < from"), "{e}");
        assert!(Values::List(vec![]).expand().is_err());
    }
}
