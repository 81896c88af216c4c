//! Timeline rendering at scale: one million state intervals on 64 resources with 6 states
//! (back-to-back busy periods of random lengths, as a busy task runtime would give) drawn as
//! SVG and PNG. Target (issue "Timelines, traces, studies"): both under 5 s, SVG under 20 MB.
//! `cargo bench -p hetsim-output --bench timeline` prints the SVG size once.

use criterion::{Criterion, criterion_group, criterion_main};
use rand::{RngExt, SeedableRng};
use rand_chacha::ChaCha8Rng;

use hetsim_engine::record::{Interval, Recorder, ResourceKind};
use hetsim_output::plot::{self, Gantt};
use hetsim_schema::SimTime;

fn synthetic(n: usize, rows: usize) -> Recorder {
    let mut rec = Recorder::default();
    rec.set_on(true);
    let mut rng = ChaCha8Rng::seed_from_u64(7);
    let states: Vec<_> = ["POTRF", "TRSM", "SYRK", "GEMM", "fetch", "overhead"]
        .iter()
        .map(|s| rec.name_id(s))
        .collect();
    let ids: Vec<_> = (0..rows)
        .map(|r| {
            rec.resource(
                ResourceKind::Worker,
                &format!("node[{}].gpu[{}]", r / 4, r % 4),
            )
        })
        .collect();
    let mut clock = vec![0u64; rows];
    for i in 0..n {
        let r = i % rows;
        let gap = rng.random_range(0..2_000_000_000u64); // up to 2 us idle
        let len = rng.random_range(1_000_000_000..20_000_000_000u64); // 1 to 20 us busy
        let start = clock[r] + gap;
        clock[r] = start + len;
        rec.interval(Interval {
            resource: ids[r],
            state: states[rng.random_range(0..states.len())],
            label: None,
            start: SimTime(start as u128),
            end: SimTime((start + len) as u128),
        });
    }
    rec
}

fn bench(c: &mut Criterion) {
    let rec = synthetic(1_000_000, 64);
    let dir = tempfile::tempdir().unwrap();
    let png = dir.path().join("timeline.png");
    {
        let g = Gantt::build(&rec, "1M intervals", 1600).unwrap();
        let svg = plot::svg(&g).unwrap();
        eprintln!(
            "timeline of 1M intervals: SVG {:.2} MB",
            svg.len() as f64 / 1e6
        );
    }
    let mut group = c.benchmark_group("timeline_1M");
    group.sample_size(10);
    group.bench_function("build+svg", |b| {
        b.iter(|| {
            let g = Gantt::build(&rec, "1M intervals", 1600).unwrap();
            plot::svg(&g).unwrap().len()
        })
    });
    group.bench_function("build+png", |b| {
        b.iter(|| {
            let g = Gantt::build(&rec, "1M intervals", 1600).unwrap();
            plot::png(&g, &png).unwrap()
        })
    });
    group.finish();
}

criterion_group!(benches, bench);
criterion_main!(benches);
