//! The task runtime against StarPU 1.4.12's own simulator (StarPU-SimGrid over SimGrid 3.32).
//!
//! `tests/data/starpu-simgrid/results-visible.csv` holds 220 StarPU-SimGrid predictions of
//! cholesky_implicit and lu_implicit_example_float (mirage and attila, eager/ws/dmda/dmdar/dmdas,
//! GPU-only and with 8 CPU workers, 8 to 80 tiles); its README gives the exact commands. Each
//! row is run here through `scenarios/cholesky-attila.ron` / `lu-attila.ron` with the row's
//! machine, workers, scheduler, size and memory cap, and hetsim's GFlop/s must land within
//! 10 % of StarPU's, every one of them (issue 21's acceptance check). The test prints the
//! error table by group. Rows whose StarPU answer is one sample of a wide spread (ws and
//! eager with 8 CPUs) are also run as ensembles: nine runs each, perturbed as
//! `ensembles-1.4.10.csv` says, the medians within 10 %. The team's own StarPU-SimGrid runs at
//! other caps (`oracle-1.4.10.csv`) are held to 10 %, but for the rows of [`ORACLE_MISSES`]
//! (25 %), and the memory-capped rows run with prefetch off in both (`noprefetch-1.4.10.csv`)
//! to 10 %.
//!
//! `HETSIM_REF_FILTER=mirage,lu` (comma-separated substrings of `machine app sched ncpu cap`)
//! runs a subset; `HETSIM_REF_ROWS=1` prints every row; `HETSIM_REF_CSV=file` runs the rows
//! of another file of the same columns (for example predictions made with
//! `tools/starpu-simgrid/run.sh`) and only reports them.

mod common;

use std::collections::BTreeMap;

use hetsim::schema::load::load_scenario;
use hetsim::schema::scenario::OutputSpec;
use hetsim::systems::runtime::RuntimeReport;
use hetsim::{RunOptions, simulate};
use rayon::prelude::*;

/// Beyond this relative error a row fails (the acceptance bound).
const TOLERANCE: f64 = 0.10;

// History of the last visible misses (issue 21's notes):
// - attila Cholesky ws with 8 CPUs at 24 tiles was +16.7 % until, on 2026-11-27, a request
//   made while the GPU driver that handles it is in its loop began to wait for the end of
//   that driver's progress (a CPU's fetch of a tile on a GPU, handled by the GPU's driver);
//   it is +3.8 % now. These ws and eager rows with 8 CPUs are chaotic in StarPU itself: a
//   0.1 % change of one CPU codelet time moves its answer by up to 14 % (attila 24 tiles:
//   965.6 as calibrated, 966-1103 GFlop/s over nine perturbed runs), so they are also held to
//   the median of nine perturbed runs (`chaotic_rows_within_ten_percent_of_starpu_simgrids_
//   ensemble_median`). What the driver threads still do not model is finer than a thread's
//   sleeps: which thread releases a task that several threads' ends unblock at one instant,
//   a pusher's walk holding each worker's mutex, and ws's failed trylock on a victim (1 us
//   and a retry: 141 of 846 steal attempts in StarPU's log of attila Cholesky 24 tiles).
// - attila Cholesky dmdas with 8 CPUs at 1024 MB and 64 tiles (-12.2 %) came within 10 % with
//   two StarPU rules of 2026-11-27: a request served before another task's queued request for
//   the same data loads them itself, and StarPU's exact sub-allocator (32 MiB chunks counted
//   against the limit).

/// Rows of `oracle-1.4.10.csv` (caps the visible file lacks) beyond 10 % today:
/// - attila Cholesky ws with 8 CPUs at 512 MB, 24 tiles (-11.9 %): the chaotic ws row of the
///   ensembles at another cap. StarPU itself gives 965.6 GFlop/s at 1024, 2763 and 4837 MB
///   and 1083.0 at 512 MB (24 tiles fit in 512 MB per GPU but for a few evictions); hetsim
///   gives 1002.8, 1023.7, 1023.7 and 953.8.
///
/// Came within 10 % on 2026-11-27: Cholesky dmda with 8 CPUs at 512 MB and 80 tiles (-14.2 % on
/// attila, -16.2 % on mirage; now -4.6 and -6.2 %) when a driver whose task ended began to make
/// its progress before popping, as StarPU's driver loop does (the write-back a prefetch starts
/// there holds the pop; popping first ran the GPUs 10 % faster than StarPU's in the first
/// second, their prefetches fell behind their pops, and fetches evicting pinned data kept them
/// there); and the chaotic ws and eager rows (attila Cholesky ws 24 tiles at 2763 and 4837 MB,
/// +14.9 -> +6.0 %; mirage LU ws 32 tiles at 1024 MB, +10.8 -> +4.9 %; attila LU eager 16 tiles
/// at 512 MB, +15.2 -> +3.8 %) when a request made while the GPU driver that handles it is in
/// its loop began to wait for the end of that driver's progress.
///
/// Each is held to [`ORACLE_MISS_BOUND`] so that none silently gets worse.
const ORACLE_MISSES: &[Spot] = &[("attila", "cholesky", "ws", 8, 512, 24)];

/// The bound on an oracle row of [`ORACLE_MISSES`].
const ORACLE_MISS_BOUND: f64 = 0.25;

/// A row named in a miss list: machine, app, scheduler, CPU workers, GPU memory cap (MB) and
/// tiles per side.
type Spot = (&'static str, &'static str, &'static str, u32, u64, u32);

#[derive(Debug, Clone)]
struct Row {
    machine: String,
    app: String,
    sched: String,
    ncuda: u32,
    ncpu: u32,
    nblocks: u32,
    n: u64,
    cap_mb: u64,
    gflops: f64,
}

impl Row {
    /// Whether the row is one of `spots`.
    fn spot(&self, spots: &[Spot]) -> bool {
        spots.iter().any(|&(m, a, s, c, cap, b)| {
            (m, a, s, c, cap, b)
                == (
                    self.machine.as_str(),
                    self.app.as_str(),
                    self.sched.as_str(),
                    self.ncpu,
                    self.cap_mb,
                    self.nblocks,
                )
        })
    }

    fn key(&self) -> String {
        format!(
            "{} {} {} ncpu={} cap={}",
            self.machine, self.app, self.sched, self.ncpu, self.cap_mb
        )
    }

    /// hetsim's relative error against StarPU's GFlop/s.
    fn error(&self, got: f64) -> f64 {
        (got - self.gflops) / self.gflops
    }

    /// The report line of the row.
    fn line(&self, got: f64) -> String {
        format!(
            "{:<40} nb={:>2} starpu {:>7.1} hetsim {:>7.1} {:>+6.1} %",
            self.key(),
            self.nblocks,
            self.gflops,
            got,
            100.0 * self.error(got)
        )
    }

    /// What a failing row says.
    fn miss(&self, got: f64) -> String {
        format!(
            "{} nblocks={}: StarPU {:.1}, hetsim {:.1} GFlop/s ({:+.1} %)",
            self.key(),
            self.nblocks,
            self.gflops,
            got,
            100.0 * self.error(got)
        )
    }
}

/// A row of a reference file from its fields (the columns of `results-visible.csv`).
fn row_of(r: &csv::StringRecord) -> Row {
    Row {
        machine: r[0].to_string(),
        app: r[1].to_string(),
        sched: r[2].to_string(),
        ncuda: r[3].parse().unwrap(),
        ncpu: r[4].parse().unwrap(),
        nblocks: r[5].parse().unwrap(),
        n: r[7].parse().unwrap(),
        cap_mb: r[8].parse().unwrap(),
        gflops: r[10].parse().unwrap(),
    }
}

/// Whether a row is among those `HETSIM_REF_FILTER` asks for.
fn wanted(row: &Row) -> bool {
    let filter = std::env::var("HETSIM_REF_FILTER").unwrap_or_default();
    let key = row.key();
    filter.split(',').all(|f| key.contains(f.trim()))
}

/// The rows of a reference file.
fn rows(path: &std::path::Path) -> Vec<Row> {
    let mut reader = csv::Reader::from_path(path).unwrap();
    reader
        .records()
        .map(|rec| row_of(&rec.unwrap()))
        .filter(wanted)
        .collect()
}

/// hetsim's GFlop/s for one row, run as the README of the reference data says.
fn predict(row: &Row) -> f64 {
    predict_with(row, &[], &[])
}

/// hetsim's GFlop/s for each row, as calibrated (in parallel).
fn predict_all(rows: &[Row]) -> Vec<(Row, f64)> {
    rows.par_iter()
        .map(|row| (row.clone(), predict(row)))
        .collect()
}

/// hetsim's GFlop/s for one row, with more `--set`s and more switches off.
fn predict_with(row: &Row, more: &[String], off: &[&str]) -> f64 {
    let file = common::repo().join(format!("scenarios/{}-attila.ron", row.app));
    let mut sets = vec![
        format!("platform.hostname={}", row.machine),
        format!("platform.ncuda={}", row.ncuda),
        format!("platform.ncpu={}", row.ncpu),
        format!("runtime.scheduler={}", row.sched),
        format!("workload.n={}", row.n),
        format!("platform.limit_cuda_mem_mb={}", row.cap_mb),
    ];
    sets.extend_from_slice(more);
    let mut scenario = load_scenario(&file, &sets).unwrap();
    scenario.output = OutputSpec::tables_only();
    let mut disable = vec!["record".to_string()];
    disable.extend(off.iter().map(|s| s.to_string()));
    let opts = RunOptions {
        disable,
        progress: false,
        ..Default::default()
    };
    let (app, _) = simulate(&scenario, &opts).unwrap();
    app.world().resource::<RuntimeReport>().gflops
}

#[test]
fn visible_rows_within_ten_percent_of_starpu_simgrid() {
    // The visible reference, or the file `HETSIM_REF_CSV` names (same columns).
    let other = std::env::var_os("HETSIM_REF_CSV").map(std::path::PathBuf::from);
    let rows = match &other {
        Some(path) => rows(path),
        None => rows(&common::repo().join("tests/data/starpu-simgrid/results-visible.csv")),
    };
    assert!(!rows.is_empty(), "no row matches HETSIM_REF_FILTER");
    let results = predict_all(&rows);
    let verbose = std::env::var("HETSIM_REF_ROWS").is_ok();
    let misses = beyond_bounds(&results, &[], TOLERANCE, verbose);
    print_groups(&results);
    if other.is_some() {
        return;
    }
    let total = results.len();
    assert!(
        misses.is_empty(),
        "{} of {total} rows beyond 10 % of StarPU-SimGrid:\n{}",
        misses.len(),
        misses.join("\n")
    );
}

/// `oracle-1.4.10.csv`: StarPU-SimGrid's predictions at the caps the visible file lacks (attila
/// at 512, 2763 and 4837 MB per GPU, mirage at 512, 1024 and 2763 MB; LU on mirage and
/// attila at 512, 1024 and 2763 MB), made by hetsim's team with `tools/starpu-simgrid/run.sh` (StarPU 1.4.10, which
/// reproduces every visible row to the printed digit). Each row within 10 %, the rows of
/// [`ORACLE_MISSES`] within 25 %.
#[test]
fn oracle_rows_within_ten_percent_of_starpu_simgrid() {
    let rows = rows(&common::repo().join("tests/data/starpu-simgrid/oracle-1.4.10.csv"));
    assert!(!rows.is_empty(), "no row matches HETSIM_REF_FILTER");
    let results = predict_all(&rows);
    let verbose = std::env::var("HETSIM_REF_ROWS").is_ok();
    let misses = beyond_bounds(&results, ORACLE_MISSES, ORACLE_MISS_BOUND, verbose);
    print_groups(&results);
    assert!(
        misses.is_empty(),
        "{} of {} oracle rows beyond their bound (10 %, listed misses 25 %) of StarPU-SimGrid:\n{}",
        misses.len(),
        results.len(),
        misses.join("\n")
    );
}

/// What each row beyond its bound says: 10 %, or `miss_bound` for the rows of `known`
/// (printing those now within 10 %); `verbose` prints every row.
fn beyond_bounds(
    results: &[(Row, f64)],
    known: &[Spot],
    miss_bound: f64,
    verbose: bool,
) -> Vec<String> {
    let mut misses = Vec::new();
    for (row, got) in results {
        let err = row.error(*got);
        if verbose {
            println!("{}", row.line(*got));
        }
        let listed = row.spot(known);
        if listed && err.abs() <= TOLERANCE {
            println!(
                "now within 10 %, drop it from the misses: {}",
                row.line(*got)
            );
        }
        let bound = if listed { miss_bound } else { TOLERANCE };
        if err.abs() > bound {
            misses.push(row.miss(*got));
        }
    }
    misses
}

/// The error table by group (machine, app, scheduler, CPU workers, cap), and how many rows
/// are within 10 %.
fn print_groups(results: &[(Row, f64)]) {
    let mut groups: BTreeMap<String, Vec<f64>> = BTreeMap::new();
    for (row, got) in results {
        groups.entry(row.key()).or_default().push(row.error(*got));
    }
    println!(
        "{:<40} {:>5} {:>9} {:>9} {:>7}",
        "group", "rows", "median %", "worst %", "within"
    );
    for (key, errs) in &groups {
        let mut abs: Vec<f64> = errs.iter().map(|e| e.abs()).collect();
        abs.sort_by(f64::total_cmp);
        let worst = errs
            .iter()
            .copied()
            .max_by(|a, b| a.abs().total_cmp(&b.abs()));
        let within = abs.iter().filter(|e| **e <= TOLERANCE).count();
        println!(
            "{:<40} {:>5} {:>9.1} {:>+9.1} {:>3}/{}",
            key,
            errs.len(),
            100.0 * abs[abs.len() / 2],
            100.0 * worst.unwrap(),
            within,
            errs.len()
        );
    }
    let within = results
        .iter()
        .filter(|(row, got)| row.error(*got).abs() <= TOLERANCE)
        .count();
    let mean = results
        .iter()
        .map(|(row, got)| row.error(*got).abs())
        .sum::<f64>()
        / results.len() as f64;
    println!(
        "{within} of {} rows within 10 %, mean abs error {:.2} %",
        results.len(),
        100.0 * mean
    );
}

/// Rows where one StarPU-SimGrid run is one sample of a spread: `ensembles-1.4.10.csv` holds,
/// for the ws and eager rows with 8 CPU workers at 16 to 32 tiles, StarPU's prediction as
/// calibrated and with each of the application's four CPU codelet times scaled by 0.999 and
/// by 1.001 (`tools/starpu-simgrid/ensemble.sh`; StarPU 1.4.10, which reproduces every
/// visible row). A 0.1 % change of one time moves StarPU's own GFlop/s by up to 20 % on these
/// rows (mirage Cholesky ws 24 tiles: 972.8 as calibrated, 1100.7 with the CPU GEMM 0.1 %
/// faster; eager 16 tiles: 783.9, and 630.0 with one perturbation): which worker takes a
/// critical task first decides the tail, and a CPU runs a GEMM 30 times slower than a GPU.
/// hetsim runs the same nine perturbations (the same rows of its copy of the calibration
/// files scaled), and the medians of the two ensembles must agree within 10 %: what a row
/// that one run cannot pin down can be held to.
#[test]
fn chaotic_rows_within_ten_percent_of_starpu_simgrids_ensemble_median() {
    let path = common::repo().join("tests/data/starpu-simgrid/ensembles-1.4.10.csv");
    let mut reader = csv::Reader::from_path(path).unwrap();
    let members: Vec<(String, Row)> = reader
        .records()
        .map(|rec| {
            let rec = rec.unwrap();
            let fields: csv::StringRecord = rec.iter().skip(1).collect();
            (rec[0].to_string(), row_of(&fields))
        })
        .filter(|(_, row)| wanted(row))
        .collect();
    assert!(!members.is_empty(), "no row matches HETSIM_REF_FILTER");
    let labels: std::collections::BTreeSet<&str> =
        members.iter().map(|(label, _)| label.as_str()).collect();
    let dirs: BTreeMap<&str, tempfile::TempDir> = labels
        .into_iter()
        .filter(|&label| label != "nominal")
        .map(|label| (label, perturbed_machines(label)))
        .collect();
    let results: Vec<(&Row, f64)> = members
        .par_iter()
        .map(|(label, row)| {
            let more: Vec<String> = dirs
                .get(label.as_str())
                .map(|d| vec![format!("platform.dir={}", d.path().display())])
                .unwrap_or_default();
            (row, predict_with(row, &more, &[]))
        })
        .collect();
    let mut ensembles: BTreeMap<(String, u32), (Vec<f64>, Vec<f64>)> = BTreeMap::new();
    for (row, got) in results {
        let e = ensembles.entry((row.key(), row.nblocks)).or_default();
        e.0.push(row.gflops);
        e.1.push(got);
    }
    let mut misses = Vec::new();
    for ((key, nblocks), (starpu, hetsim)) in &mut ensembles {
        let (s, h) = (median(starpu), median(hetsim));
        let err = (h - s) / s;
        println!(
            "{key:<40} nb={nblocks:>2} starpu median {s:>7.1} [{:.0}-{:.0}] hetsim median \
             {h:>7.1} [{:.0}-{:.0}] {:>+6.1} %",
            starpu[0],
            starpu[starpu.len() - 1],
            hetsim[0],
            hetsim[hetsim.len() - 1],
            100.0 * err
        );
        if err.abs() > TOLERANCE {
            misses.push(format!("{key} nblocks={nblocks}: {:+.1} %", 100.0 * err));
        }
    }
    assert!(
        misses.is_empty(),
        "ensemble medians beyond 10 % of StarPU-SimGrid's:\n{}",
        misses.join("\n")
    );
}

/// The memory model without prefetch: `noprefetch-1.4.10.csv` holds StarPU-SimGrid's
/// predictions of the attila rows under memory pressure (1024 MB per GPU, dm* at 48 and 64
/// tiles, GPU-only and with 8 CPUs) run with `STARPU_PREFETCH=0` (`tools/starpu-simgrid/run.sh`,
/// StarPU 1.4.10). With prefetch off, data move only when a popped task fetches them, so these
/// rows check allocation, eviction and write-back alone; hetsim runs them with its `prefetch`
/// switch off and must land within 10 % of each (12 rows: within 2.0 %, mean abs 0.9 %, with
/// the limit counting StarPU's 32 MiB chunks: `suballoc.rs`). With prefetch on, attila dmdas
/// 64 tiles with 8 CPUs gives StarPU 1679.4 and hetsim 1667.3; without, 1742.8 and 1742.2.
#[test]
fn memory_capped_rows_without_prefetch_within_ten_percent() {
    let path = common::repo().join("tests/data/starpu-simgrid/noprefetch-1.4.10.csv");
    let rows = rows(&path);
    assert!(!rows.is_empty(), "no row matches HETSIM_REF_FILTER");
    let results: Vec<(Row, f64)> = rows
        .par_iter()
        .map(|row| (row.clone(), predict_with(row, &[], &["prefetch"])))
        .collect();
    let misses = beyond_bounds(&results, &[], TOLERANCE, true);
    assert!(
        misses.is_empty(),
        "rows without prefetch beyond 10 % of StarPU-SimGrid's:\n{}",
        misses.join("\n")
    );
}

/// Sorts `v` and gives its median.
fn median(v: &mut [f64]) -> f64 {
    v.sort_by(f64::total_cmp);
    let n = v.len();
    if n % 2 == 1 {
        v[n / 2]
    } else {
        (v[n / 2 - 1] + v[n / 2]) / 2.0
    }
}

/// A copy of `scenarios/machines/` with one codelet's CPU times scaled, for a perturbation
/// labelled `model*factor` as `ensemble.sh` writes it: the mean of every history entry of
/// that model's CPU combinations, on every machine (run.sh's STARPU_SCALE_CPU).
fn perturbed_machines(label: &str) -> tempfile::TempDir {
    let (model, factor) = label.split_once('*').expect("a label model*factor");
    let factor: f64 = factor.parse().unwrap();
    let dir = tempfile::tempdir().unwrap();
    let src = common::repo().join("scenarios/machines");
    let mut scaled = 0;
    for entry in walk(&src) {
        let to = dir.path().join(entry.strip_prefix(&src).unwrap());
        std::fs::create_dir_all(to.parent().unwrap()).unwrap();
        let name = entry.file_name().unwrap().to_string_lossy();
        if name.starts_with(&format!("{model}.")) {
            let text = std::fs::read_to_string(&entry).unwrap();
            let new = scale_cpu_means(&text, factor);
            scaled += usize::from(new != text);
            std::fs::write(&to, new).unwrap();
        } else {
            std::fs::copy(&entry, &to).unwrap();
        }
    }
    assert!(scaled > 0, "{label}: no CPU time of {model} to scale");
    dir
}

/// Every file under `dir`.
fn walk(dir: &std::path::Path) -> Vec<std::path::PathBuf> {
    let mut files = Vec::new();
    for entry in std::fs::read_dir(dir).unwrap() {
        let path = entry.unwrap().path();
        if path.is_dir() {
            files.extend(walk(&path));
        } else {
            files.push(path);
        }
    }
    files
}

/// A StarPU performance model with the mean (4th field) of each history entry of its CPU
/// combinations (device type 0) multiplied by `factor`.
fn scale_cpu_means(text: &str, factor: f64) -> String {
    let mut cpu = false;
    let mut device_type_next = false;
    let mut out = String::with_capacity(text.len());
    for line in text.lines() {
        let fields: Vec<&str> = line.split_whitespace().collect();
        if line.starts_with("# device type") {
            device_type_next = true;
        } else if device_type_next && !line.starts_with('#') {
            cpu = fields.first() == Some(&"0");
            device_type_next = false;
        }
        let history = fields.len() == 8 && u32::from_str_radix(fields[0], 16).is_ok();
        if cpu && history && !line.starts_with('#') {
            let mean: f64 = fields[3].parse().unwrap();
            let mut scaled: Vec<String> = fields.iter().map(|f| f.to_string()).collect();
            // Six digits as run.sh's awk prints them, so both runs see the same time.
            scaled[3] = format!("{:.6e}", mean * factor);
            out.push_str(&scaled.join("\t"));
        } else {
            out.push_str(line);
        }
        out.push('\n');
    }
    out
}

#[test]
fn a_perturbation_scales_only_the_cpu_history_means() {
    // As mirage's LU models have it: the CUDA combination first, the CPU's after it.
    let model = "# COMB_0\n# device type (CPU - 0, CUDA - 1)\n1\n\
                 # hash size flops mean (us) dev (us) sum sum2 n\n\
                 f0ac7beb 4915200 0 876.0921 35.7 7.0e6 6.2e9 8075\n\
                 # COMB_3\n# device type (CPU - 0, CUDA - 1)\n0\n\
                 # hash size flops mean (us) dev (us) sum sum2 n\n\
                 f0ac7beb 4915200 0 26456.58 496.8 5.8e7 1.5e12 2200\n";
    let scaled = scale_cpu_means(model, 1.001);
    let lines: Vec<&str> = scaled.lines().collect();
    assert_eq!(
        lines[4],
        "f0ac7beb 4915200 0 876.0921 35.7 7.0e6 6.2e9 8075"
    );
    // 26456.58 x 1.001 = 26483.03658, printed with six digits as run.sh's awk does.
    assert_eq!(
        lines[9],
        "f0ac7beb\t4915200\t0\t2.648304e4\t496.8\t5.8e7\t1.5e12\t2200"
    );
}
