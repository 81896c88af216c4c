//! Several jobs against one job of all their ranks, with the same messages: eight jobs of
//! 512 ranks against one job of 4,096 ranks on Lassen with 6 GPUs per node (683 and 688 of
//! its 810 nodes), `--disable record`, no runs alone. Every rank exchanges 256 KiB with its
//! 6 neighbours on a periodic 3-D torus (8^3 ranks per small job, 16^3 for the large one),
//! twice, each time after 1 ms asleep: 6 messages per rank per iteration either way, 49,152 in all.
//! `cargo bench --bench jobs`. The figures are in the closing note of issue 55.

use criterion::{Criterion, criterion_group, criterion_main};
use std::fmt::Write;

use hetsim::schema::load::parse_scenario;
use hetsim::schema::mpi::ProgramSpec;
use hetsim::schema::scenario::{OutputSpec, Scenario, Workload};
use hetsim::{RunOptions, simulate_report};

const ITERATIONS: u32 = 2;
const BYTES: u32 = 262_144;

/// A TI trace: every rank of a periodic `side`^3 torus exchanges with its 6 neighbours.
fn torus(side: u32) -> String {
    let p = side * side * side;
    let mut text = String::new();
    for r in 0..p {
        let (x, y, z) = (r % side, (r / side) % side, r / (side * side));
        let at = |x: u32, y: u32, z: u32| (x % side) + (y % side) * side + (z % side) * side * side;
        let peers = [
            at(x + 1, y, z),
            at(x + side - 1, y, z),
            at(x, y + 1, z),
            at(x, y + side - 1, z),
            at(x, y, z + 1),
            at(x, y, z + side - 1),
        ];
        for _ in 0..ITERATIONS {
            writeln!(text, "{r} sleep 0.001").unwrap();
            for q in peers {
                writeln!(text, "{r} irecv {q} {BYTES}").unwrap();
            }
            for q in peers {
                writeln!(text, "{r} isend {q} {BYTES}").unwrap();
            }
            writeln!(text, "{r} waitall").unwrap();
        }
    }
    text
}

/// `jobs` jobs of `side`^3 ranks each, contiguous, on Lassen with 6 GPUs per node.
fn scenario(jobs: u32, side: u32) -> Scenario {
    let ranks = side * side * side;
    let list: Vec<String> = (0..jobs)
        .map(|j| {
            format!(r#"Job(name: "j{j}", workload: Mpi(ranks: {ranks}, program: TraceText([])))"#)
        })
        .collect();
    let text = format!(
        r#"Scenario(name: "jobs-bench", platform: Named("lassen"), jobs: [{}])"#,
        list.join(", ")
    );
    let set = ["platform.node.gpus=6".to_string()];
    let mut s = parse_scenario(&text, "bench", std::path::Path::new("."), &set).unwrap();
    let trace = torus(side);
    for job in &mut s.jobs {
        if let Workload::Mpi(m) = &mut job.workload {
            m.program = ProgramSpec::TraceText(vec![("torus".into(), trace.clone())]);
        }
    }
    s.output = OutputSpec::tables_only();
    s
}

fn bench(c: &mut Criterion) {
    let mut group = c.benchmark_group("jobs_lassen6");
    group.sample_size(10);
    let opts = RunOptions {
        disable: vec!["record".into()],
        alone: Some(false),
        ..Default::default()
    };
    for (name, jobs, side) in [
        ("8_jobs_of_512_ranks", 8, 8),
        ("1_job_of_4096_ranks", 1, 16),
    ] {
        let s = scenario(jobs, side);
        let messages = simulate_report(&s, &opts).unwrap().summary["mpi"]["messages"].clone();
        assert_eq!(
            messages.as_u64(),
            Some(6 * 4096 * ITERATIONS as u64),
            "{name}"
        );
        group.bench_function(name, |b| {
            b.iter(|| simulate_report(&s, &opts).unwrap().summary["events"].clone())
        });
    }
    group.finish();
}

criterion_group!(benches, bench);
criterion_main!(benches);
