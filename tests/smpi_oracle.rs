//! MPI point-to-point and collectives against SimGrid 3.32's SMPI: real MPI C programs timed
//! under smpirun (tests/oracles/smpi/: coll.c, the platforms star.xml and fattree.xml, the
//! cases, and run.sh that regenerates reference.csv). Each row is replayed here on the twin
//! platform (star.ron, fattree.ron) with host buffers and the same algorithm forced; SimGrid is
//! not needed.
//!
//! SMPI starts a rendezvous message (> 64000 B) once both sides are there; hetsim, like MPI
//! libraries, first sends RTS and answers CTS, each a control message of C = route latency +
//! 16 B / 12.5 GB/s. Expected, per row:
//! - with switch `rendezvous_handshake` off (SMPI's semantics): hetsim = SMPI within 1 %;
//! - with it on (the default): hetsim = that + D, where D lies between C h and 2 C h (2 % of
//!   SMPI either side: a handshake also shifts when other flows meet), h being the rendezvous rounds on the critical path ([`rounds`]: the
//!   messages one after another that the last rank waits for, each > 64000 B). Each such
//!   round pays its CTS, and its RTS unless the RTS arrived while the receiver was still busy
//!   (a binomial reduce's second child: 3 C over two rounds).
//!
//! Known misses ([`KNOWN_MISSES`], 25 of 1,516, all on the fat-tree, held to 30 % so that they
//! cannot silently get worse): on the fat-tree, SimGrid's CM02 shares a link in inverse proportion to each flow's route
//! latency (its `sharing_penalty_` is the latency: a flow between two hosts under one leaf,
//! 0.5 us, gets twice the share of one across leaves, 1 us), where hetsim shares equally.
//! Only cases where flows of both kinds meet on a link feel it (two 1 MiB flows from one host,
//! to a host under its leaf and to one across: SMPI gives them 8.3 and 4.2 GB/s, hetsim 6.25
//! each); every star route has the same latency.
//!
//! `reduce_int` rows reduce MPI_INTs (SMPI's `rab` refuses MPI_CHAR) and replay as a
//! reduce of the same bytes; hetsim's `rab` is SMPI's algorithm, stale gather sends included.
//!
//! `cargo test --release --test smpi_oracle -- --nocapture` prints every row.

use std::path::Path;

use hetsim::schema::load::parse_scenario;
use hetsim::schema::scenario::OutputSpec;
use hetsim::{RunOptions, simulate_report};

const EAGER_LIMIT: f64 = 64000.0;
const BANDWIDTH: f64 = 12.5e9;
const CONTROL_BYTES: f64 = 16.0;

/// One row of reference.csv.
struct Case {
    platform: String,
    op: String,
    hetsim_algo: String,
    ranks: u32,
    bytes: f64,
    smpi_s: f64,
}

fn cases() -> Vec<Case> {
    let file = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/oracles/smpi/reference.csv");
    csv::Reader::from_path(&file)
        .unwrap()
        .records()
        .map(|rec| {
            let f = rec.unwrap();
            Case {
                platform: f[0].to_string(),
                op: f[1].to_string(),
                hetsim_algo: f[3].to_string(),
                ranks: f[4].parse().unwrap(),
                bytes: f[5].parse().unwrap(),
                smpi_s: f[6].parse().unwrap(),
            }
        })
        .collect()
}

/// The trace line every rank runs (pingpong: ranks 0 and 1 only).
fn trace(c: &Case) -> String {
    let n = c.bytes;
    if c.op == "pingpong" {
        return format!(
            "0 send 1 {n} host\n0 recv 1 {n} host\n1 recv 0 {n} host\n1 send 0 {n} host\n"
        );
    }
    let line = match c.op.as_str() {
        "bcast" => format!("bcast {n}"),
        "reduce" | "reduce_int" => format!("reduce {n} 0"),
        "allreduce" => format!("allreduce {n} 0"),
        "allgather" => format!("allgather {n} {n}"),
        "alltoall" => format!("alltoall {n} {n}"),
        "reduce_scatter" => format!("reducescatter {n} 0"),
        "barrier" => "barrier".to_string(),
        other => panic!("unknown operation {other}"),
    };
    (0..c.ranks).map(|r| format!("{r} {line}\n")).collect()
}

/// hetsim's time for the case, with or without the rendezvous handshake: the last rank's end.
fn hetsim(c: &Case, handshake: bool) -> f64 {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/oracles/smpi");
    let platform = dir.join(format!("{}.ron", c.platform));
    let force = if c.hetsim_algo == "-" {
        String::new()
    } else {
        format!(
            "force: {{{:?}: {:?}}}, ",
            c.op.trim_end_matches("_int"),
            c.hetsim_algo
        )
    };
    let text = format!(
        r#"Scenario(name: "smpi-oracle", platform: File({:?}), workload: Mpi(ranks: {}, gpus_per_node: 1,
           program: TraceText([("oracle", {:?})]), collectives: ({force}buffers: Host)))"#,
        platform.display().to_string(),
        c.ranks,
        trace(c),
    );
    let mut scenario = parse_scenario(&text, "oracle", Path::new("."), &[]).unwrap();
    scenario.output = OutputSpec::tables_only();
    let mut disable = vec!["record".to_string()];
    if !handshake {
        disable.push("rendezvous_handshake".into());
    }
    let opts = RunOptions {
        disable,
        progress: false,
        ..Default::default()
    };
    let report = simulate_report(&scenario, &opts).unwrap();
    let ranks = report.mpi.unwrap().ranks;
    ranks.iter().map(|r| r.end_s).fold(0.0, f64::max)
}

fn log2_ceil(p: u32) -> u32 {
    32 - (p - 1).leading_zeros()
}

fn prev_pow2(p: u32) -> u32 {
    1 << (31 - p.leading_zeros())
}

/// Sizes of the messages on the case's critical path, in order: the rounds one after
/// another that the last rank to finish waits for (MPICH's algorithms as SMPI builds them;
/// blocks are whole bytes).
fn rounds(c: &Case) -> Vec<f64> {
    let (p, n) = (c.ranks, c.bytes);
    let q = prev_pow2(p);
    let lg = log2_ceil(p);
    let fold = if p == q { vec![] } else { vec![n] };
    let halving = |q: u32| (1..=q.trailing_zeros()).map(move |k| (n / f64::from(1u32 << k)).ceil());
    let block = (n / f64::from(p)).ceil();
    let scatter: Vec<f64> = (1..=lg)
        .map(|k| (n / f64::from(1u32 << k)).ceil().max(block))
        .collect();
    match (c.op.as_str(), c.hetsim_algo.as_str()) {
        ("pingpong", _) => vec![n, n],
        ("bcast", "binomial") | ("reduce", "binomial") => vec![n; lg as usize],
        ("bcast", "scatter_rd_allgather") => {
            let mut r = scatter.clone();
            r.extend((0..lg).map(|k| block * f64::from(1u32 << k)));
            r
        }
        ("bcast", "scatter_ring_allgather") => {
            let mut r = scatter.clone();
            r.extend(vec![block; p as usize - 1]);
            r
        }
        ("reduce" | "reduce_int", "rabenseifner") => {
            let mut r = fold.clone();
            r.extend(halving(q));
            r.extend(halving(q).collect::<Vec<_>>().into_iter().rev());
            r
        }
        ("reduce_int", "rab") => {
            // Rabenseifner's fold: halves exchanged, then the reduced half sent back.
            let mut r = if p == q {
                vec![]
            } else {
                vec![(n / 2.0).ceil(); 2]
            };
            r.extend(halving(q));
            r.extend(halving(q).collect::<Vec<_>>().into_iter().rev());
            r
        }
        ("allreduce", "recursive_doubling") => {
            let mut r = fold.clone();
            r.extend(vec![n; q.trailing_zeros() as usize]);
            r.extend(fold);
            r
        }
        ("allreduce", "rabenseifner") => {
            let mut r = fold.clone();
            r.extend(halving(q));
            r.extend(halving(q).collect::<Vec<_>>().into_iter().rev());
            r.extend(fold);
            r
        }
        ("allreduce", "ring") => vec![block; 2 * (p as usize - 1)],
        ("allgather", "ring") => vec![n; p as usize - 1],
        ("allgather", "recursive_doubling") => (0..lg).map(|k| n * f64::from(1u32 << k)).collect(),
        ("allgather", "bruck") => (0..lg)
            .map(|k| n * f64::from((1u32 << k).min(p - (1 << k))))
            .collect(),
        ("alltoall", "pairwise") => vec![n; p as usize - 1],
        ("alltoall", "bruck") => (0..lg)
            .map(|k| n * (0..p).filter(|i| i & (1 << k) != 0).count() as f64)
            .collect(),
        ("alltoall", "scattered") => vec![n],
        ("reduce_scatter", "pairwise") => vec![n / f64::from(p); p as usize - 1],
        ("reduce_scatter", "recursive_halving") => halving(p).collect(),
        ("barrier", _) => vec![0.0; lg as usize],
        (op, algo) => panic!("no critical path for {op} {algo}"),
    }
}

/// Messages one after another on the critical path: its rounds, and for an alltoall posted
/// all at once the p - 1 sends a rank makes in a row.
fn in_sequence(c: &Case) -> usize {
    if c.hetsim_algo == "scattered" {
        c.ranks as usize - 1
    } else {
        rounds(c).len()
    }
}

/// The shortest and longest control message on the case's platform: route latency + 16 B.
fn control(c: &Case) -> (f64, f64) {
    // star: two cables of 0.5 us; fat-tree: two links of 0.25 us under one leaf, four across.
    let extra = CONTROL_BYTES / BANDWIDTH;
    match c.platform.as_str() {
        "star" => (1e-6 + extra, 1e-6 + extra),
        _ => (0.5e-6 + extra, 1e-6 + extra),
    }
}

/// Cases beyond 1 % for a known reason (see the module doc): platform, operation, hetsim's
/// algorithm, ranks, bytes.
const KNOWN_MISSES: &[(&str, &str, &str, u32, u32)] = &[
    ("fattree", "bcast", "scatter_rd_allgather", 16, 32768),
    ("fattree", "bcast", "scatter_rd_allgather", 16, 65536),
    ("fattree", "bcast", "scatter_rd_allgather", 32, 65536),
    ("fattree", "bcast", "scatter_rd_allgather", 64, 65536),
    ("fattree", "bcast", "scatter_ring_allgather", 12, 65536),
    ("fattree", "bcast", "scatter_ring_allgather", 32, 65536),
    ("fattree", "allreduce", "recursive_doubling", 12, 32768),
    ("fattree", "allreduce", "rabenseifner", 12, 65536),
    ("fattree", "alltoall", "pairwise", 12, 32768),
    ("fattree", "alltoall", "scattered", 12, 32768),
    ("fattree", "alltoall", "scattered", 12, 65536),
    ("fattree", "alltoall", "scattered", 12, 1048576),
    ("fattree", "alltoall", "scattered", 16, 32768),
    ("fattree", "alltoall", "scattered", 16, 65536),
    ("fattree", "alltoall", "scattered", 16, 1048576),
    ("fattree", "reduce_scatter", "pairwise", 32, 1048576),
    ("fattree", "reduce_scatter", "pairwise", 64, 1048576),
    // SMPI's rab gather sends stale blocks beside the useful ones (reduce.rs, `rab`): from
    // one host to a partner under its leaf and to one across, the case above.
    ("fattree", "reduce_int", "rab", 12, 32768),
    ("fattree", "reduce_int", "rab", 12, 65536),
    ("fattree", "reduce_int", "rab", 16, 32768),
    ("fattree", "reduce_int", "rab", 16, 65536),
    ("fattree", "reduce_int", "rab", 32, 32768),
    ("fattree", "reduce_int", "rab", 32, 65536),
    ("fattree", "reduce_int", "rab", 64, 32768),
    ("fattree", "reduce_int", "rab", 64, 65536),
];

fn known_miss(c: &Case) -> bool {
    KNOWN_MISSES.iter().any(|&(pl, op, algo, p, n)| {
        (pl, op, algo, p, n as f64)
            == (
                c.platform.as_str(),
                c.op.as_str(),
                c.hetsim_algo.as_str(),
                c.ranks,
                c.bytes,
            )
    })
}

#[test]
fn hetsim_matches_smpi_on_every_case_plus_its_handshakes() {
    let mut failures = Vec::new();
    let cases = cases();
    assert!(
        cases.len() > 100,
        "reference.csv holds {} rows",
        cases.len()
    );
    for c in &cases {
        let smpi = c.smpi_s;
        let off = hetsim(c, false);
        let on = hetsim(c, true);
        let h = rounds(c).iter().filter(|&&s| s > EAGER_LIMIT).count() as f64;
        let (cmin, cmax) = control(c);
        let err = (off - smpi) / smpi;
        let off_by = (off - smpi).abs();
        let d = on - off;
        let (lo, hi) = (cmin * h - 0.02 * smpi, 2.0 * cmax * h + 0.02 * smpi);
        // SMPI 3.32 charges each message 1.28 to 2.24 ns beyond latency + size / bandwidth,
        // whatever its size (a lone message between two hosts, measured), and a rank's
        // sends one after another: up to 3 ns for each message in sequence.
        let slack = 3e-9 * in_sequence(c) as f64;
        let name = format!(
            "{} {} {} p={} n={}",
            c.platform, c.op, c.hetsim_algo, c.ranks, c.bytes
        );
        println!(
            "{name:55} smpi {smpi:.4e} hetsim {off:.4e} {:+.3}% handshakes {:.2} us (h={h})",
            100.0 * err,
            d * 1e6
        );
        let bound = if known_miss(c) { 0.3 } else { 0.01 };
        if known_miss(c) && off_by <= 0.01 * smpi + slack {
            println!("now within 1 %, drop it from KNOWN_MISSES: {name}");
        }
        if off_by > bound * smpi + slack {
            failures.push(format!(
                "{name}: without handshakes hetsim {off:.6e} s vs SMPI {smpi:.6e} s ({:+.2} %)",
                100.0 * err
            ));
        }
        if d < lo || d > hi {
            failures.push(format!(
                "{name}: the handshakes add {:.3} us; {h} rendezvous rounds on the critical path allow {:.3} to {:.3} us",
                d * 1e6,
                lo.max(0.0) * 1e6,
                hi * 1e6
            ));
        }
    }
    assert!(
        failures.is_empty(),
        "{} failures over {} cases:\n{}",
        failures.len(),
        cases.len(),
        failures.join("\n")
    );
}
