//! Quantities with units, as people write them in scenario files.
//!
//! Each quantity deserialises from a bare number (SI base unit: bytes, seconds, bytes per second)
//! or from a string with a unit (`"12.5GB/s"`, `"100Gb/s"`, `"2us"`, `"16GiB"`, `"0.07ns/B"`).
//! Decimal prefixes are powers of 1000, binary ones (`Ki`, `Mi`, `Gi`, `Ti`) powers of 1024;
//! a lower-case `b` means bits. A size may also end in a bare `K`, `M`, `G` or `T`, as OSU and
//! nccl-tests write sizes (`64K`, `16M`): those are binary (`64K` = 64 KiB), while `64KB` is
//! decimal. The same rules read sizes everywhere: scenarios, `p2p -b/-e`, `nccl-tests -b/-e`. Each serialises back to the bare SI number, so a scenario
//! survives a round trip through any serde format.

use serde::{Deserialize, Deserializer, Serialize, Serializer, de};
use std::fmt;

use crate::time::SimTime;

/// Why a quantity string could not be read.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[error("`{text}`: {why}")]
pub struct UnitError {
    pub text: String,
    pub why: String,
}

fn unit_error(text: &str, why: impl Into<String>) -> UnitError {
    UnitError {
        text: text.to_string(),
        why: why.into(),
    }
}

/// Splits `"12.5GB/s"` into `(12.5, "GB/s")` (an `e` is an exponent only before a digit or
/// sign, so `5EB` is 5 exabytes).
pub fn split_number(text: &str) -> Result<(f64, &str), UnitError> {
    let t = text.trim();
    let end = t
        .char_indices()
        .find(|&(i, c)| {
            !(c.is_ascii_digit()
                || c == '.'
                || c == '+'
                || c == '-'
                || ((c == 'e' || c == 'E')
                    && t[i + 1..]
                        .starts_with(|d: char| d.is_ascii_digit() || d == '-' || d == '+')))
        })
        .map_or(t.len(), |(i, _)| i);
    let (num, unit) = t.split_at(end);
    let value: f64 = num
        .parse()
        .map_err(|_| unit_error(text, "expected a number followed by a unit"))?;
    Ok((value, unit.trim()))
}

/// Multiplier of an SI or binary prefix at the start of `unit`, and the rest.
fn prefix(unit: &str) -> (f64, &str) {
    const BINARY: [(&str, f64); 4] = [
        ("Ki", 1024.0),
        ("Mi", 1048576.0),
        ("Gi", 1073741824.0),
        ("Ti", 1099511627776.0),
    ];
    for (p, m) in BINARY {
        if let Some(rest) = unit.strip_prefix(p) {
            return (m, rest);
        }
    }
    const DECIMAL: [(&str, f64); 5] = [("k", 1e3), ("K", 1e3), ("M", 1e6), ("G", 1e9), ("T", 1e12)];
    for (p, m) in DECIMAL {
        if let Some(rest) = unit.strip_prefix(p)
            && !rest.is_empty()
        {
            return (m, rest);
        }
    }
    (1.0, unit)
}

/// Seconds per unit of a time suffix.
fn time_unit(unit: &str) -> Option<f64> {
    Some(match unit {
        "" | "s" => 1.0,
        "ms" => 1e-3,
        "us" | "µs" => 1e-6,
        "ns" => 1e-9,
        "ps" => 1e-12,
        "fs" => 1e-15,
        "min" => 60.0,
        "h" => 3600.0,
        _ => return None,
    })
}

/// Bytes per unit of a size suffix (`B`, `KB`, `GiB`, `b` for bits, ...).
fn size_unit(unit: &str) -> Option<f64> {
    if unit.is_empty() {
        return Some(1.0);
    }
    let (mult, base) = prefix(unit);
    match base {
        "B" => Some(mult),
        "b" => Some(mult / 8.0),
        _ => None,
    }
}

fn parse_bandwidth(text: &str) -> Result<f64, UnitError> {
    let (value, unit) = split_number(text)?;
    let per_second = unit
        .strip_suffix("/s")
        .or_else(|| unit.strip_suffix("ps"))
        .unwrap_or(if unit.is_empty() { "" } else { "?" });
    let mult = size_unit(per_second).ok_or_else(|| {
        unit_error(
            text,
            "expected a bandwidth such as \"12.5GB/s\", \"100Gb/s\" or \"25GiB/s\"",
        )
    })?;
    Ok(value * mult)
}

fn parse_flop_rate(text: &str) -> Result<f64, UnitError> {
    let (value, unit) = split_number(text)?;
    let (mult, base) = prefix(unit);
    match base {
        // `f` as SimGrid writes host speeds (`1Gf`).
        "" | "Flop/s" | "flop/s" | "FLOPS" | "Flops" | "F/s" | "f" => Ok(value * mult),
        _ => Err(unit_error(
            text,
            "expected a compute rate such as \"15.7TFlop/s\" or \"1Gf\"",
        )),
    }
}

fn parse_time(text: &str) -> Result<f64, UnitError> {
    let (value, unit) = split_number(text)?;
    let mult = time_unit(unit).ok_or_else(|| {
        unit_error(
            text,
            "expected a duration such as \"2us\", \"1.5ms\" or \"3s\"",
        )
    })?;
    Ok(value * mult)
}

/// Bytes per unit of a bare benchmark suffix (`64K`, `16M`, `1G`, `1T`): binary, as OSU and
/// nccl-tests mean them.
fn bare_binary(unit: &str) -> Option<f64> {
    Some(match unit {
        "K" | "k" => 1024.0,
        "M" => 1048576.0,
        "G" => 1073741824.0,
        "T" => 1099511627776.0,
        _ => return None,
    })
}

/// A size in bytes: `4096`, `64KB` (decimal), `64KiB` or `64K` (binary), `1Gb` (bits).
pub fn parse_size(text: &str) -> Result<f64, UnitError> {
    let (value, unit) = split_number(text)?;
    let mult = bare_binary(unit).or_else(|| size_unit(unit)).ok_or_else(|| {
        unit_error(
            text,
            "expected a size such as \"4096\", \"64KB\" (decimal), \"64KiB\" or \"64K\" (binary)",
        )
    })?;
    let bytes = value * mult;
    if !(bytes.is_finite() && bytes >= 0.0) {
        return Err(unit_error(text, "expected a finite, non-negative size"));
    }
    Ok(bytes)
}

fn parse_per_byte(text: &str) -> Result<f64, UnitError> {
    let (value, unit) = split_number(text)?;
    let (time, per) = unit.split_once('/').unwrap_or((unit, "B"));
    let t = time_unit(time);
    let b = size_unit(per);
    match (t, b) {
        (Some(t), Some(b)) => Ok(value * t / b),
        _ => Err(unit_error(
            text,
            "expected a cost per byte such as \"0.07ns/B\"",
        )),
    }
}

/// A number or a string with a unit, as found in the file.
#[derive(Deserialize)]
#[serde(untagged)]
enum Raw {
    Number(f64),
    Text(String),
}

fn deserialize_with<'de, D: Deserializer<'de>>(
    d: D,
    parse: fn(&str) -> Result<f64, UnitError>,
    what: &str,
) -> Result<f64, D::Error> {
    let raw = Raw::deserialize(d).map_err(|_| {
        de::Error::custom(format!("expected {what}: a number or a string with a unit"))
    })?;
    match raw {
        Raw::Number(v) => Ok(v),
        Raw::Text(s) => parse(&s).map_err(de::Error::custom),
    }
}

thread_local! {
    /// Whether quantities serialise tagged with their kind (inside [`tagged`] only).
    static TAGGED: std::cell::Cell<bool> = const { std::cell::Cell::new(false) };
}

/// The key a quantity serialised inside [`tagged`] is held under, before its kind
/// (`"\u{0}quantity:a duration"`): no field name or map key of a scenario begins with it.
pub const TAG: &str = "\u{0}quantity:";

/// Runs `f` with every quantity serialising as a one-entry map, [`TAG`] and its kind (`a
/// duration`, `a bandwidth`, ...) to its number, so that a walk of the image (see
/// `pace`) tells a duration from a count. Outside it, a quantity is its bare SI number.
pub fn tagged<T>(f: impl FnOnce() -> T) -> T {
    struct Reset(bool);
    impl Drop for Reset {
        fn drop(&mut self) {
            TAGGED.with(|t| t.set(self.0));
        }
    }
    let _reset = Reset(TAGGED.with(|t| t.replace(true)));
    f()
}

fn serialize_quantity<S: Serializer>(
    s: S,
    what: &'static str,
    value: f64,
) -> Result<S::Ok, S::Error> {
    if TAGGED.with(|t| t.get()) {
        use serde::ser::SerializeMap;
        let mut map = s.serialize_map(Some(1))?;
        map.serialize_entry(&format!("{TAG}{what}"), &value)?;
        map.end()
    } else {
        s.serialize_f64(value)
    }
}

/// Where a quantity's value may lie: a rate above zero (work at a rate of zero never ends), an
/// amount zero or more; finite either way. A number in a file and a number with a unit are
/// held to it alike.
#[derive(Clone, Copy)]
enum Range {
    Positive,
    NonNegative,
}

impl Range {
    fn check(self, value: f64, what: &str) -> Result<f64, String> {
        match self {
            Range::Positive if !(value.is_finite() && value > 0.0) => Err(format!(
                "expected {what} above zero and finite, got {value}"
            )),
            Range::NonNegative if !(value.is_finite() && value >= 0.0) => Err(format!(
                "expected {what} of zero or more and finite, got {value}"
            )),
            _ => Ok(value),
        }
    }
}

macro_rules! quantity {
    ($(#[$doc:meta])* $name:ident, $parse:ident, $what:literal, $unit:literal, $range:expr) => {
        $(#[$doc])*
        #[derive(Debug, Clone, Copy, PartialEq, PartialOrd, Default)]
        pub struct $name(pub f64);

        impl $name {
            /// Reads the quantity from text with a unit.
            pub fn parse(text: &str) -> Result<Self, UnitError> {
                let value = $parse(text)?;
                $range
                    .check(value, $what)
                    .map(Self)
                    .map_err(|e| unit_error(text, &e))
            }
        }

        impl<'de> Deserialize<'de> for $name {
            fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
                let value = deserialize_with(d, $parse, $what)?;
                $range.check(value, $what).map(Self).map_err(de::Error::custom)
            }
        }

        impl Serialize for $name {
            fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
                serialize_quantity(s, $what, self.0)
            }
        }

        impl fmt::Display for $name {
            fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                write!(f, "{}{}", self.0, $unit)
            }
        }
    };
}

quantity!(
    /// Bytes per second.
    Bandwidth, parse_bandwidth, "a bandwidth", "B/s", Range::Positive
);
quantity!(
    /// A size in bytes (fractional values allowed, e.g. for rates of work).
    Bytes, parse_size, "a size", "B", Range::NonNegative
);
quantity!(
    /// Floating-point operations per second.
    FlopRate, parse_flop_rate, "a compute rate", "Flop/s", Range::Positive
);
quantity!(
    /// A cost in seconds per byte.
    PerByte, parse_per_byte, "a cost per byte", "s/B", Range::NonNegative
);

/// A duration, read as seconds and held as exact simulated time.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Default, Hash)]
pub struct Duration(pub SimTime);

impl Duration {
    pub fn parse(text: &str) -> Result<Self, UnitError> {
        let secs = parse_time(text)?;
        SimTime::try_from_secs(secs)
            .map(Self)
            .map_err(|why| unit_error(text, why))
    }
}

impl<'de> Deserialize<'de> for Duration {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let secs = deserialize_with(d, parse_time, "a duration")?;
        SimTime::try_from_secs(secs)
            .map(Self)
            .map_err(de::Error::custom)
    }
}

impl Serialize for Duration {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        serialize_quantity(s, "a duration", self.0.as_secs_f64())
    }
}

impl fmt::Display for Duration {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}s", self.0.as_secs_f64())
    }
}

/// Reads any quantity hetsim knows (a bare number, or a size, duration, bandwidth, compute
/// rate or cost per byte with its unit) as SI base units; used where the kind is not known
/// in advance, such as a study's parameter values.
pub fn parse_any_quantity(text: &str) -> Option<f64> {
    if let Ok(v) = text.trim().parse::<f64>() {
        return Some(v);
    }
    [
        parse_size,
        parse_time,
        parse_bandwidth,
        parse_flop_rate,
        parse_per_byte,
    ]
    .iter()
    .find_map(|parse| parse(text).ok())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bandwidths_in_bytes_and_bits() {
        assert_eq!(Bandwidth::parse("12.5GB/s").unwrap().0, 12.5e9);
        // 100 Gb/s = 100e9 bits / 8 = 12.5e9 bytes per second.
        assert_eq!(Bandwidth::parse("100Gb/s").unwrap().0, 12.5e9);
        assert_eq!(Bandwidth::parse("100Gbps").unwrap().0, 12.5e9);
        assert_eq!(Bandwidth::parse("1GiB/s").unwrap().0, 1073741824.0);
        assert_eq!(Bandwidth::parse("75GBps").unwrap().0, 75e9);
        assert_eq!(Bandwidth::parse("1e9").unwrap().0, 1e9);
        assert!(Bandwidth::parse("12.5GB").is_err());
        assert!(Bandwidth::parse("fast").is_err());
    }

    #[test]
    fn durations_are_exact() {
        assert_eq!(Duration::parse("2us").unwrap().0, SimTime::from_nanos(2000));
        assert_eq!(
            Duration::parse("1.5ms").unwrap().0,
            SimTime::from_nanos(1_500_000)
        );
        assert_eq!(
            Duration::parse("3").unwrap().0,
            SimTime::from_nanos(3_000_000_000)
        );
        assert!(Duration::parse("-1us").is_err());
        assert!(Duration::parse("2 parsecs").is_err());
    }

    #[test]
    fn flop_rates() {
        assert_eq!(FlopRate::parse("15.7TFlop/s").unwrap().0, 15.7e12);
        assert_eq!(FlopRate::parse("7GFLOPS").unwrap().0, 7e9);
        assert!(FlopRate::parse("7GB/s").is_err());
    }

    #[test]
    fn sizes_and_costs() {
        assert_eq!(Bytes::parse("16GiB").unwrap().0, 17179869184.0);
        assert_eq!(Bytes::parse("64KB").unwrap().0, 64000.0);
        assert_eq!(Bytes::parse("4096").unwrap().0, 4096.0);
        // As OSU and nccl-tests write sizes: a bare prefix is binary.
        assert_eq!(Bytes::parse("64K").unwrap().0, 65536.0);
        assert_eq!(Bytes::parse("16M").unwrap().0, 16777216.0);
        assert_eq!(Bytes::parse("1T").unwrap().0, 1099511627776.0);
        assert_eq!(Bytes::parse("1kB").unwrap().0, 1000.0);
        assert!(Bytes::parse("1X").is_err());
        assert!((PerByte::parse("0.07ns/B").unwrap().0 - 0.07e-9).abs() < 1e-24);
        assert!((PerByte::parse("0.07ns").unwrap().0 - 0.07e-9).abs() < 1e-24);
    }
}
