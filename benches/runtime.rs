//! Task-runtime speed: tiled Cholesky on StarPU's attila (3 GPUs, 8 CPU workers, dmdas) at
//! growing task counts. Target (runtime issue): n = 72,000 with 960 tiles (73,150 tasks)
//! under 1 s. `cargo bench --bench runtime`.

use criterion::{Criterion, criterion_group, criterion_main};
use std::path::Path;

use hetsim::schema::load::load_scenario;
use hetsim::schema::scenario::OutputSpec;
use hetsim::{RunOptions, simulate_report};

fn bench(c: &mut Criterion) {
    let file = Path::new(env!("CARGO_MANIFEST_DIR")).join("scenarios/cholesky-attila.ron");
    let mut group = c.benchmark_group("runtime_cholesky_attila_dmdas");
    group.sample_size(10);
    // nt = 20, 40, 75 tiles per side: 1,540, 11,480, 73,150 tasks.
    for n in [19200, 38400, 72000] {
        let mut scenario = load_scenario(&file, &[format!("workload.n={n}")]).unwrap();
        scenario.output = OutputSpec::tables_only();
        let opts = RunOptions {
            disable: vec!["record".into()],
            progress: false,
            ..Default::default()
        };
        group.bench_function(format!("n{n}"), |b| {
            b.iter(|| simulate_report(&scenario, &opts).unwrap().summary["events"].clone())
        });
    }
    group.finish();
}

criterion_group!(benches, bench);
criterion_main!(benches);
