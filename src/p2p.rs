//! `hetsim p2p`: point-to-point latency and bandwidth between two GPUs of a platform, in the
//! spirit of the OSU micro-benchmarks (osu_latency, osu_bw).
//!
//! Latency: a ping-pong of one message each way; latency = round trip / 2. Bandwidth: a
//! window of `WINDOW` non-blocking sends back to back, then a 4-byte acknowledgement;
//! bandwidth = size x window / time. The simulation is deterministic, so one repetition
//! gives the figure that OSU's averaged loops approach.

use rayon::prelude::*;

use hetsim_schema::load::parse_scenario;
use hetsim_schema::mpi::ProgramSpec;
use hetsim_schema::scenario::{OutputSpec, Scenario, Workload};

use crate::{Error, RunOptions, simulate_report};

/// Messages in flight in the bandwidth test (osu_bw's default window).
pub const WINDOW: u32 = 64;

/// A communication mode of device buffers.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum Mode {
    Gpudirect,
    Hostcopy,
}

impl Mode {
    pub fn name(self) -> &'static str {
        match self {
            Mode::Gpudirect => "gpudirect",
            Mode::Hostcopy => "hostcopy",
        }
    }
}

/// One row of results.
#[derive(Debug, Clone, PartialEq)]
pub struct Row {
    pub mode: Mode,
    pub bytes: f64,
    pub latency_us: f64,
    pub bandwidth_mbps: f64,
}

/// Reads a size as scenarios do ([`hetsim_schema::units::parse_size`]): `1`, `64K`, `16M`,
/// `1G` (binary, as OSU and nccl-tests write them), `64KiB`, `1MB` (decimal).
pub fn parse_size(text: &str) -> Result<f64, String> {
    hetsim_schema::units::parse_size(text).map_err(|e| e.to_string())
}

/// The most sizes a sweep may measure (OSU and nccl-tests sweeps hold a few dozen).
pub const MAX_SIZES: usize = 1000;

/// Sizes from `begin` to `end` by `factor` (at most [`MAX_SIZES`]).
pub fn sizes(begin: f64, end: f64, factor: f64) -> Result<Vec<f64>, String> {
    if !(factor > 1.0 && end >= begin && begin >= 0.0 && end.is_finite() && factor.is_finite()) {
        return Err(format!(
            "expected 0 <= -b <= -e and -f > 1, got {begin}, {end}, {factor}"
        ));
    }
    // Each size is a simulation of its own: count them before making them.
    let count = ((end / begin.max(1.0)).max(1.0).ln() / factor.ln()).floor() + 2.0;
    if count > MAX_SIZES as f64 {
        return Err(format!(
            "-b {begin} -e {end} -f {factor} make {count:.3e} sizes, one simulation each; at most {MAX_SIZES}: raise -f or narrow -b..-e"
        ));
    }
    let mut v = vec![begin];
    let mut s = begin.max(1.0);
    if begin == 0.0 {
        v.push(1.0);
    }
    while s * factor <= end * (1.0 + 1e-12) {
        s *= factor;
        v.push(s);
    }
    v.dedup();
    Ok(v)
}

/// What to measure.
#[derive(Debug, Clone)]
pub struct P2pOptions {
    pub platform: std::path::PathBuf,
    pub from: String,
    pub to: String,
    pub modes: Vec<Mode>,
    pub sizes: Vec<f64>,
}

/// The scenario of every measurement, read once: two ranks on the two GPUs, no program yet.
fn base_scenario(opts: &P2pOptions) -> Result<Scenario, Error> {
    let (platform, dir) = crate::platform_arg(&opts.platform)?;
    let text = format!(
        r#"Scenario(
            name: "p2p",
            platform: {platform},
            workload: Mpi(ranks: 2, placement: Explicit([{:?}, {:?}]), program: TraceText([])),
        )"#,
        opts.from, opts.to,
    );
    let mut scenario = parse_scenario(&text, "p2p", &dir, &[])
        .map_err(|e| Error::Input(format!("--platform: {e}")))?;
    scenario.output = OutputSpec::tables_only();
    Ok(scenario)
}

fn simulate_trace(base: &Scenario, mode: Mode, trace: &str) -> Result<f64, Error> {
    let mut scenario = base.clone();
    if let Workload::Mpi(mpi) = &mut scenario.workload {
        mpi.program = ProgramSpec::TraceText(vec![("p2p".into(), trace.into())]);
    }
    let run = RunOptions {
        disable: match mode {
            Mode::Gpudirect => vec![],
            Mode::Hostcopy => vec!["gpudirect".into()],
        },
        progress: false,
        ..Default::default()
    };
    let report = simulate_report(&scenario, &run)?;
    Ok(report.summary["sim_time_s"].as_f64().unwrap_or(f64::NAN))
}

/// An error of the scenario a measurement runs, in the command's terms: the rank placements
/// are `--from` and `--to`, and a size whose transfer overflows simulated time is `-e`'s.
fn in_flag_terms(e: Error, bytes: f64) -> Error {
    let message = e.to_string();
    let flagged = [
        ("workload.Mpi.placement[0]", "--from"),
        ("workload.Mpi.placement[1]", "--to"),
    ]
    .iter()
    .find_map(|(field, flag)| {
        message
            .strip_prefix(field)
            .map(|rest| format!("{flag}{rest}"))
    });
    match flagged {
        Some(m) => Error::Input(m),
        None => e.blame_time_overflow_on(|| format!("-e: a message of {bytes} B")),
    }
}

fn measure(base: &Scenario, mode: Mode, bytes: f64) -> Result<Row, Error> {
    measure_size(base, mode, bytes).map_err(|e| in_flag_terms(e, bytes))
}

fn measure_size(base: &Scenario, mode: Mode, bytes: f64) -> Result<Row, Error> {
    let pingpong =
        format!("0 send 1 {bytes}\n1 recv 0 {bytes}\n1 send 0 {bytes}\n0 recv 1 {bytes}\n");
    let round_trip = simulate_trace(base, mode, &pingpong)?;
    let mut bw = String::new();
    for _ in 0..WINDOW {
        bw.push_str(&format!("0 isend 1 {bytes}\n1 irecv 0 {bytes}\n"));
    }
    bw.push_str("0 waitall\n1 waitall\n1 send 0 4\n0 recv 1 4\n");
    let window_time = simulate_trace(base, mode, &bw)?;
    Ok(Row {
        mode,
        bytes,
        latency_us: round_trip / 2.0 * 1e6,
        bandwidth_mbps: bytes * WINDOW as f64 / window_time / 1e6,
    })
}

/// Every mode x size, in parallel; rows in mode then size order.
pub fn run(opts: &P2pOptions) -> Result<Vec<Row>, Error> {
    let jobs: Vec<(Mode, f64)> = opts
        .modes
        .iter()
        .flat_map(|&m| opts.sizes.iter().map(move |&s| (m, s)))
        .collect();
    let base = base_scenario(opts)?;
    jobs.par_iter()
        .map(|&(m, s)| measure(&base, m, s))
        .collect()
}

/// The OSU-style tables, one block per mode.
pub fn table(rows: &[Row], opts: &P2pOptions) -> String {
    let mut out = String::new();
    for &mode in &opts.modes {
        out.push_str(&format!(
            "# hetsim p2p: {} -> {} ({}), one message each way / a window of {WINDOW}\n",
            opts.from,
            opts.to,
            mode.name()
        ));
        out.push_str(&format!(
            "# {:<10} {:>16} {:>18}\n",
            "Size", "Latency (us)", "Bandwidth (MB/s)"
        ));
        for r in rows.iter().filter(|r| r.mode == mode) {
            out.push_str(&format!(
                "{:<12} {:>16.2} {:>18.2}\n",
                r.bytes, r.latency_us, r.bandwidth_mbps
            ));
        }
        out.push('\n');
    }
    out
}

/// `p2p.csv`.
pub fn csv(rows: &[Row]) -> Vec<u8> {
    let mut s = String::from("mode,bytes,latency_us,bandwidth_MBps\n");
    for r in rows {
        s.push_str(&format!(
            "{},{},{},{}\n",
            r.mode.name(),
            r.bytes,
            r.latency_us,
            r.bandwidth_mbps
        ));
    }
    s.into_bytes()
}

/// Latency and bandwidth against size, one line per mode (log axes).
pub fn charts(
    rows: &[Row],
    opts: &P2pOptions,
) -> Vec<(&'static str, hetsim_output::plot::LineChart)> {
    use hetsim_output::plot::{LineChart, Series};
    let series = |f: fn(&Row) -> f64| -> Vec<Series> {
        opts.modes
            .iter()
            .map(|&m| Series {
                label: m.name().to_string(),
                points: rows
                    .iter()
                    .filter(|r| r.mode == m && r.bytes > 0.0)
                    .map(|r| (r.bytes, f(r)))
                    .collect(),
                style: Default::default(),
                gaps: Vec::new(),
            })
            .collect()
    };
    let chart = |title: &str, y: &str, s: Vec<Series>| LineChart {
        title: format!("{title}: {} -> {}", opts.from, opts.to),
        note: Some(format!("simulated on {}", opts.platform.display())),
        x_desc: "message size (bytes, log scale)".into(),
        y_desc: y.into(),
        log_x: true,
        log_y: true,
        markers: true,
        series: s,
        size: (1100, 650),
    };
    vec![
        (
            "p2p_latency",
            chart(
                "Latency",
                "latency (us, log scale)",
                series(|r| r.latency_us),
            ),
        ),
        (
            "p2p_bandwidth",
            chart(
                "Bandwidth",
                "bandwidth (MB/s, log scale)",
                series(|r| r.bandwidth_mbps),
            ),
        ),
    ]
}
