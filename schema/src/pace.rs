//! What sets the pace of a run: the inputs that decide how long things take.
//!
//! A run whose simulated time passes its range (38 years) was driven there by its input: a
//! duration too long, a rate next to zero, a size too large, or work repeated past reason. The
//! time is found too large only at the event that overflows, far from the input that caused
//! it, so the error instead names the extreme input of each kind: the longest duration, the
//! lowest bandwidth and compute rate, the highest cost per byte and the largest size, among the
//! scenario's fields (by the path `--set` takes) and the StarPU files it read (by file, and the
//! link, matrix cell or footprint within it). The cause is one of them, or the amount of work.

use serde_json::Value;

use crate::scenario::{PlatformSpec, Scenario};
use crate::starpu::{bus, perfmodel, platform};
use crate::units;

/// The extreme input of one kind, and where it was read.
#[derive(Debug, Clone, PartialEq)]
pub struct Extreme {
    pub kind: Kind,
    /// A scenario field path, or a file and the place in it.
    pub source: String,
    /// In the kind's SI unit.
    pub value: f64,
}

/// A kind of input that sets a pace, and which end of it is extreme.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum Kind {
    Duration,
    Bandwidth,
    ComputeRate,
    CostPerByte,
    Size,
}

impl Kind {
    const ALL: [Kind; 5] = [
        Kind::Duration,
        Kind::Bandwidth,
        Kind::ComputeRate,
        Kind::CostPerByte,
        Kind::Size,
    ];

    /// The kind of a quantity, by the name it is tagged with (`units::tagged`).
    fn of_quantity(what: &str) -> Option<Kind> {
        Some(match what {
            "a duration" => Kind::Duration,
            "a bandwidth" => Kind::Bandwidth,
            "a compute rate" => Kind::ComputeRate,
            "a cost per byte" => Kind::CostPerByte,
            "a size" => Kind::Size,
            _ => return None,
        })
    }

    fn label(self) -> &'static str {
        match self {
            Kind::Duration => "longest duration",
            Kind::Bandwidth => "lowest bandwidth",
            Kind::ComputeRate => "lowest compute rate",
            Kind::CostPerByte => "highest cost per byte",
            Kind::Size => "largest size",
        }
    }

    fn unit(self) -> &'static str {
        match self {
            Kind::Duration => "s",
            Kind::Bandwidth => "B/s",
            Kind::ComputeRate => "Flop/s",
            Kind::CostPerByte => "s/B",
            Kind::Size => "B",
        }
    }

    /// Rates are extreme at their lowest (time grows as they shrink), amounts at their
    /// highest.
    fn more_extreme(self, a: f64, b: f64) -> bool {
        if self.is_rate() { a < b } else { a > b }
    }

    fn is_rate(self) -> bool {
        matches!(self, Kind::Bandwidth | Kind::ComputeRate)
    }
}

/// The extreme input of each kind a scenario has (kinds it lacks are left out), in
/// [`Kind`] order.
pub fn extremes(s: &Scenario) -> Vec<Extreme> {
    let mut found = Found::default();
    let image = units::tagged(|| serde_json::to_value(s)).unwrap_or(Value::Null);
    found.walk(&image, &mut String::new());
    if let PlatformSpec::StarpuMachine(m) = &s.platform {
        for (name, (label, text)) in &m.files {
            found.starpu_file(name, label, text);
        }
    }
    Kind::ALL
        .iter()
        .filter_map(|k| found.0.iter().find(|e| e.kind == *k).cloned())
        .collect()
}

/// The extremes as lines for an error, one per kind.
pub fn describe(extremes: &[Extreme]) -> String {
    let mut text = String::from("the inputs that set how long things take (check these):");
    for e in extremes {
        text += &format!(
            "\n  {}: {} = {} {}",
            e.kind.label(),
            e.source,
            short(e.value),
            e.kind.unit()
        );
    }
    text
}

/// Quantities that bound or hold rather than take time: memories, buffers, thresholds and the
/// run's own limits.
const NOT_A_PACE: [&str; 7] = [
    "host_memory",
    "memory",
    "buffsize",
    "eager_limit",
    "max_memory",
    "max_output",
    "max_time",
];

/// A number in six significant digits, without trailing zeros (`1e8`, `1.2e10`, `7e-11`).
fn short(v: f64) -> String {
    let text = format!("{v:.5e}");
    let (mantissa, exp) = text.split_once('e').unwrap_or((&text, "0"));
    let mantissa = mantissa.trim_end_matches('0').trim_end_matches('.');
    match exp {
        "0" => mantissa.to_string(),
        _ => format!("{mantissa}e{exp}"),
    }
}

/// The most extreme value of each kind seen so far (the first seen wins a tie).
#[derive(Default)]
struct Found(Vec<Extreme>);

impl Found {
    fn offer(&mut self, kind: Kind, value: f64, source: impl FnOnce() -> String) {
        // A zero amount takes no time; a non-finite value was refused where it was read.
        if !value.is_finite() || (!kind.is_rate() && value == 0.0) {
            return;
        }
        match self.0.iter_mut().find(|e| e.kind == kind) {
            Some(e) if !kind.more_extreme(value, e.value) => {}
            Some(e) => {
                e.value = value;
                e.source = source();
            }
            None => self.0.push(Extreme {
                kind,
                source: source(),
                value,
            }),
        }
    }

    /// Walks the tagged JSON image of a scenario; `path` is the field path so far.
    fn walk(&mut self, v: &Value, path: &mut String) {
        match v {
            Value::Object(map) => {
                if let [(key, Value::Number(n))] = map.iter().collect::<Vec<_>>()[..]
                    && let Some(kind) = key.strip_prefix(units::TAG).and_then(Kind::of_quantity)
                {
                    let field = path.rsplit('.').next().unwrap_or("");
                    if !NOT_A_PACE.contains(&field) {
                        let value = n.as_f64().unwrap_or(f64::NAN);
                        self.offer(kind, value, || path.clone());
                    }
                    return;
                }
                for (key, v) in map {
                    self.nested(path, key, v);
                }
            }
            Value::Array(items) => {
                for (i, v) in items.iter().enumerate() {
                    self.nested(path, &i.to_string(), v);
                }
            }
            _ => {}
        }
    }

    fn nested(&mut self, path: &mut String, key: &str, v: &Value) {
        let len = path.len();
        if !path.is_empty() {
            path.push('.');
        }
        path.push_str(key);
        self.walk(v, path);
        path.truncate(len);
    }

    /// A StarPU file's figures: the platform file's links, the bus matrices, the codelet
    /// models' measured means (files that do not parse were refused before the run). Host
    /// speeds are left out: StarPU writes placeholders there, and task times come from the
    /// codelet models.
    fn starpu_file(&mut self, name: &str, label: &str, text: &str) {
        if name.ends_with(".xml") {
            if let Ok(p) = platform::parse(text) {
                self.starpu_platform(label, &p);
            }
        } else if name.ends_with(".bandwidth") || name.ends_with(".latency") {
            let Ok(m) = bus::parse_matrix(text) else {
                return;
            };
            // Bandwidths are MB/s, latencies microseconds.
            let (kind, scale) = if name.ends_with(".bandwidth") {
                (Kind::Bandwidth, 1e6)
            } else {
                (Kind::Duration, 1e-6)
            };
            for (r, row) in m.values.iter().enumerate() {
                for (c, v) in row.iter().enumerate() {
                    if r != c {
                        self.offer(kind, v * scale, || {
                            format!("{label} (row {}, column {})", r + 1, c + 1)
                        });
                    }
                }
            }
        } else if name.starts_with("codelets/")
            && let Ok(model) = perfmodel::parse(text)
        {
            let entries = model.combs.iter().flat_map(|c| &c.impls);
            for e in entries.flat_map(|i| &i.history) {
                self.offer(Kind::Duration, e.mean_us * 1e-6, || {
                    format!("{label} (footprint {:08x})", e.hash)
                });
            }
        }
    }

    fn starpu_platform(&mut self, label: &str, p: &platform::Platform) {
        for l in &p.links {
            self.offer(Kind::Bandwidth, l.bandwidth, || {
                format!("{label} (link `{}` bandwidth)", l.id)
            });
            self.offer(Kind::Duration, l.latency, || {
                format!("{label} (link `{}` latency)", l.id)
            });
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::load::parse_scenario_with;

    fn scenario(text: &str, overrides: &[&str]) -> Scenario {
        let overrides: Vec<String> = overrides.iter().map(|s| s.to_string()).collect();
        parse_scenario_with(text, "t.ron", &|_| Err("no includes".into()), &overrides).unwrap()
    }

    const TWO_HOSTS: &str = r#"(
        name: "t",
        platform: Explicit(links: [
            NamedLink(name: "l0", bandwidth: "10GB/s", latency: "1us"),
            NamedLink(name: "l1", bandwidth: "1GB/s", latency: "2us"),
        ]),
        workload: Flows([FlowSpec(route: Some(["l0", "l1"]), size: "1MB")]),
    )"#;

    #[test]
    fn each_kind_names_its_extreme_field() {
        let s = scenario(TWO_HOSTS, &["platform.links.0.latency=5e8"]);
        let ex = extremes(&s);
        let of = |k| ex.iter().find(|e| e.kind == k).unwrap();
        assert_eq!(
            of(Kind::Duration).source,
            "platform.Explicit.links.0.latency"
        );
        assert_eq!(of(Kind::Duration).value, 5e8);
        // The lowest bandwidth is the extreme one, not the first or the highest.
        assert_eq!(
            of(Kind::Bandwidth).source,
            "platform.Explicit.links.1.bandwidth"
        );
        assert_eq!(of(Kind::Bandwidth).value, 1e9);
        assert_eq!(of(Kind::Size).source, "workload.Flows.0.size");
        let text = describe(&ex);
        assert!(text.contains("longest duration: platform.Explicit.links.0.latency = 5e8 s"));
    }

    #[test]
    fn numbers_are_short() {
        assert_eq!(short(99999999.99999999), "1e8");
        assert_eq!(short(1.2e10), "1.2e10");
        assert_eq!(short(7e-11), "7e-11");
        assert_eq!(short(2.5), "2.5");
        assert_eq!(short(0.0), "0");
    }

    #[test]
    fn capacities_and_limits_set_no_pace() {
        let s = scenario(
            TWO_HOSTS,
            &["limits.max_time=1e9", "limits.max_memory=1e15"],
        );
        let ex = extremes(&s);
        assert!(ex.iter().all(|e| !e.source.starts_with("limits")), "{ex:?}");
    }

    #[test]
    fn untagged_images_stay_bare_numbers() {
        let s = scenario(TWO_HOSTS, &[]);
        let image = serde_json::to_value(&s).unwrap();
        assert_eq!(image["platform"]["Explicit"]["links"][1]["bandwidth"], 1e9);
    }

    #[test]
    fn starpu_files_name_the_file_and_the_place() {
        let mut found = Found::default();
        found.starpu_file("bus/h.bandwidth", "m/bus/h.bandwidth", "0\t5000\n6000\t0\n");
        found.starpu_file("bus/h.latency", "m/bus/h.latency", "0\t10\n3e14\t0\n");
        let bw = &found.0[0];
        assert_eq!((bw.kind, bw.value), (Kind::Bandwidth, 5e9));
        assert_eq!(bw.source, "m/bus/h.bandwidth (row 1, column 2)");
        let lat = &found.0[1];
        assert_eq!((lat.kind, lat.value), (Kind::Duration, 3e8));
        assert_eq!(lat.source, "m/bus/h.latency (row 2, column 1)");
    }
}
