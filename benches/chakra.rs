//! Chakra speed. Target (Chakra issue): the real training step of
//! ../shared/reference/chakra/real/chakra.0.et.gz replicated on 1,024 H100s (128 DGX H100
//! nodes on the fat-tree of dgx-h100-cluster.ron), nothing recorded, in under 10 s and 2 GB;
//! and on 64 GPUs (8 nodes). Skipped (nothing benchmarked) when the reference is absent.
//! `cargo bench --bench chakra`.

use criterion::{Criterion, criterion_group, criterion_main};
use std::path::Path;

use hetsim::schema::load::parse_scenario;
use hetsim::schema::scenario::OutputSpec;
use hetsim::{RunOptions, simulate_report};

fn bench(c: &mut Criterion) {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let trace = root.join("../shared/reference/chakra/real/chakra.0.et.gz");
    if !trace.is_file() {
        eprintln!("skipped: {} is not there", trace.display());
        return;
    }
    let platform = root.join("scenarios/platforms/dgx-h100-cluster.ron");
    let mut group = c.benchmark_group("chakra");
    group.sample_size(10);
    for gpus in [64u32, 1024] {
        let text = format!(
            r#"Scenario(name: "chakra-bench", platform: File({:?}), workload: Chakra(files: {:?}, ranks: {gpus}))"#,
            platform.display().to_string(),
            trace.display().to_string()
        );
        let sets = [format!("platform.nodes={}", gpus / 8)];
        let mut s = parse_scenario(&text, "bench", Path::new("."), &sets).unwrap();
        s.output = OutputSpec::tables_only();
        let opts = RunOptions {
            disable: vec!["record".into()],
            progress: false,
            ..Default::default()
        };
        group.bench_function(format!("real_step_{gpus}_h100"), |b| {
            b.iter(|| simulate_report(&s, &opts).unwrap().summary["sim_time_s"].clone())
        });
    }
    group.finish();
}

criterion_group!(benches, bench);
criterion_main!(benches);
