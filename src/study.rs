//! `hetsim study`: runs a study's grid in parallel and collects each run's metrics.
//!
//! The grid is parameters x variants x seeds (the first parameter varying slowest), numbered
//! from 0. `--shard i/n` keeps the runs whose number is `i-1` modulo `n`, so shards balance
//! and any set of shards merges back into the same table (`hetsim merge`). A run that fails
//! (a bad override, a stuck simulation, a missing metric) is a row with status `failed` and
//! its error; the others go on. Runs do not record timelines and write no files of their own.

use indicatif::{MultiProgress, ProgressBar, ProgressDrawTarget, ProgressStyle};
use rayon::prelude::*;
use serde_json::Value as Json;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicUsize, Ordering};

use hetsim_output::study::{StudyRow, StudyTable};
use hetsim_schema::load::{from_ron, load_scenario};
use hetsim_schema::study::Study;

use crate::{Error, RunOptions, simulate_report};

/// One run of the grid.
#[derive(Debug, Clone, PartialEq)]
pub struct RunSpec {
    pub run: usize,
    /// `--set` text of each parameter's value.
    pub values: Vec<String>,
    /// The overrides of this point (parameters and their linked fields).
    pub overrides: Vec<String>,
    /// The base scenario, when a parameter picks it.
    pub base: Option<String>,
    pub variant: usize,
    pub seed: Option<u64>,
}

/// A slice of the grid: shard `index` (1-based) of `count`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Shard {
    pub index: usize,
    pub count: usize,
}

impl Shard {
    /// Whether grid run `run` belongs to this shard (runs are dealt round-robin).
    pub fn contains(self, run: usize) -> bool {
        run % self.count == self.index - 1
    }
}

impl std::str::FromStr for Shard {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, String> {
        let bad = || format!("expected i/n with 1 <= i <= n (e.g. 2/8), got `{s}`");
        let (i, n) = s.split_once('/').ok_or_else(bad)?;
        let (index, count) = (i.parse().map_err(|_| bad())?, n.parse().map_err(|_| bad())?);
        if index == 0 || index > count {
            return Err(bad());
        }
        Ok(Shard { index, count })
    }
}

/// Reads a study file.
pub fn load_study(file: &Path) -> Result<Study, Error> {
    let text = hetsim_schema::load::read_input(file)
        .map_err(|e| Error::Input(format!("{}: {e}", file.display())))?;
    let study: Study = from_ron(&text, &file.display().to_string(), "")
        .map_err(|e| Error::Input(e.to_string()))?;
    hetsim_schema::load::check_name(&study.name)
        .map_err(|e| Error::Input(format!("{}: name: {e}", file.display())))?;
    if study.metrics.is_empty() {
        return Err(Error::Input(format!(
            "{}: metrics: expected at least one metric (a path into summary.json, e.g. sim_time_s)",
            file.display()
        )));
    }
    if study.variants.is_empty() {
        return Err(Error::Input(format!(
            "{}: variants: expected at least one variant",
            file.display()
        )));
    }
    // A path given twice would make two columns that contradict each other.
    let mut paths: Vec<(String, &str)> = Vec::new();
    for (i, p) in study.params.iter().enumerate() {
        let linked = p.linked.iter().enumerate();
        let here = std::iter::once((format!("params[{i}].path"), p.path.as_str()))
            .chain(linked.map(|(k, l)| (format!("params[{i}].linked[{k}].path"), l.path.as_str())));
        for (field, path) in here {
            if let Some((first, _)) = paths.iter().find(|(_, q)| *q == path) {
                return Err(Error::Input(format!(
                    "{}: {field}: `{path}` is already {first}; each path may vary once",
                    file.display()
                )));
            }
            paths.push((field, path));
        }
    }
    // Switch names are known before any run: a typo would fail every run of its variant.
    let known: Vec<&str> = crate::switches().into_iter().map(|s| s.name).collect();
    for (v, variant) in study.variants.iter().enumerate() {
        for (k, name) in variant.disable.iter().enumerate() {
            if !known.contains(&name.as_str()) {
                return Err(Error::Input(format!(
                    "{}: variants[{v}].disable[{k}]: `{name}` is not a switch (hetsim systems lists them)",
                    file.display()
                )));
            }
        }
    }
    if let Some(x) = &study.x
        && !study.params.iter().any(|p| p.label() == x || p.path == *x)
    {
        return Err(Error::Input(format!(
            "{}: x: `{x}` is not one of the parameters",
            file.display()
        )));
    }
    Ok(study)
}

/// One value of a parameter: its text, its overrides, and the base it picks.
#[derive(Debug, Clone)]
struct Choice {
    text: String,
    overrides: Vec<String>,
    base: Option<String>,
}

fn choices(i: usize, p: &hetsim_schema::study::Param) -> Result<Vec<Choice>, Error> {
    use hetsim_schema::study::BASE_PATH;
    let values = p
        .values
        .expand()
        .map_err(|e| Error::Input(format!("params[{i}].values: {e}")))?;
    for (k, l) in p.linked.iter().enumerate() {
        if l.values.len() != values.len() {
            return Err(Error::Input(format!(
                "params[{i}].linked[{k}].values: {} values for the {} of `{}`",
                l.values.len(),
                values.len(),
                p.label()
            )));
        }
    }
    Ok(values
        .iter()
        .enumerate()
        .map(|(v, value)| {
            let text = value.text();
            let (mut overrides, base) = if p.path == BASE_PATH {
                (Vec::new(), Some(text.clone()))
            } else {
                (vec![format!("{}={text}", p.path)], None)
            };
            overrides.extend(
                p.linked
                    .iter()
                    .map(|l| format!("{}={}", l.path, l.values[v].text())),
            );
            Choice {
                text,
                overrides,
                base,
            }
        })
        .collect())
}

/// Every run of the study, in order.
/// The most runs a study's grid may hold.
pub const MAX_RUNS: usize = 100_000;

pub fn plan(study: &Study) -> Result<Vec<RunSpec>, Error> {
    let per_param: Vec<Vec<Choice>> = study
        .params
        .iter()
        .enumerate()
        .map(|(i, p)| choices(i, p))
        .collect::<Result<_, _>>()?;
    let seeds: Vec<Option<u64>> = if study.seeds.is_empty() {
        vec![None]
    } else {
        study.seeds.iter().copied().map(Some).collect()
    };
    // Counted before the grid is made: each run is a simulation of its own.
    let values: Vec<String> = per_param.iter().map(|c| c.len().to_string()).collect();
    let runs = per_param.iter().map(|c| c.len() as f64).product::<f64>()
        * study.variants.len() as f64
        * seeds.len() as f64;
    if runs > MAX_RUNS as f64 {
        return Err(Error::Input(format!(
            "params: the grid holds {runs:.3e} runs ({} values x {} variants x {} seeds); at most {MAX_RUNS}",
            values.join(" x "),
            study.variants.len(),
            seeds.len()
        )));
    }
    let mut points: Vec<Vec<&Choice>> = vec![Vec::new()];
    for options in &per_param {
        points = points
            .into_iter()
            .flat_map(|p| {
                options.iter().map(move |c| {
                    let mut q = p.clone();
                    q.push(c);
                    q
                })
            })
            .collect();
    }
    let mut runs = Vec::new();
    for point in &points {
        for variant in 0..study.variants.len() {
            for &seed in &seeds {
                runs.push(RunSpec {
                    run: runs.len(),
                    values: point.iter().map(|c| c.text.clone()).collect(),
                    overrides: point.iter().flat_map(|c| c.overrides.clone()).collect(),
                    base: point.iter().rev().find_map(|c| c.base.clone()),
                    variant,
                    seed,
                });
            }
        }
    }
    Ok(runs)
}

/// Runs one point of the grid and reads its metrics; `dir` is the study file's folder.
pub fn run_one(study: &Study, dir: &Path, spec: &RunSpec) -> StudyRow {
    row_of(study, spec, metrics_of(study, dir, spec))
}

/// The table's row of run `spec`, from its metrics or its failure.
fn row_of(
    study: &Study,
    spec: &RunSpec,
    result: Result<(u64, Vec<f64>), (u64, Failure)>,
) -> StudyRow {
    let variant = &study.variants[spec.variant];
    let mut row = StudyRow {
        run: spec.run,
        values: spec.values.clone(),
        variant: variant.name.clone(),
        disabled: variant.disable.join("+"),
        seed: 0,
        metrics: vec![None; study.metrics.len()],
        error: None,
    };
    match result {
        Ok((seed, m)) => {
            row.seed = seed;
            row.metrics = m.into_iter().map(Some).collect();
        }
        Err((seed, e)) => {
            row.seed = seed;
            row.error = Some(e.to_string());
        }
    }
    row
}

/// Why a run has no metrics: it failed, or a metric is not a number of its summary (a
/// mistake of the study's, the same for every run).
enum Failure {
    Run(String),
    Metric(String),
}

impl std::fmt::Display for Failure {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Failure::Run(e) | Failure::Metric(e) => f.write_str(e),
        }
    }
}

/// Loads run `spec`'s scenario as the run would, without running it.
fn preflight(study: &Study, dir: &Path, spec: &RunSpec) -> Result<(), String> {
    let variant = &study.variants[spec.variant];
    let mut overrides = spec.overrides.clone();
    overrides.extend(variant.set.iter().cloned());
    let base = dir.join(spec.base.as_ref().unwrap_or(&study.base));
    load_scenario(&base, &overrides)
        .map(|_| ())
        .map_err(|e| e.to_string())
}

fn metrics_of(
    study: &Study,
    dir: &Path,
    spec: &RunSpec,
) -> Result<(u64, Vec<f64>), (u64, Failure)> {
    let variant = &study.variants[spec.variant];
    let seed0 = spec.seed.unwrap_or(0);
    let mut overrides = spec.overrides.clone();
    overrides.extend(variant.set.iter().cloned());
    let base = dir.join(spec.base.as_ref().unwrap_or(&study.base));
    let mut scenario =
        load_scenario(&base, &overrides).map_err(|e| (seed0, Failure::Run(e.to_string())))?;
    if let Some(seed) = spec.seed {
        scenario.seed = seed;
    }
    let seed = scenario.seed;
    // A study reads summaries only: no recording.
    scenario.output = hetsim_schema::scenario::OutputSpec::tables_only();
    let opts = RunOptions {
        disable: variant.disable.clone(),
        progress: false,
        ..Default::default()
    };
    let report =
        simulate_report(&scenario, &opts).map_err(|e| (seed, Failure::Run(e.to_string())))?;
    let metrics = study
        .metrics
        .iter()
        .map(|m| metric(&report.summary, m))
        .collect::<Result<_, _>>()
        .map_err(|e| (seed, Failure::Metric(e)))?;
    Ok((seed, metrics))
}

/// A number at a dotted path of the summary.
/// One key of a metric's path: a field, or in a list (the `jobs` section) an index or the
/// name of an element (`jobs.halo.slowdown`).
fn step<'a>(v: &'a Json, key: &str) -> Option<&'a Json> {
    match v.as_array() {
        Some(list) => match key.parse::<usize>() {
            Ok(i) => list.get(i),
            Err(_) => list.iter().find(|e| e["name"].as_str() == Some(key)),
        },
        None => v.get(key),
    }
}

fn metric(summary: &Json, path: &str) -> Result<f64, String> {
    let mut v = summary;
    for key in path.split('.') {
        v = step(v, key).ok_or_else(|| {
            let known: Vec<&str> = v
                .as_object()
                .map(|o| o.keys().map(String::as_str).collect())
                .unwrap_or_default();
            format!(
                "metric `{path}`: no `{key}` in the summary (there: {})",
                known.join(", ")
            )
        })?;
    }
    match v {
        Json::Number(n) => n
            .as_f64()
            .ok_or_else(|| format!("metric `{path}` is not a number")),
        Json::Bool(b) => Ok(f64::from(u8::from(*b))),
        _ => Err(format!("metric `{path}` is not a number: {v}")),
    }
}

/// How to run a study.
#[derive(Debug, Clone)]
pub struct StudyOptions {
    pub jobs: usize,
    pub shard: Option<Shard>,
    pub progress: bool,
}

/// Runs the study (or its shard) and returns its table.
pub fn run_study(
    study: &Study,
    study_file: &Path,
    opts: &StudyOptions,
) -> Result<StudyTable, Error> {
    let dir = study_file.parent().unwrap_or(Path::new("."));
    let base = dir.join(&study.base);
    if !base.is_file() {
        return Err(Error::Input(format!(
            "{}: base: no scenario file at {}",
            study_file.display(),
            base.display()
        )));
    }
    let mut runs = plan(study)?;
    // A mistake every run would make (a parameter path that does not exist, a base that is
    // not a scenario) is an input error before anything runs.
    let first = runs
        .first()
        .ok_or_else(|| Error::Input(format!("{}: the grid is empty", study_file.display())))?;
    for variant in 0..study.variants.len() {
        let spec = RunSpec {
            variant,
            ..first.clone()
        };
        preflight(study, dir, &spec).map_err(|e| {
            Error::Input(format!(
                "{}: run 0 ({}) under variant `{}` cannot load: {e}",
                study_file.display(),
                first.values.join(", "),
                study.variants[variant].name
            ))
        })?;
    }
    if let Some(s) = opts.shard {
        runs.retain(|r| s.contains(r.run));
    }

    let pool = rayon::ThreadPoolBuilder::new()
        .num_threads(opts.jobs.max(1))
        .build()
        .map_err(|e| Error::Run(format!("cannot start {} jobs: {e}", opts.jobs)))?;
    let display = Display::new(opts.progress, runs.len(), opts.jobs.max(1));
    // The first run goes alone: a metric its summary does not hold as a number is the
    // study's mistake, refused before the other runs.
    let mut rows: Vec<StudyRow> = Vec::with_capacity(runs.len());
    if let Some(spec) = runs.first() {
        display.start(spec, study);
        let result = metrics_of(study, dir, spec);
        if let Err((_, Failure::Metric(e))) = &result {
            return Err(Error::Input(format!(
                "{}: metrics: {e} (run {})",
                study_file.display(),
                spec.run
            )));
        }
        let row = row_of(study, spec, result);
        display.done(&row);
        rows.push(row);
    }
    rows.extend(pool.install(|| {
        runs.par_iter()
            .skip(1)
            .map(|spec| {
                display.start(spec, study);
                let row = run_one(study, dir, spec);
                display.done(&row);
                row
            })
            .collect::<Vec<_>>()
    }));
    display.finish();
    // Failed runs are rows of the table; a study none of whose runs succeeded has no result.
    if let Some(e) = rows
        .iter()
        .map(|r| r.error.as_ref())
        .collect::<Option<Vec<_>>>()
        && let Some(first) = e.first()
    {
        return Err(Error::Run(format!(
            "{}: every one of the {} runs failed; the first: {first}",
            study_file.display(),
            rows.len()
        )));
    }
    Ok(StudyTable {
        params: study.params.iter().map(|p| p.label().to_string()).collect(),
        metrics: study.metrics.clone(),
        rows,
    })
}

/// The multi-progress display: one bar over all runs, one line per job with its current run.
struct Display {
    _multi: MultiProgress,
    total: ProgressBar,
    jobs: Vec<ProgressBar>,
    failed: AtomicUsize,
}

impl Display {
    fn new(visible: bool, runs: usize, jobs: usize) -> Self {
        let target = if visible {
            ProgressDrawTarget::stderr_with_hz(8)
        } else {
            ProgressDrawTarget::hidden()
        };
        let multi = MultiProgress::with_draw_target(target);
        let total = multi.add(ProgressBar::new(runs as u64));
        total.set_style(
            ProgressStyle::with_template("{elapsed} [{bar:40}] {pos}/{len} runs, {msg}")
                .expect("a valid template")
                .progress_chars("=> "),
        );
        total.set_message("0 failed");
        let jobs = (0..jobs)
            .map(|_| {
                let b = multi.add(ProgressBar::new_spinner());
                b.set_style(
                    ProgressStyle::with_template("  {spinner} {msg}").expect("a valid template"),
                );
                b
            })
            .collect();
        Display {
            _multi: multi,
            total,
            jobs,
            failed: AtomicUsize::new(0),
        }
    }

    fn job(&self) -> Option<&ProgressBar> {
        self.jobs.get(rayon::current_thread_index().unwrap_or(0))
    }

    fn start(&self, spec: &RunSpec, study: &Study) {
        if let Some(b) = self.job() {
            b.set_message(format!(
                "run {}: {} {}",
                spec.run,
                study.variants[spec.variant].name,
                spec.values.join(" ")
            ));
            b.tick();
        }
    }

    fn done(&self, row: &StudyRow) {
        self.total.inc(1);
        if row.error.is_some() {
            let failed = self.failed.fetch_add(1, Ordering::Relaxed) + 1;
            self.total.set_message(format!("{failed} failed"));
        }
    }

    fn finish(&self) {
        for b in &self.jobs {
            b.finish_and_clear();
        }
        self.total.finish_and_clear();
    }
}

/// The study as written next to its results (for `hetsim merge`).
pub fn study_json(study: &Study, runs: usize, shard: Option<Shard>) -> Vec<u8> {
    let mut v = serde_json::json!({
        "study": study,
        "runs": runs,
    });
    if let Some(s) = shard {
        v["shard"] = serde_json::json!(format!("{}/{}", s.index, s.count));
    }
    let mut bytes = serde_json::to_vec_pretty(&v).expect("a study serialises");
    bytes.push(b'\n');
    bytes
}

/// Every row of a shard belongs to the study's grid: its run number exists and falls in the
/// shard, its parameter values, variant and switches are that run's, and so is its seed when
/// the study sets seeds (otherwise the scenario's own seed, which merge cannot know).
fn check_rows(
    study: &Study,
    runs: usize,
    shard: Option<Shard>,
    table: &StudyTable,
) -> Result<(), String> {
    let grid = plan(study).map_err(|e| e.to_string())?;
    if runs != grid.len() {
        return Err(format!(
            "the study has {} runs, study.json says {runs}",
            grid.len()
        ));
    }
    for row in &table.rows {
        let at = |what: &str, got: &dyn std::fmt::Debug, want: &dyn std::fmt::Debug| {
            format!("run {}: {what} {got:?} is not the grid's {want:?}", row.run)
        };
        let spec = grid.get(row.run).ok_or_else(|| {
            format!(
                "run {} is beyond the grid (runs 0 to {})",
                row.run,
                runs.saturating_sub(1)
            )
        })?;
        if let Some(s) = shard
            && !s.contains(row.run)
        {
            return Err(format!(
                "run {} is not in shard {}/{}",
                row.run, s.index, s.count
            ));
        }
        let variant = &study.variants[spec.variant];
        if row.values != spec.values {
            return Err(at("parameter values", &row.values, &spec.values));
        }
        if row.variant != variant.name {
            return Err(at("variant", &row.variant, &variant.name));
        }
        let disabled = variant.disable.join("+");
        if row.disabled != disabled {
            return Err(at("disabled", &row.disabled, &disabled));
        }
        if let Some(seed) = spec.seed
            && row.seed != seed
        {
            return Err(at("seed", &row.seed, &seed));
        }
    }
    Ok(())
}

/// Reads shard folders back: their study (all the same) and their rows, merged in run order.
pub fn merge(dirs: &[PathBuf]) -> Result<(Study, usize, StudyTable, Vec<usize>), Error> {
    let mut merged: Option<(Study, usize, StudyTable)> = None;
    for dir in dirs {
        let path = dir.join("study.json");
        let text = std::fs::read_to_string(&path)
            .map_err(|e| Error::Input(format!("{}: {e}", path.display())))?;
        let v: Json = serde_json::from_str(&text)
            .map_err(|e| Error::Input(format!("{}: {e}", path.display())))?;
        let study: Study = serde_json::from_value(v["study"].clone())
            .map_err(|e| Error::Input(format!("{}: study: {e}", path.display())))?;
        // It names the merged results' folder: a plain name, as in a study file.
        hetsim_schema::load::check_name(&study.name)
            .map_err(|e| Error::Input(format!("{}: study.name: {e}", path.display())))?;
        let runs = v["runs"].as_u64().unwrap_or(0) as usize;
        let results = dir.join("results.csv");
        let csv = std::fs::read_to_string(&results)
            .map_err(|e| Error::Input(format!("{}: {e}", results.display())))?;
        let params: Vec<String> = study.params.iter().map(|p| p.label().to_string()).collect();
        let table = StudyTable::from_csv(&csv, &params, &study.metrics)
            .map_err(|e| Error::Input(format!("{}: {e}", results.display())))?;
        let shard = match v.get("shard").and_then(Json::as_str) {
            Some(t) => Some(
                t.parse::<Shard>()
                    .map_err(|e| Error::Input(format!("{}: shard: {e}", path.display())))?,
            ),
            None => None,
        };
        check_rows(&study, runs, shard, &table)
            .map_err(|e| Error::Input(format!("{}: {e}", results.display())))?;
        match &mut merged {
            None => merged = Some((study, runs, table)),
            Some((s, _, t)) => {
                if *s != study {
                    return Err(Error::Input(format!(
                        "{}: a different study than {}",
                        path.display(),
                        dirs[0].join("study.json").display()
                    )));
                }
                t.rows.extend(table.rows);
            }
        }
    }
    let (study, runs, mut table) =
        merged.ok_or_else(|| Error::Input("merge: expected at least one folder".into()))?;
    table.rows.sort_by_key(|r| r.run);
    if let Some(w) = table.rows.windows(2).find(|w| w[0].run == w[1].run) {
        return Err(Error::Input(format!(
            "merge: run {} appears in two shards",
            w[0].run
        )));
    }
    let present: std::collections::BTreeSet<usize> = table.rows.iter().map(|r| r.run).collect();
    let missing = (0..runs).filter(|r| !present.contains(r)).collect();
    Ok((study, runs, table, missing))
}

/// `hetsim merge --out`: a folder that is not one of the shards nor inside one (writing there
/// would overwrite the shard's own results).
pub fn check_merge_out(out: &Path, dirs: &[PathBuf]) -> Result<(), Error> {
    let target = resolved(out);
    match dirs.iter().find(|d| target.starts_with(resolved(d))) {
        Some(d) => Err(Error::Input(format!(
            "merge: --out {} is inside the shard folder {}; choose a folder of its own",
            out.display(),
            d.display()
        ))),
        None => Ok(()),
    }
}

/// `path` with symbolic links and `..` resolved as far as it exists.
fn resolved(path: &Path) -> PathBuf {
    let abs = std::path::absolute(path).unwrap_or_else(|_| path.to_path_buf());
    let mut base = abs.as_path();
    let mut rest = Vec::new();
    loop {
        if let Ok(real) = base.canonicalize() {
            return rest.iter().rev().fold(real, |p, c| p.join(c));
        }
        match (base.parent(), base.file_name()) {
            (Some(parent), Some(name)) => {
                rest.push(name.to_os_string());
                base = parent;
            }
            _ => return abs,
        }
    }
}
