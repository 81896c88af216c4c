//! A study's results: the table (`results.csv`), its plots (one per metric against the swept
//! parameter, one line per variant and combination of the other parameters, averaged over
//! seeds) and the ablation chart (each variant against the reference variant).
//!
//! The table is written the same way by `hetsim study` and by `hetsim merge` (which reads the
//! shards' tables back), so a study split in shards and merged gives the same bytes.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use hetsim_schema::study::Study;
use hetsim_schema::units::{parse_any_quantity, split_number};

use crate::plot::{Bar, BarChart, LineChart, LineStyle, Series};

/// One run of a study.
#[derive(Debug, Clone, PartialEq)]
pub struct StudyRow {
    /// Position in the full grid (the same in every shard).
    pub run: usize,
    /// Parameter values as given to `--set`.
    pub values: Vec<String>,
    pub variant: String,
    /// Switches turned off, joined with `+`.
    pub disabled: String,
    pub seed: u64,
    /// One per metric; `None` when the run failed.
    pub metrics: Vec<Option<f64>>,
    /// Why the run failed.
    pub error: Option<String>,
}

/// All rows of a study (or of a shard), in run order.
#[derive(Debug, Clone, PartialEq)]
pub struct StudyTable {
    pub params: Vec<String>,
    pub metrics: Vec<String>,
    pub rows: Vec<StudyRow>,
}

impl StudyTable {
    pub fn header(&self) -> Vec<String> {
        let mut h = vec!["run".to_string()];
        h.extend(self.params.iter().cloned());
        h.extend(["variant", "disabled", "seed"].map(String::from));
        h.extend(self.metrics.iter().cloned());
        h.extend(["status", "error"].map(String::from));
        h
    }

    /// `results.csv`.
    pub fn to_csv(&self) -> std::io::Result<Vec<u8>> {
        let mut w = csv::Writer::from_writer(Vec::new());
        w.write_record(self.header())?;
        for r in &self.rows {
            let mut rec = vec![r.run.to_string()];
            rec.extend(r.values.iter().cloned());
            rec.extend([r.variant.clone(), r.disabled.clone(), r.seed.to_string()]);
            rec.extend(
                r.metrics
                    .iter()
                    .map(|m| m.map_or(String::new(), |v| v.to_string())),
            );
            rec.push(if r.error.is_some() { "failed" } else { "ok" }.to_string());
            rec.push(r.error.clone().unwrap_or_default());
            w.write_record(rec)?;
        }
        w.into_inner()
            .map_err(|e| std::io::Error::other(e.to_string()))
    }

    /// Reads a `results.csv` written by [`StudyTable::to_csv`] for the same study.
    pub fn from_csv(text: &str, params: &[String], metrics: &[String]) -> Result<Self, String> {
        let mut table = StudyTable {
            params: params.to_vec(),
            metrics: metrics.to_vec(),
            rows: Vec::new(),
        };
        let mut r = csv::Reader::from_reader(text.as_bytes());
        let header: Vec<String> = r
            .headers()
            .map_err(|e| e.to_string())?
            .iter()
            .map(String::from)
            .collect();
        if header != table.header() {
            return Err(format!(
                "the columns are {header:?}, expected {:?}",
                table.header()
            ));
        }
        let (np, nm) = (params.len(), metrics.len());
        for (i, rec) in r.records().enumerate() {
            let rec = rec.map_err(|e| e.to_string())?;
            let line = i + 2;
            let field = |k: usize| rec.get(k).unwrap_or("").to_string();
            let run = field(0)
                .parse()
                .map_err(|_| format!("line {line}: run `{}` is not a number", field(0)))?;
            let seed = field(np + 3)
                .parse()
                .map_err(|_| format!("line {line}: seed `{}` is not a number", field(np + 3)))?;
            let metrics: Vec<Option<f64>> = (0..nm)
                .map(|m| {
                    let t = field(np + 4 + m);
                    if t.is_empty() {
                        Ok(None)
                    } else {
                        t.parse()
                            .map(Some)
                            .map_err(|_| format!("line {line}: metric `{t}` is not a number"))
                    }
                })
                .collect::<Result<_, String>>()?;
            let status = field(np + 4 + nm);
            let error = field(np + 5 + nm);
            check_status(&status, &error, &metrics).map_err(|e| format!("line {line}: {e}"))?;
            table.rows.push(StudyRow {
                run,
                values: (0..np).map(|p| field(1 + p)).collect(),
                variant: field(np + 1),
                disabled: field(np + 2),
                seed,
                metrics,
                error: (status != "ok").then_some(error),
            });
        }
        Ok(table)
    }
}

/// A row's status agrees with its cells: `ok` has every metric and no error, `failed` has
/// an error and no metric.
fn check_status(status: &str, error: &str, metrics: &[Option<f64>]) -> Result<(), String> {
    match status {
        "ok" if metrics.iter().all(Option::is_some) && error.is_empty() => Ok(()),
        "ok" => Err("status `ok` with a missing metric or an error".into()),
        "failed" if metrics.iter().all(Option::is_none) && !error.is_empty() => Ok(()),
        "failed" => Err("status `failed` with a metric or without its error".into()),
        other => Err(format!("status `{other}` is neither `ok` nor `failed`")),
    }
}

/// A metric's name as a file name.
fn file_stem(metric: &str) -> String {
    metric
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || c == '-' {
                c
            } else {
                '_'
            }
        })
        .collect()
}

/// The unit of a `--set` path's or a metric's values, read from its name (`..._s` seconds,
/// `bandwidth`, `latency`, ...); `None` for counts and names that do not say.
fn unit_of(path: &str) -> Option<&'static str> {
    let last = path
        .rsplit('.')
        .find(|seg| !matches!(*seg, "mean" | "max" | "min"))
        .unwrap_or(path);
    let has = |words: &[&str]| words.iter().any(|w| last.contains(w));
    if last.ends_with("_s") || has(&["latency", "quantum", "compute", "delay", "overhead"]) {
        Some("s")
    } else if has(&["bandwidth", "busbw", "algbw"]) {
        Some("B/s")
    } else if last.ends_with("_mb") {
        Some("MB")
    } else if has(&["bytes", "size", "memory"]) {
        Some("B")
    } else if has(&["gflops"]) {
        Some("GFlop/s")
    } else if has(&["speed"]) {
        Some("Flop/s")
    } else {
        None
    }
}

/// The unit an axis shows its values in: values are divided by `factor` (seconds to ms,
/// B/s to GB/s, or the unit the study's values were written in, such as Gb/s or ns).
#[derive(Debug, Clone, PartialEq)]
struct Display {
    factor: f64,
    name: Option<String>,
}

impl Display {
    /// A swept parameter: the unit its values are written in when they all say the same one
    /// (`100Gb/s`, `10ns`; a bare `0` goes with any), else as for a metric.
    fn for_values<'a>(values: impl Iterator<Item = &'a str> + Clone, unit: Option<&str>) -> Self {
        let written: Vec<&str> = values
            .clone()
            .filter_map(|v| split_number(v).ok().map(|(_, unit)| unit))
            .filter(|s| !s.is_empty())
            .collect();
        if let Some(first) = written.first()
            && written.iter().all(|s| s == first)
            && values.clone().all(|v| parse_any_quantity(v).is_some())
            && let Some(factor) = parse_any_quantity(&format!("1{first}"))
        {
            return Display {
                factor,
                name: Some(first.to_string()),
            };
        }
        let numbers: Vec<f64> = values.filter_map(parse_any_quantity).collect();
        Self::for_metric(unit, numbers.into_iter())
    }

    /// A metric in SI base units: seconds in s, ms, µs or ns and rates and sizes with a
    /// decimal prefix, so that the largest value reads between 1 and 1000.
    fn for_metric(unit: Option<&str>, values: impl Iterator<Item = f64>) -> Self {
        let top = values.map(f64::abs).fold(0.0, f64::max);
        let Some(unit) = unit else {
            return Display {
                factor: 1.0,
                name: None,
            };
        };
        let (factor, prefix) = match unit {
            "s" => {
                let (f, name) = crate::headline::seconds_unit(top);
                return Display {
                    factor: f,
                    name: Some(name.to_string()),
                };
            }
            "B/s" | "B" | "Flop/s" => crate::plot::axis::si_prefix(top),
            _ => (1.0, ""),
        };
        Display {
            factor,
            name: Some(format!("{prefix}{unit}")),
        }
    }
}

/// An axis title: the name, then its unit and scale in brackets when there are any.
fn axis_desc(name: &str, unit: Option<&str>, log: bool) -> String {
    match (unit, log) {
        (Some(u), true) => format!("{name} ({u}, log scale)"),
        (Some(u), false) => format!("{name} ({u})"),
        (None, true) => format!("{name} (log scale)"),
        (None, false) => name.to_string(),
    }
}

/// Mean of the values, `None` when there are none.
fn mean(v: &[f64]) -> Option<f64> {
    (!v.is_empty()).then(|| v.iter().sum::<f64>() / v.len() as f64)
}

/// Whether values read better on a log axis (positive, spanning a decade or more).
fn wants_log(values: impl Iterator<Item = f64>) -> bool {
    let (lo, hi) = values.fold((f64::INFINITY, f64::NEG_INFINITY), |(a, b), v| {
        (a.min(v), b.max(v))
    });
    lo > 0.0 && hi / lo >= 10.0
}

/// The chart of one metric against the x parameter; `None` without a numeric x parameter.
pub fn metric_chart(study: &Study, table: &StudyTable, metric: usize) -> Option<LineChart> {
    let xp = match &study.x {
        Some(x) => study
            .params
            .iter()
            .position(|p| p.label() == x || p.path == *x)?,
        None => 0,
    };
    let param = study.params.get(xp)?;
    // Lines: variant x the other parameters' values; points: x -> mean over seeds.
    // (variant order, line order, label) -> x bits -> (x, values over seeds).
    // A value of None is a run that failed at that x.
    type Points = BTreeMap<u64, (f64, Vec<Option<f64>>)>;
    let mut lines: BTreeMap<(usize, usize, String), (LineStyle, Points)> = BTreeMap::new();
    // With two or more other parameters, a line's colour follows the variant and all but the
    // last of them, its dashes the last one (e.g. colour per scheduler, dashes per memory cap).
    let others_n = study.params.len() - 1;
    let mut colours: std::collections::HashMap<String, usize> = std::collections::HashMap::new();
    let mut dashes: std::collections::HashMap<String, u8> = std::collections::HashMap::new();
    let mut order: std::collections::HashMap<String, usize> = std::collections::HashMap::new();
    let variant_rank = |name: &str| {
        study
            .variants
            .iter()
            .position(|v| v.name == name)
            .unwrap_or(usize::MAX)
    };
    for r in &table.rows {
        let Some(x) = parse_any_quantity(&r.values[xp]) else {
            continue;
        };
        let y = r.metrics[metric];
        let others: Vec<String> = study
            .params
            .iter()
            .enumerate()
            .filter(|(i, _)| *i != xp)
            .map(|(i, p)| format!("{}={}", p.label(), r.values[i]))
            .collect();
        let mut label = r.variant.clone();
        if !others.is_empty() {
            label = format!("{label}, {}", others.join(", "));
        }
        let style = if others_n >= 2 {
            let group = format!("{} {}", r.variant, others[..others.len() - 1].join(" "));
            let next = colours.len();
            let colour = *colours.entry(group).or_insert(next);
            let next = dashes.len() as u8;
            let dash = *dashes
                .entry(others[others.len() - 1].clone())
                .or_insert(next);
            LineStyle {
                colour: Some(colour),
                dash,
            }
        } else {
            LineStyle::default()
        };
        // Lines in variant order, then in the order the grid reaches them.
        let seen = order.len();
        let rank = *order.entry(label.clone()).or_insert(seen);
        lines
            .entry((variant_rank(&r.variant), rank, label))
            .or_insert_with(|| (style, Points::new()))
            .1
            .entry(x.to_bits())
            .or_insert_with(|| (x, Vec::new()))
            .1
            .push(y);
    }
    if lines.is_empty() {
        return None;
    }
    let x_unit = Display::for_values(
        table.rows.iter().map(|r| r.values[xp].as_str()),
        unit_of(&param.path),
    );
    let y_unit = Display::for_metric(
        unit_of(&table.metrics[metric]),
        table.rows.iter().filter_map(|r| r.metrics[metric]),
    );
    // A point is the mean over the seeds that ran; an x where every seed failed is a gap.
    let mut series: Vec<Series> = lines
        .into_iter()
        .map(|((_, _, label), (style, pts))| {
            let mut points = Vec::new();
            let mut gaps = Vec::new();
            for (x, ys) in pts.into_values() {
                let ok: Vec<f64> = ys.iter().flatten().copied().collect();
                match mean(&ok) {
                    Some(y) => points.push((x / x_unit.factor, y / y_unit.factor)),
                    None => gaps.push(x / x_unit.factor),
                }
            }
            points.sort_by(|a, b| a.0.total_cmp(&b.0));
            Series {
                label,
                points,
                style,
                gaps,
            }
        })
        .collect();
    series.retain(|s| !s.points.is_empty() || !s.gaps.is_empty());
    let xs = series.iter().flat_map(|s| s.points.iter().map(|p| p.0));
    let ys = series.iter().flat_map(|s| s.points.iter().map(|p| p.1));
    let (log_x, log_y) = (wants_log(xs), wants_log(ys));
    let seeds = study.seeds.len().max(1);
    Some(LineChart {
        title: format!("{}: {}", study.name, table.metrics[metric]),
        note: Some(format!(
            "one line per variant{}; {}",
            if study.params.len() > 1 {
                " and combination of the other parameters"
            } else {
                ""
            },
            if seeds > 1 {
                format!("each point is the mean of {seeds} seeds")
            } else {
                "one run per point".to_string()
            }
        )),
        x_desc: axis_desc(param.label(), x_unit.name.as_deref(), log_x),
        y_desc: axis_desc(&table.metrics[metric], y_unit.name.as_deref(), log_y),
        log_x,
        log_y,
        markers: true,
        series,
        size: (1200, 720),
    })
}

/// Each variant against the reference (the first variant that disables nothing, else the
/// first): the mean over the grid points both ran of (variant / reference - 1), in %, per
/// metric, and per value of the first parameter whose values are names rather than numbers
/// (e.g. the application), when there is one. `None` with a single variant.
pub fn ablation_chart(study: &Study, table: &StudyTable) -> Option<BarChart> {
    if study.variants.len() < 2 {
        return None;
    }
    let reference = study
        .variants
        .iter()
        .find(|v| v.disable.is_empty() && v.set.is_empty())
        .unwrap_or(&study.variants[0]);
    // Grid point = parameter values and seed.
    let key = |r: &StudyRow| (r.values.clone(), r.seed);
    let reference_rows: BTreeMap<_, &StudyRow> = table
        .rows
        .iter()
        .filter(|r| r.variant == reference.name)
        .map(|r| (key(r), r))
        .collect();
    let by = categorical_param(table);
    // The categories in the order the rows first show them (one, empty, without one).
    let mut categories: Vec<String> = Vec::new();
    for r in &table.rows {
        let c = by.map(|p| r.values[p].clone()).unwrap_or_default();
        if !categories.contains(&c) {
            categories.push(c);
        }
    }
    let mut bars = Vec::new();
    for v in study.variants.iter().filter(|v| v.name != reference.name) {
        for category in &categories {
            for (m, metric) in table.metrics.iter().enumerate() {
                let changes: Vec<f64> = table
                    .rows
                    .iter()
                    .filter(|r| r.variant == v.name)
                    .filter(|r| by.is_none_or(|p| r.values[p] == *category))
                    .filter_map(|r| {
                        let base = reference_rows.get(&key(r))?.metrics[m]?;
                        let val = r.metrics[m]?;
                        (base != 0.0).then(|| 100.0 * (val / base - 1.0))
                    })
                    .collect();
                let label = match by {
                    Some(_) => format!("{} / {category} / {metric}", v.name),
                    None => format!("{} / {metric}", v.name),
                };
                bars.push(Bar {
                    label,
                    group: m,
                    value: mean(&changes).unwrap_or(f64::NAN),
                });
            }
        }
    }
    let over = match by {
        Some(p) => format!("mean over the rest of the grid, per {}", table.params[p]),
        None => "mean over the grid".to_string(),
    };
    Some(BarChart {
        title: format!("{}: ablations against `{}`", study.name, reference.name),
        note: Some(format!(
            "bar = {over} of (metric with the variant / metric with `{}` - 1)",
            reference.name
        )),
        x_desc: format!("change against `{}` (%)", reference.name),
        groups: table.metrics.clone(),
        bars,
        width: 1200,
    })
}

/// The first parameter some of whose values are not numbers (a base file, a scheduler).
fn categorical_param(table: &StudyTable) -> Option<usize> {
    (0..table.params.len()).find(|&p| {
        table
            .rows
            .iter()
            .any(|r| parse_any_quantity(&r.values[p]).is_none())
    })
}

/// Writes `results.csv`, `study.json` and (when `plots`) the charts into `dir`, staged like a
/// run's outputs; returns the files written.
pub fn write(
    dir: &Path,
    study_json: &[u8],
    study: &Study,
    table: &StudyTable,
    plots: bool,
) -> std::io::Result<Vec<PathBuf>> {
    crate::staged::write_all(dir, |st| {
        st.bytes("results.csv", table.to_csv()?)?;
        st.bytes("study.json", study_json.to_vec())?;
        if !plots {
            return Ok(());
        }
        for m in 0..table.metrics.len() {
            if let Some(chart) = metric_chart(study, table, m) {
                st.figure(&file_stem(&table.metrics[m]), &chart)?;
            }
        }
        if let Some(chart) = ablation_chart(study, table) {
            st.figure("ablation", &chart)?;
        }
        Ok(())
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn axes_say_their_units() {
        assert_eq!(unit_of("mpi.comm_time_s.mean"), Some("s"));
        assert_eq!(unit_of("network_model.quantum"), Some("s"));
        assert_eq!(unit_of("platform.node.nic.bandwidth"), Some("B/s"));
        assert_eq!(unit_of("platform.limit_cuda_mem_mb"), Some("MB"));
        assert_eq!(unit_of("runtime.gflops"), Some("GFlop/s"));
        assert_eq!(unit_of("workload.Mpi.gpus_per_node"), None);
        assert_eq!(unit_of("runtime.evictions"), None);
        assert_eq!(axis_desc("ranks", None, true), "ranks (log scale)");
        assert_eq!(axis_desc("sim_time_s", Some("s"), false), "sim_time_s (s)");
    }

    #[test]
    fn ablations_split_by_a_named_parameter() {
        let study: Study = hetsim_schema::load::from_ron(
            r#"Study(name: "s", base: "a.ron",
                params: [
                    Param(path: "base", name: "app", values: List(["a.ron", "b.ron"])),
                    Param(path: "workload.Mpi.ranks", name: "ranks", values: List([2, 4])),
                ],
                variants: [Variant(name: "full"), Variant(name: "off", disable: ["gpudirect"])],
                metrics: ["sim_time_s"])"#,
            "test",
            "",
        )
        .unwrap();
        let row = |app: &str, ranks: &str, variant: &str, v: f64| StudyRow {
            run: 0,
            values: vec![app.into(), ranks.into()],
            variant: variant.into(),
            disabled: String::new(),
            seed: 1,
            metrics: vec![Some(v)],
            error: None,
        };
        let table = StudyTable {
            params: vec!["app".into(), "ranks".into()],
            metrics: vec!["sim_time_s".into()],
            rows: vec![
                row("a.ron", "2", "full", 1.0),
                row("a.ron", "2", "off", 1.1),
                row("a.ron", "4", "full", 1.0),
                row("a.ron", "4", "off", 1.3),
                row("b.ron", "2", "full", 1.0),
                row("b.ron", "2", "off", 2.0),
                row("b.ron", "4", "full", 2.0),
                row("b.ron", "4", "off", 4.0),
            ],
        };
        assert_eq!(categorical_param(&table), Some(0));
        let chart = ablation_chart(&study, &table).unwrap();
        let bars: Vec<(String, f64)> = chart
            .bars
            .iter()
            .map(|b| (b.label.clone(), (b.value * 1e9).round() / 1e9))
            .collect();
        // a: +10 % and +30 %, mean +20 %; b: +100 % twice.
        assert_eq!(
            bars,
            [
                ("off / a.ron / sim_time_s".to_string(), 20.0),
                ("off / b.ron / sim_time_s".to_string(), 100.0)
            ]
        );
    }

    #[test]
    fn axes_show_values_in_the_unit_they_were_given_or_a_readable_one() {
        let d = Display::for_values(["50Gb/s", "100Gb/s"].into_iter(), Some("B/s"));
        assert_eq!((d.factor, d.name.as_deref()), (1.25e8, Some("Gb/s")));
        let d = Display::for_values(["0", "10ns", "300ns"].into_iter(), Some("s"));
        assert_eq!((d.factor, d.name.as_deref()), (1e-9, Some("ns")));
        // Mixed units: the metric's rule, from the largest value (1 us).
        let d = Display::for_values(["0", "10ns", "1us"].into_iter(), Some("s"));
        assert_eq!((d.factor, d.name.as_deref()), (1e-6, Some("µs")));
        let d = Display::for_metric(Some("s"), [0.004, 0.04].into_iter());
        assert_eq!((d.factor, d.name.as_deref()), (1e-3, Some("ms")));
        let d = Display::for_metric(Some("B/s"), [2.4e10].into_iter());
        assert_eq!((d.factor, d.name.as_deref()), (1e9, Some("GB/s")));
        let d = Display::for_values([1.0, 2.0].iter().map(|_| "4"), None);
        assert_eq!((d.factor, d.name), (1.0, None));
    }
}
