//! SimGrid's own time-independent traces (`smpirun -trace-ti`, SimGrid 3.32) replayed by
//! hetsim and by SMPI (`smpirun -replay`) on the same star: tests/oracles/smpi-ti/ holds the
//! two MPI programs (halo.c: isend/irecv/waitall, sendRecv, allreduce on 8 ranks; actions.c:
//! every action SMPI records, v-collectives included, on 4), their recorded traces (SMPI's
//! index file and per-rank files, datatypes as SMPI numbers them) and record.sh, which
//! records them and writes replay.csv with SMPI's replay times. SimGrid is not needed here.
//!
//! Both sides: the SMPI oracle's star (tests/oracles/smpi/star.ron, star.xml), max-min
//! sharing, 64000 B eager, no handshake (switch `rendezvous_handshake` off, as in the SMPI
//! oracle), compute at 1 Gflop/s, the same collective algorithms forced. Gather, scatter,
//! alltoallv and gatherv/scatterv are linear on both sides; allgatherv is SMPI's `pair`
//! (p - 1 exchanges one after another) against hetsim's all-at-once exchange: actions.c's
//! 80 KB allgatherv is the one step where the two differ by algorithm.

use std::path::Path;

use hetsim::schema::load::parse_scenario;
use hetsim::schema::scenario::OutputSpec;
use hetsim::{RunOptions, simulate_report};

fn replay(trace: &str, ranks: u32) -> f64 {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/oracles");
    let index = dir.join(format!("smpi-ti/traces/{trace}/{trace}.txt"));
    let text = format!(
        r#"Scenario(name: "smpi-ti", platform: File({:?}), workload: Mpi(ranks: {ranks},
           program: Trace([{:?}]), compute_speed: "1Gf", buffers: Host,
           collectives: (buffers: Host, force: {{"bcast": "binomial", "reduce": "binomial",
             "allreduce": "recursive_doubling", "allgather": "ring", "alltoall": "scattered",
             "reduce_scatter": "pairwise", "barrier": "dissemination"}})))"#,
        dir.join("smpi/star.ron").display().to_string(),
        index.display().to_string()
    );
    let mut s = parse_scenario(&text, "smpi-ti", Path::new("."), &[]).unwrap();
    s.output = OutputSpec::tables_only();
    let opts = RunOptions {
        disable: vec!["record".into(), "rendezvous_handshake".into()],
        progress: false,
        ..Default::default()
    };
    let r = simulate_report(&s, &opts).unwrap();
    r.summary["sim_time_s"].as_f64().unwrap()
}

fn smpi(trace: &str) -> (u32, f64) {
    let file = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/oracles/smpi-ti/replay.csv");
    let text = std::fs::read_to_string(file).unwrap();
    let row = text
        .lines()
        .skip(1)
        .find(|l| l.starts_with(&format!("{trace},")))
        .unwrap();
    let f: Vec<&str> = row.split(',').collect();
    (f[1].parse().unwrap(), f[2].parse().unwrap())
}

#[test]
fn a_recorded_halo_exchange_replays_as_smpi_replays_it() {
    let (ranks, want) = smpi("halo");
    let got = replay("halo", ranks);
    eprintln!("halo: hetsim {got:.6e} s, SMPI {want:.6e} s");
    // SMPI prints its time to the microsecond.
    assert!(
        (got - want).abs() <= 0.01 * want,
        "hetsim {got} s, SMPI {want} s"
    );
}

#[test]
fn every_recorded_action_replays_and_matches_smpi() {
    let (ranks, want) = smpi("actions");
    let got = replay("actions", ranks);
    eprintln!("actions: hetsim {got:.6e} s, SMPI {want:.6e} s");
    assert!(
        (got - want).abs() <= 0.01 * want,
        "hetsim {got} s, SMPI {want} s"
    );
}
