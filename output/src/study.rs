//! A study's results: the table (`results.csv`), its plots (one per metric against the swept
//! parameter, one line per variant and combination of the other parameters, averaged over
//! seeds) and the ablation chart (each variant against the full model).
//!
//! The table is written the same way by `hetsim study` and by `hetsim merge` (which reads the
//! shards' tables back), so a study split in shards and merged gives the same bytes.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use hetsim_schema::study::Study;
use hetsim_schema::units::parse_any_quantity;

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
    type Points = BTreeMap<u64, (f64, Vec<f64>)>;
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
        let (Some(x), Some(y)) = (parse_any_quantity(&r.values[xp]), r.metrics[metric]) else {
            continue;
        };
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
    let series: Vec<Series> = lines
        .into_iter()
        .map(|((_, _, label), (style, pts))| {
            let mut points: Vec<(f64, f64)> = pts
                .into_values()
                .filter_map(|(x, ys)| mean(&ys).map(|y| (x, y)))
                .collect();
            points.sort_by(|a, b| a.0.total_cmp(&b.0));
            Series {
                label,
                points,
                style,
            }
        })
        .collect();
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
        x_desc: axis_desc(param.label(), unit_of(&param.path), log_x),
        y_desc: axis_desc(
            &table.metrics[metric],
            unit_of(&table.metrics[metric]),
            log_y,
        ),
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
            "bar = {over} of (metric with the variant / metric of the full model - 1)"
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
}
