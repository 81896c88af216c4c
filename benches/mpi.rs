//! MPI replay speed: the LULESH-like halo exchange (26 neighbours, 1 MB faces, GPUDirect) on
//! the Lassen platform with 6 GPUs per node, 10 iterations, at 120 and 480 ranks, exact and
//! with a 100 ns network quantum (`network_model.quantum`).
//! Target (MPI issue): 4,860 ranks in under 60 s on one core. Measured (one core of a 2-core
//! VM, `hetsim run scenarios/studies/halo3d.ron --set platform.node.gpus=6 --set
//! workload.Mpi.gpus_per_node=6 --set workload.Mpi.ranks=4860 --disable record -q`): exact
//! 408 s (10.2 M events, 1.6 GB); with `--set network_model.quantum=300ns` 51 s, mean
//! communication time +0.3 %. `cargo bench --bench mpi`.

use criterion::{Criterion, criterion_group, criterion_main};
use std::path::Path;

use hetsim::schema::load::load_scenario;
use hetsim::{RunOptions, simulate_report};

fn bench(c: &mut Criterion) {
    let file = Path::new(env!("CARGO_MANIFEST_DIR")).join("scenarios/studies/halo3d.ron");
    let mut group = c.benchmark_group("mpi_halo3d_lassen6");
    group.sample_size(10);
    for (ranks, quantum) in [(120, "0"), (480, "0"), (480, "100ns")] {
        let set = [
            "platform.node.gpus=6".to_string(),
            "workload.Mpi.gpus_per_node=6".to_string(),
            format!("workload.Mpi.ranks={ranks}"),
            format!("network_model.quantum={quantum}"),
        ];
        let scenario = load_scenario(&file, &set).unwrap();
        let opts = RunOptions {
            disable: vec!["record".into()],
            progress: false,
        };
        let name = match quantum {
            "0" => format!("{ranks}_ranks"),
            q => format!("{ranks}_ranks_quantum_{q}"),
        };
        group.bench_function(name, |b| {
            b.iter(|| simulate_report(&scenario, &opts).unwrap().summary["events"].clone())
        });
    }
    group.finish();
}

criterion_group!(benches, bench);
criterion_main!(benches);
