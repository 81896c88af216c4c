//! NCCL speed. Targets (NCCL issue): `hetsim nccl-tests` from 8 B to 8 GB by factor 2 on 8
//! GPUs under 2 s; one ring AllReduce of 1 GiB on 1,024 GPUs (128 DGX A100) with 8 channels
//! under 10 s, and how it grows with the GPU count (128, 256, 512, 1,024). Switch algorithms
//! (NCCL issue 59): `hetsim nccl-tests` AllReduce from 8 B to 8 GiB on 1,024 H100 (128 nodes of
//! the rail-optimised DGX H100 SuperPOD) with NVLSTree, under 2 s.
//! `cargo bench --bench nccl`.

use criterion::{Criterion, criterion_group, criterion_main};
use std::path::Path;

use hetsim::nccltests::{self, Options};
use hetsim::schema::cuda::{Algo, Coll, Proto};

fn options(gpus: u32, sizes: Vec<f64>) -> Options {
    let platforms = Path::new(env!("CARGO_MANIFEST_DIR")).join("scenarios/platforms");
    Options {
        op: Coll::AllReduce,
        sizes,
        gpus,
        platform: platforms.join(if gpus > 8 {
            "dgx-a100-cluster.ron"
        } else {
            "dgx-a100.ron"
        }),
        set: vec![format!("platform.nodes={}", gpus.div_ceil(8))],
        algos: vec![],
        protos: vec![],
        channels: None,
        iters: 20,
        warmup: 1,
    }
}

fn bench(c: &mut Criterion) {
    let mut group = c.benchmark_group("nccl");
    group.sample_size(10);
    let sweep: Vec<f64> = (3..=33).map(|k| 2f64.powi(k)).collect();
    let o = options(8, sweep.clone());
    group.bench_function("nccl_tests_8B_to_8GB_8gpus", |b| {
        b.iter(|| nccltests::run(&o).unwrap().len())
    });
    for gpus in [128, 256, 512, 1024] {
        let mut o = options(gpus, vec![1073741824.0]);
        o.algos = vec![Algo::Ring];
        o.protos = vec![Proto::Simple];
        o.channels = Some(8);
        o.iters = 1;
        o.warmup = 0;
        group.bench_function(format!("ring_allreduce_1GiB_{gpus}_gpus_8ch"), |b| {
            b.iter(|| nccltests::run(&o).unwrap()[0].time_us)
        });
    }
    let mut o = options(1024, sweep.clone());
    o.platform =
        Path::new(env!("CARGO_MANIFEST_DIR")).join("scenarios/platforms/dgx-h100-superpod.ron");
    o.set = vec![];
    o.algos = vec![Algo::NVLSTree];
    group.bench_function("nccl_tests_8B_to_8GiB_1024_h100_superpod_nvlstree", |b| {
        b.iter(|| nccltests::run(&o).unwrap().len())
    });
    group.finish();
}

criterion_group!(benches, bench);
criterion_main!(benches);
