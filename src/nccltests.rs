//! `hetsim nccl-tests`: NVIDIA's nccl-tests (all_reduce_perf and friends) on a simulated
//! platform, printing their table.
//!
//! Each size is one simulation: every GPU's host thread launches `warmup` calls, synchronises,
//! then launches `iters` calls back to back on one stream and synchronises again, as
//! nccl-tests' timing loop does; time = the mean over GPUs of that span / iters. algbw and
//! busbw follow nccl-tests' formulas (doc/PERFORMANCE.md). Out-of-place and in-place
//! operations move the same bytes over the same links in this model, so both columns carry the
//! same simulated time; data are not computed, so #wrong is N/A (as with `-c 0`).

use rayon::prelude::*;
use std::path::PathBuf;

use hetsim_schema::budget;
use hetsim_schema::cuda::{Algo, Coll, CudaOp, CudaSpec, NcclCall, NcclSpec, Proto};
use hetsim_schema::load::parse_scenario;
use hetsim_schema::scenario::{OutputSpec, Scenario, Workload};
use hetsim_schema::units::Bytes;
use hetsim_systems::cuda::CudaReport;

use crate::{Error, RunOptions, simulate};

/// nccl-tests' default data type, float.
const TYPE_SIZE: f64 = 4.0;

/// What to run.
#[derive(Debug, Clone)]
pub struct Options {
    pub op: Coll,
    pub sizes: Vec<f64>,
    pub gpus: u32,
    pub platform: PathBuf,
    /// Platform overrides (`platform.nodes=128`).
    pub set: Vec<String>,
    /// Forced algorithms and protocols; empty: NCCL's choice.
    pub algos: Vec<Algo>,
    pub protos: Vec<Proto>,
    pub channels: Option<u32>,
    pub iters: u32,
    pub warmup: u32,
}

/// One line of the table.
#[derive(Debug, Clone, PartialEq)]
pub struct Row {
    /// `ring/Simple`, or `auto` when NCCL chose.
    pub variant: String,
    pub bytes: f64,
    pub count: u64,
    pub time_us: f64,
    pub algbw: f64,
    pub busbw: f64,
    /// What NCCL picked (the forced pair, or its cost model's choice).
    pub algo: String,
    pub proto: String,
}

/// (algorithm, protocol) pairs to sweep: every forced combination, or NCCL's choice.
fn variants(o: &Options) -> Vec<(Option<Algo>, Option<Proto>)> {
    let algos: Vec<Option<Algo>> = if o.algos.is_empty() {
        vec![None]
    } else {
        o.algos.iter().map(|&a| Some(a)).collect()
    };
    let protos: Vec<Option<Proto>> = if o.protos.is_empty() {
        vec![None]
    } else {
        o.protos.iter().map(|&p| Some(p)).collect()
    };
    algos
        .iter()
        .flat_map(|&a| protos.iter().map(move |&p| (a, p)))
        .collect()
}

fn variant_name(a: Option<Algo>, p: Option<Proto>) -> String {
    match (a, p) {
        (None, None) => "auto".into(),
        (a, p) => format!(
            "{}/{}",
            a.map_or("auto", |a| a.name()),
            p.map_or("auto", |p| p.name())
        ),
    }
}

/// The buffer nccl-tests really uses for a requested size, and the count it prints: per-rank
/// (per-peer for alltoall) counts are rounded down to a multiple of 16 bytes.
pub fn buffer(op: Coll, size: f64, n: u32) -> (f64, u64) {
    let n = n as f64;
    match op {
        Coll::AllGather | Coll::ReduceScatter | Coll::AllToAll => {
            let per = ((size / n / 16.0).floor() * 16.0).max(0.0);
            (per * n, (per / TYPE_SIZE) as u64)
        }
        _ => (size, (size / TYPE_SIZE) as u64),
    }
}

/// The scenario of every measurement, read once.
fn base_scenario(o: &Options) -> Result<Scenario, Error> {
    let (platform, dir) = crate::platform_arg(&o.platform)?;
    let text = format!(
        r#"Scenario(name: "nccl-tests", platform: {platform}, workload: Cuda(program: []))"#
    );
    let mut scenario = parse_scenario(&text, "nccl-tests", &dir, &o.set)
        .map_err(|e| Error::Input(format!("--platform: {e}")))?;
    scenario.output = OutputSpec::tables_only();
    Ok(scenario)
}

fn measure(
    base: &Scenario,
    o: &Options,
    (algo, proto): (Option<Algo>, Option<Proto>),
    size: f64,
) -> Result<Row, Error> {
    let (bytes, count) = buffer(o.op, size, o.gpus);
    let call = CudaOp::Nccl(NcclCall {
        op: o.op,
        bytes: Bytes(bytes),
        stream: 0,
        root: 0,
        peer: 1,
    });
    let mut program = vec![call.clone(); o.warmup as usize];
    program.push(CudaOp::StreamSync(0));
    program.push(CudaOp::Mark("start".into()));
    program.extend(std::iter::repeat_n(call, o.iters as usize));
    program.push(CudaOp::StreamSync(0));
    program.push(CudaOp::Mark("end".into()));
    let mut scenario = base.clone();
    scenario.workload = Workload::Cuda(CudaSpec {
        gpus: Some(o.gpus),
        nccl: NcclSpec {
            channels: o.channels,
            algo,
            proto,
            ..NcclSpec::default()
        },
        ..CudaSpec::new(program)
    });
    let (app, _) = simulate(&scenario, &RunOptions::default()).map_err(|e| match e {
        // The scenario's fields are the command's flags.
        Error::Input(m) => Error::Input(m.replacen("workload.Cuda.gpus", "-g", 1)),
        e => e.blame_time_overflow_on(|| format!("-e: a buffer of {bytes} B")),
    })?;
    let report = app
        .world()
        .get_resource::<CudaReport>()
        .ok_or_else(|| Error::Run("the run left no CUDA report".into()))?;
    let spans: Vec<f64> = report
        .devices
        .iter()
        .filter_map(|d| {
            let at = |n: &str| d.marks.iter().find(|m| m.0 == n).map(|m| m.1);
            Some(at("end")? - at("start")?)
        })
        .collect();
    let time_s = spans.iter().sum::<f64>() / spans.len().max(1) as f64 / o.iters.max(1) as f64;
    let last = report.collectives.last();
    let algbw = if time_s > 0.0 {
        bytes / 1e9 / time_s
    } else {
        0.0
    };
    Ok(Row {
        variant: variant_name(algo, proto),
        bytes,
        count,
        time_us: time_s * 1e6,
        algbw,
        busbw: algbw * o.op.bus_factor(o.gpus),
        algo: last.map_or("-".into(), |c| c.algo.clone()),
        proto: last.map_or("-".into(), |c| c.proto.clone()),
    })
}

/// Every variant x size, in parallel; rows in variant then size order.
pub fn run(o: &Options) -> Result<Vec<Row>, Error> {
    if o.gpus == 0 {
        return Err(Error::Input("-g: expected at least one GPU".into()));
    }
    if o.iters == 0 {
        return Err(Error::Input("-n: expected at least one iteration".into()));
    }
    let base = base_scenario(o)?;
    // Every size's program holds its calls on every GPU; sizes run in parallel.
    let calls = o.warmup as f64 + o.iters as f64;
    let work = budget::StreamWork {
        items: 0.0,
        collectives: calls * o.gpus as f64 * rayon::current_num_threads() as f64,
    };
    let what = format!("{calls:.3e} calls on each of {} GPUs", o.gpus);
    budget::check_estimate(
        budget::stream_items("-n, -w", what, work),
        budget::limit(&base),
    )
    .map_err(|(flag, why)| Error::Input(format!("{flag}: {why}")))?;
    let jobs: Vec<_> = variants(o)
        .into_iter()
        .flat_map(|v| o.sizes.iter().map(move |&s| (v, s)))
        .collect();
    jobs.par_iter()
        .map(|&(v, s)| measure(&base, o, v, s))
        .collect()
}

fn redop(op: Coll) -> &'static str {
    match op {
        Coll::AllReduce | Coll::Reduce | Coll::ReduceScatter => "sum",
        _ => "none",
    }
}

fn root(op: Coll) -> i32 {
    match op {
        Coll::Broadcast | Coll::Reduce => 0,
        _ => -1,
    }
}

/// The nccl-tests table, one block per variant, with the "Avg bus bandwidth" footer.
pub fn table(rows: &[Row], o: &Options) -> String {
    let mut out = format!(
        "# nccl-tests {}_perf, simulated by hetsim on {} ({} GPUs)\n#  minBytes {} maxBytes {} iters: {} warmup iters: {} validation: 0\n",
        o.op.name(),
        o.platform.display(),
        o.gpus,
        o.sizes.first().copied().unwrap_or(0.0),
        o.sizes.last().copied().unwrap_or(0.0),
        o.iters,
        o.warmup
    );
    for (a, p) in variants(o) {
        let v = variant_name(a, p);
        out.push_str(&format!("#\n# algorithm/protocol: {v}\n#\n"));
        out.push_str(&format!(
            "# {:>10}  {:>12}  {:>8}  {:>6}  {:>6}  {:>7}  {:>6}  {:>6}  {:>6}  {:>7}  {:>6}  {:>6}  {:>6}  {}\n",
            "", "", "", "", "", "out-of-place", "", "", "", "in-place", "", "", "", "chosen"
        ));
        out.push_str(&format!(
            "# {:>10}  {:>12}  {:>8}  {:>6}  {:>6}  {:>7}  {:>6}  {:>6}  {:>6}  {:>7}  {:>6}  {:>6}  {:>6}\n",
            "size", "count", "type", "redop", "root", "time", "algbw", "busbw", "#wrong", "time", "algbw", "busbw", "#wrong"
        ));
        out.push_str(&format!(
            "# {:>10}  {:>12}  {:>8}  {:>6}  {:>6}  {:>7}  {:>6}  {:>6}  {:>6}  {:>7}  {:>6}  {:>6}  {:>6}\n",
            "(B)", "(elements)", "", "", "", "(us)", "(GB/s)", "(GB/s)", "", "(us)", "(GB/s)", "(GB/s)", ""
        ));
        let mine: Vec<&Row> = rows.iter().filter(|r| r.variant == v).collect();
        for r in &mine {
            let cols = format!(
                "{:>7.2}  {:>6.2}  {:>6.2}  {:>6}",
                r.time_us, r.algbw, r.busbw, "N/A"
            );
            out.push_str(&format!(
                "  {:>10}  {:>12}  {:>8}  {:>6}  {:>6}  {cols}  {cols}  {}/{}\n",
                r.bytes as u64,
                r.count,
                "float",
                redop(o.op),
                root(o.op),
                r.algo,
                r.proto
            ));
        }
        let avg = if mine.is_empty() {
            0.0
        } else {
            mine.iter().map(|r| r.busbw).sum::<f64>() / mine.len() as f64
        };
        out.push_str("# Out of bounds values : 0 OK\n");
        out.push_str(&format!("# Avg bus bandwidth    : {avg:.4} \n"));
        if let Some(note) = nvls_note(&mine, o) {
            out.push_str(&note);
        }
    }
    out
}

/// For tables with NVLS rows: busbw uses nccl-tests' ring factor, but NVLS moves S (n+1)/n
/// through each GPU's switch port (AllReduce; S for AllGather and ReduceScatter), so the
/// port's bandwidth is algbw x (n+1)/n: printed at the largest NVLS size.
fn nvls_note(rows: &[&Row], o: &Options) -> Option<String> {
    let last = rows.iter().rev().find(|r| r.algo == "nvls")?;
    let n = o.gpus as f64;
    let (moved, what) = match o.op {
        Coll::AllReduce => ((n + 1.0) / n, "S (n+1)/n"),
        _ => (1.0, "S"),
    };
    Some(format!(
        "# nvls rows: busbw uses the ring factor {:.3}; NVLS moves {what} through each GPU's switch port,\n#   so the port carries algbw x {moved:.3} = {:.2} GB/s at {} B\n",
        o.op.bus_factor(o.gpus),
        last.algbw * moved,
        last.bytes as u64
    ))
}

/// `nccl_tests.csv`.
pub fn csv(rows: &[Row], o: &Options) -> Vec<u8> {
    let mut s = String::from(
        "op,gpus,variant,size_B,count,type,redop,root,time_us,algbw_GBps,busbw_GBps,algo,proto\n",
    );
    for r in rows {
        s.push_str(&format!(
            "{},{},{},{},{},float,{},{},{},{},{},{},{}\n",
            o.op.name(),
            o.gpus,
            r.variant,
            r.bytes,
            r.count,
            redop(o.op),
            root(o.op),
            r.time_us,
            r.algbw,
            r.busbw,
            r.algo,
            r.proto
        ));
    }
    s.into_bytes()
}

/// busbw against size, one line per variant (log size axis).
pub fn chart(rows: &[Row], o: &Options) -> hetsim_output::plot::LineChart {
    use hetsim_output::plot::{LineChart, Series};
    let series = variants(o)
        .into_iter()
        .map(|(a, p)| {
            let v = variant_name(a, p);
            Series {
                label: if v == "auto" {
                    "NCCL's choice".into()
                } else {
                    v.clone()
                },
                points: rows
                    .iter()
                    .filter(|r| r.variant == v && r.bytes > 0.0)
                    .map(|r| (r.bytes, r.busbw))
                    .collect(),
                style: Default::default(),
                gaps: Vec::new(),
            }
        })
        .collect();
    LineChart {
        title: format!("{}: bus bandwidth on {} GPUs", o.op.name(), o.gpus),
        note: Some(format!(
            "simulated on {}; busbw = algbw x {:.3} (nccl-tests){}",
            o.platform.display(),
            o.op.bus_factor(o.gpus),
            if rows.iter().any(|r| r.algo == "nvls") && o.op == Coll::AllReduce {
                "; NVLS moves S (n+1)/n through each switch port, not the ring's 2(n-1)/n"
            } else {
                ""
            }
        )),
        x_desc: "message size (bytes, log scale)".into(),
        y_desc: "bus bandwidth (GB/s)".into(),
        log_x: true,
        log_y: false,
        markers: true,
        series,
        size: (1100, 650),
    }
}

/// `--op` values, named as nccl-tests' binaries.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum OpArg {
    #[value(name = "all_reduce")]
    AllReduce,
    #[value(name = "all_gather")]
    AllGather,
    #[value(name = "reduce_scatter")]
    ReduceScatter,
    #[value(name = "broadcast")]
    Broadcast,
    #[value(name = "reduce")]
    Reduce,
    #[value(name = "alltoall")]
    AllToAll,
    #[value(name = "sendrecv")]
    SendRecv,
}

impl From<OpArg> for Coll {
    fn from(o: OpArg) -> Coll {
        match o {
            OpArg::AllReduce => Coll::AllReduce,
            OpArg::AllGather => Coll::AllGather,
            OpArg::ReduceScatter => Coll::ReduceScatter,
            OpArg::Broadcast => Coll::Broadcast,
            OpArg::Reduce => Coll::Reduce,
            OpArg::AllToAll => Coll::AllToAll,
            OpArg::SendRecv => Coll::SendRecv,
        }
    }
}

/// `--algo` values (NCCL_ALGO).
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum AlgoArg {
    Ring,
    Tree,
    Nvls,
    Nvlstree,
    Pat,
    Collnetdirect,
    Collnetchain,
}

impl From<AlgoArg> for Algo {
    fn from(a: AlgoArg) -> Algo {
        match a {
            AlgoArg::Ring => Algo::Ring,
            AlgoArg::Tree => Algo::Tree,
            AlgoArg::Nvls => Algo::NVLS,
            AlgoArg::Nvlstree => Algo::NVLSTree,
            AlgoArg::Pat => Algo::PAT,
            AlgoArg::Collnetdirect => Algo::CollNetDirect,
            AlgoArg::Collnetchain => Algo::CollNetChain,
        }
    }
}

/// `--proto` values (NCCL_PROTO).
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum ProtoArg {
    #[value(name = "LL")]
    Ll,
    #[value(name = "LL128")]
    Ll128,
    #[value(name = "Simple")]
    Simple,
}

impl From<ProtoArg> for Proto {
    fn from(p: ProtoArg) -> Proto {
        match p {
            ProtoArg::Ll => Proto::LL,
            ProtoArg::Ll128 => Proto::LL128,
            ProtoArg::Simple => Proto::Simple,
        }
    }
}
