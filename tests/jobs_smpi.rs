//! Two jobs on one fabric against SimGrid 3.32's replay_multiple (tests/oracles/smpi-jobs/:
//! run.sh writes the traces and regenerates reference.csv with
//! tools/simgrid/replay-multiple.cpp; SimGrid is not needed here). Two instances of one
//! 8-rank trace on the fat-tree of tests/oracles/smpi (twin: fattree.ron), apart, sharing
//! their leaves' uplinks, and with the second starting 20 us later; host buffers, SMPI's
//! pure model. Each job's time (its last rank's end less its start) is within 1 % of SMPI's
//! for every size: eager sizes as hetsim runs by default, the rendezvous size (1 MiB) with
//! switch `rendezvous_handshake` off (SMPI sends no RTS/CTS; see tests/smpi_oracle.rs).

use std::path::{Path, PathBuf};

use hetsim::schema::load::parse_scenario;
use hetsim::schema::scenario::OutputSpec;
use hetsim::{RunOptions, simulate_report};

fn dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/oracles/smpi-jobs")
}

/// Nodes of jobs a and b in a case, as run.sh places them.
fn nodes(case: &str) -> [&'static str; 2] {
    match case {
        "apart" => [
            "[0, 1, 2, 3, 8, 9, 10, 11]",
            "[16, 17, 18, 19, 24, 25, 26, 27]",
        ],
        _ => ["[0, 1, 2, 3, 8, 9, 10, 11]", "[4, 5, 6, 7, 12, 13, 14, 15]"],
    }
}

/// hetsim's time for each job of a case: (a, b).
fn hetsim(case: &str, bytes: u64) -> (f64, f64) {
    let traces: Vec<String> = (0..8)
        .map(|i| {
            let f = dir().join(format!("traces/{bytes}/rank-{i}.txt"));
            format!("{:?}", f.display().to_string())
        })
        .collect();
    let traces = traces.join(", ");
    let start = if case == "delayed" { "20us" } else { "0s" };
    let [a, b] = nodes(case);
    let job = |name: &str, on: &str, start: &str| {
        format!(
            r#"Job(name: "{name}", workload: Mpi(ranks: 8, gpus_per_node: 1, buffers: Host, program: Trace([{traces}])), placement: Nodes({on}), start: "{start}")"#
        )
    };
    let text = format!(
        r#"Scenario(name: "smpi-jobs", platform: File("tests/oracles/smpi/fattree.ron"), jobs: [{}, {}])"#,
        job("a", a, "0s"),
        job("b", b, start)
    );
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let mut s = parse_scenario(&text, "smpi-jobs", root, &[]).unwrap();
    s.output = OutputSpec::tables_only();
    let mut disable = vec!["record".to_string()];
    if bytes > 64000 {
        disable.push("rendezvous_handshake".into());
    }
    let opts = RunOptions {
        disable,
        alone: Some(false),
        ..Default::default()
    };
    let summary = simulate_report(&s, &opts).unwrap().summary;
    let t = |i: usize| summary["jobs"][i]["sim_time_s"].as_f64().unwrap();
    (t(0), t(1))
}

#[test]
fn two_jobs_match_simgrid_replay_multiple_within_one_percent() {
    let rows = csv::Reader::from_path(dir().join("reference.csv"))
        .unwrap()
        .records()
        .map(|r| r.unwrap())
        .collect::<Vec<_>>();
    assert_eq!(rows.len(), 24, "3 cases x 4 sizes x 2 jobs");
    let mut worst: f64 = 0.0;
    for pair in rows.chunks(2) {
        let (case, bytes) = (&pair[0][0], pair[0][1].parse::<u64>().unwrap());
        let got = hetsim(case, bytes);
        for (row, got) in pair.iter().zip([got.0, got.1]) {
            let smpi: f64 = row[4].parse().unwrap();
            let err = (got - smpi) / smpi;
            println!(
                "{case:8} {bytes:>8} B job {}: smpi {smpi:.6e} s, hetsim {got:.6e} s ({:+.3} %)",
                &row[2],
                100.0 * err
            );
            worst = worst.max(err.abs());
            assert!(
                err.abs() <= 0.01,
                "{case} {bytes} B job {}: hetsim {got} s against SMPI {smpi} s",
                &row[2]
            );
        }
    }
    println!("worst error {:.3} %", 100.0 * worst);
}
