//! Axis ticks and their labels, chosen here rather than by plotters so that every picture
//! labels its axes the same way: round steps (1, 2, 5 x 10^k), every decade of a log axis
//! labelled (and 2 and 5 between decades when the axis spans few of them, so that the lowest
//! values are never below the first label), and numbers written plainly (`200`, `0.5`,
//! `12.5`; `15k`, `1.5M` from 10,000 up), never with a prefix below one: a `500m` would read as
//! minutes or metres, so a chart scales seconds to ms or µs and says so in its axis title.

use plotters::coord::ranged1d::{DefaultFormatting, KeyPointHint, Ranged};

/// Labelled ticks (with grid lines) and unlabelled minor grid lines of one axis.
#[derive(Debug, Clone, PartialEq)]
pub struct Ticks {
    pub major: Vec<f64>,
    pub minor: Vec<f64>,
}

/// At most this many labelled ticks on a linear axis (about 8 read well).
const LINEAR_TARGET: f64 = 8.0;

/// Round ticks over `[lo, hi]` on a linear axis.
pub fn linear(lo: f64, hi: f64) -> Ticks {
    linear_about(lo, hi, LINEAR_TARGET)
}

/// Round ticks over `[lo, hi]`, about `target` of them (a short strip takes 2 or 3).
pub fn linear_about(lo: f64, hi: f64, target: f64) -> Ticks {
    if hi <= lo || !lo.is_finite() || !hi.is_finite() {
        return Ticks {
            major: vec![lo],
            minor: Vec::new(),
        };
    }
    let step = nice_step((hi - lo) / target);
    Ticks {
        major: multiples(lo, hi, step),
        minor: multiples(lo, hi, step / 5.0),
    }
}

/// The smallest of 1, 2, 5 x 10^k at least `raw`.
fn nice_step(raw: f64) -> f64 {
    let mag = 10f64.powf(raw.log10().floor());
    [1.0, 2.0, 5.0, 10.0]
        .iter()
        .map(|m| m * mag)
        .find(|s| *s >= raw * (1.0 - 1e-9))
        .unwrap_or(10.0 * mag)
}

/// The multiples of `step` inside `[lo, hi]`, computed from integers so they stay round.
fn multiples(lo: f64, hi: f64, step: f64) -> Vec<f64> {
    let (first, last) = ((lo / step).ceil() as i64, (hi / step).floor() as i64);
    (first..=last).map(|k| k as f64 * step).collect()
}

/// Ticks over `[lo, hi]` (both positive) on a log axis: every decade; with at most three
/// decades in view also 2 and 5 times each, and with more, the 2 or 5 below the lowest decade
/// when the axis reaches far under it, so that no value lies below the first label.
pub fn log(lo: f64, hi: f64) -> Ticks {
    if !(lo > 0.0 && hi > lo) {
        return linear(lo, hi);
    }
    let (k0, k1) = (lo.log10().floor() as i32, hi.log10().ceil() as i32);
    let inside = |v: &f64| *v >= lo * (1.0 - 1e-12) && *v <= hi * (1.0 + 1e-12);
    let decades: Vec<f64> = (k0..=k1).map(|k| 10f64.powi(k)).filter(inside).collect();
    let fine = decades.len() <= 3;
    let mut major = Vec::new();
    let mut minor = Vec::new();
    for k in k0..=k1 {
        let d = 10f64.powi(k);
        for m in 1..10 {
            let v = m as f64 * d;
            if !inside(&v) {
                continue;
            }
            if m == 1 || (fine && (m == 2 || m == 5)) {
                major.push(v);
            } else {
                minor.push(v);
            }
        }
    }
    if let Some(&first) = major.first()
        && first / lo > 2.0
    {
        let below = minor
            .iter()
            .copied()
            .filter(|v| {
                *v < first && [2.0, 5.0].contains(&(v / 10f64.powf(v.log10().floor())).round())
            })
            .fold(None, |_, v| Some(v));
        if let Some(v) = below {
            minor.retain(|m| *m != v);
            major.insert(0, v);
        }
    }
    Ticks { major, minor }
}

/// Ticks at the values themselves (a study's few swept values: 1, 2, 4, 6 GPUs), when there
/// are at most 12 and no two are closer than 4 % of the axis, measured as drawn (`log`);
/// `None` otherwise.
pub fn at_values(values: &[f64], lo: f64, hi: f64, log: bool) -> Option<Ticks> {
    let mut v: Vec<f64> = values.iter().copied().filter(|x| x.is_finite()).collect();
    v.sort_by(f64::total_cmp);
    v.dedup();
    if v.is_empty() || v.len() > 12 {
        return None;
    }
    let at = |x: f64| {
        if log {
            (x.ln() - lo.ln()) / (hi.ln() - lo.ln())
        } else {
            (x - lo) / (hi - lo)
        }
    };
    if v.windows(2).any(|w| at(w[1]) - at(w[0]) < 0.04) {
        return None;
    }
    Some(Ticks {
        major: v,
        minor: Vec::new(),
    })
}

/// One axis as plotters draws it: linear or log over `[lo, hi]`, with these ticks.
#[derive(Debug, Clone)]
pub struct Axis {
    pub lo: f64,
    pub hi: f64,
    pub log: bool,
    pub ticks: Ticks,
}

impl Axis {
    /// An axis over `[lo, hi]` with round ticks, on a log scale when `log`.
    pub fn new(lo: f64, hi: f64, log: bool) -> Axis {
        let ticks = if log {
            self::log(lo, hi)
        } else {
            linear(lo, hi)
        };
        Axis { lo, hi, log, ticks }
    }

    /// Where `v` lies along the axis, from 0 at `lo` to 1 at `hi`.
    pub fn fraction(&self, v: f64) -> f64 {
        if self.log {
            (v.ln() - self.lo.ln()) / (self.hi.ln() - self.lo.ln())
        } else {
            (v - self.lo) / (self.hi - self.lo)
        }
    }
}

impl Ranged for Axis {
    type FormatOption = DefaultFormatting;
    type ValueType = f64;

    fn map(&self, value: &f64, limit: (i32, i32)) -> i32 {
        let f = self.fraction(*value);
        let span = (limit.1 - limit.0) as f64;
        if !f.is_finite() || self.hi <= self.lo {
            return if f > 0.0 { limit.1 } else { limit.0 };
        }
        limit.0 + (span * f + 1e-3).floor() as i32
    }

    fn key_points<H: KeyPointHint>(&self, hint: H) -> Vec<f64> {
        if hint.weight().allow_light_points() {
            self.ticks.minor.clone()
        } else {
            self.ticks.major.clone()
        }
    }

    fn range(&self) -> std::ops::Range<f64> {
        self.lo..self.hi
    }
}

/// A tick's label: plain decimals with at most four significant digits and no trailing
/// zeros (`200`, `0.25`, `12.5`); k, M, G, T from 10,000 up; an exponent below 0.001.
pub fn label(v: f64) -> String {
    if v == 0.0 || !v.is_finite() {
        return if v == 0.0 { "0".into() } else { format!("{v}") };
    }
    let a = v.abs();
    if a >= 1e4 {
        let (scale, prefix) = si_prefix(a);
        return format!("{}{prefix}", plain(v / scale));
    }
    if a < 1e-3 {
        let text = format!("{v:.3e}");
        let (mantissa, exp) = text.split_once('e').unwrap_or((&text, "0"));
        return format!("{}e{exp}", super::trim_zeros(mantissa));
    }
    plain(v)
}

/// The largest decimal prefix (k, M, G, T) at most `top`: (its factor, its letter); (1, "")
/// below 1000.
pub fn si_prefix(top: f64) -> (f64, &'static str) {
    [(1e12, "T"), (1e9, "G"), (1e6, "M"), (1e3, "k")]
        .into_iter()
        .find(|(f, _)| top >= *f)
        .unwrap_or((1.0, ""))
}

/// Four significant digits, trailing zeros trimmed.
fn plain(v: f64) -> String {
    let digits = v.abs().log10().floor() as i32;
    let decimals = (3 - digits).clamp(0, 6) as usize;
    super::trim_zeros(&format!("{v:.decimals$}")).to_string()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn labels_are_plain_and_never_use_prefixes_below_one() {
        assert_eq!(label(200.0), "200");
        assert_eq!(label(0.30000000000000004), "0.3");
        assert_eq!(label(0.5), "0.5");
        assert_eq!(label(12.5), "12.5");
        assert_eq!(label(1000.0), "1000");
        assert_eq!(label(9_999.0), "9999");
        assert_eq!(label(10_000.0), "10k");
        assert_eq!(label(1.5e6), "1.5M");
        assert_eq!(label(2.5e-4), "2.5e-4");
        assert_eq!(label(-40.0), "-40");
        assert_eq!(label(0.0), "0");
    }

    #[test]
    fn linear_ticks_are_round_steps() {
        assert_eq!(linear_about(0.0, 100.0, 2.5).major, [0.0, 50.0, 100.0]);
        assert_eq!(
            linear(0.0, 38.59).major,
            [0.0, 5.0, 10.0, 15.0, 20.0, 25.0, 30.0, 35.0]
        );
        assert_eq!(linear(0.0, 1.3).major.len(), 7, "0, 0.2, ... 1.2");
        let t = linear(-40.0, 1040.0);
        assert_eq!(t.major[0], 0.0);
        assert_eq!(*t.major.last().unwrap(), 1000.0);
    }

    #[test]
    fn log_ticks_label_below_the_lowest_decade_when_few_decades_show() {
        // p2p latency from 4.3 to 1,100 us: 5 is labelled, under the first decade (10).
        let t = log(4.3, 1100.0);
        assert_eq!(
            t.major,
            [5.0, 10.0, 20.0, 50.0, 100.0, 200.0, 500.0, 1000.0]
        );
        // Many decades: decades only.
        let t = log(0.8, 5e6);
        assert_eq!(t.major, [1.0, 10.0, 100.0, 1e3, 1e4, 1e5, 1e6]);
        assert!(t.minor.contains(&2e3));
        // Far under the lowest decade: the 5 below it is labelled too.
        assert_eq!(log(0.4, 5e6).major[..2], [0.5, 1.0]);
    }

    #[test]
    fn a_few_swept_values_are_their_own_ticks() {
        let t = at_values(&[1.0, 2.0, 4.0, 6.0, 2.0], 0.0, 6.3, false).unwrap();
        assert_eq!(t.major, [1.0, 2.0, 4.0, 6.0]);
        // 0 and 10 ns on a 1 us axis are too close to label both.
        assert_eq!(
            at_values(&[0.0, 10.0, 100.0, 300.0, 1000.0], 0.0, 1040.0, false),
            None
        );
    }
}
