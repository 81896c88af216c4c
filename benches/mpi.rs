//! MPI replay speed: the LULESH-like halo exchange (144^3 elements per rank: 26-neighbour
//! force and position exchanges and a 6-face gradient exchange, GPUDirect) on the Lassen
//! platform with 6 GPUs per node, 10 iterations, at 120 and 480 ranks, exact and with a
//! 100 ns network quantum (`network_model.quantum`); and a real trace, SMPI's `-trace-ti`
//! of a LULESH-like program at 64 ranks. `cargo bench --bench mpi`.
//!
//! Measured 2026-11-29 (2-core AMD EPYC VM; farm-bench medians of the whole command
//! `hetsim run scenarios/studies/halo3d.ron --set platform.node.gpus=6 --set
//! workload.Mpi.gpus_per_node=6 --set workload.Mpi.ranks=N --disable record -q`; add
//! `--stats` for the counters):
//! - 480 ranks (237,520 messages, 1.50 M events, 344 k steps, 137.7 k solves): exact
//!   16.9 s, 188 MB. Quantum 100 ns 4.7 s, 300 ns 4.4 s, 1 us 3.7 s; their mean
//!   communication time is +0.057 %, +0.16 % and +0.47 % above exact (40.261 ms), the run's
//!   end +0.021 %, +0.060 % and +0.17 %.
//! - Early completion keys (a later completion leaves its heap key early): 16.2 s against
//!   17.1 s for the binary before them, farm-bench pairs (A/B 0.954; this VM's runs spread
//!   by about 15 %); at 120 ranks 4.8 % fewer instructions (cachegrind, 9.01 G -> 8.59 G).
//!   The completion heap's share of the profile went from 5.9 % to 2.7 %.
//! - Where the exact run goes (perf): the max-min solver 62 % (notifying constraints of a
//!   flow's change 24 %, member scans and fill levels 15 %, heaps 10 %), re-timing the
//!   completions of flows whose rate changed 17 %, the MPI and network systems, the
//!   calendar and the ECS the rest. Per solve the solver touches 167 flows, and each
//!   notifies the 8.5 constraints of its route: 296 M notifications in all, 212 M of them
//!   to unsaturated constraints. The flows frozen or released together at one fill cross
//!   only 34.7 M distinct constraints for 192.7 M (flow, constraint) pairs (5.5 x fewer).
//! - 4,860 ranks (3.0 M messages; `/usr/bin/time`): exact 5,814 s and 1.99 GB (19.5 M
//!   events, 2.27 M solves touching 794 flows each, 1.79 G rate changes; run at low priority
//!   beside the test suite, so an upper bound). Quantum 100 ns 293 s, 300 ns 175 s, both
//!   1.99 GB; their mean communication time is +0.060 % and +0.18 % above exact (52.314
//!   ms), the run's end +0.026 % and +0.078 %.
//! - SMPI-TI trace (tests/oracles/smpi-ti/lulesh.ron, 16,080 messages): 0.248 s against
//!   SMPI 3.32's 1.240 s for `smpirun -replay` of the same trace (5.0 x;
//!   tools/simgrid/replay-speed.sh); simulated 1.9975 ms against SMPI's 2.026 ms.
//! - This VM's speed moves from day to day: on 2026-11-30 the binary of d9c4a32 (9.7 s at
//!   480 ranks exact on 2026-11-24) took 15.0 s, and the day's binary 12.6 s beside it
//!   (farm-bench, 5 interleaved pairs, A/B 0.80).
//!
//! - 2026-11-30, a faster day of this VM (91672f6's binary): 480 ranks exact 7.12 s
//!   (farm-bench, 5 pairs; 0d6b75a's binary beside it 7.24 s, A/B 0.99); 4,860 ranks exact
//!   1,073 s and 2.05 GB (`/usr/bin/time`; the other core ran SimGrid for part of it),
//!   19.5 M events, 2.27 M solves, 1.79 G rate changes, 698 M exact re-keys; 0d6b75a's
//!   binary 964 s (952 s of CPU, beside another long run for its first 10 minutes), 628 M
//!   exact re-keys, the same summary. The SMPI-TI trace 0.091 s against SMPI's 0.496 s
//!   (5.4 x, 9 runs).
//! - 2026-11-30, evening (4209f22: the group solver, completions per group in clocks, parts
//!   that wait before merging again): 480 ranks exact 3.47 s (farm-bench medians; the
//!   morning's head, 66430cc, ran 4.03 s beside the clocks alone, A/B 0.93); 4,860 ranks
//!   exact 5 min 34 s (330 s of CPU) and 1.96 GB, alone (`/usr/bin/time`).
//! - 2026-11-30, night (43bebe6: lazy bounds on a plain heap, short exact re-keys): 480
//!   ranks exact 3.52 s against bc6420c's 3.47 s (farm-bench medians, A/B 1.04 over 5 pairs,
//!   0.996 over 9); at 120 ranks 4.181 G -> 4.022 G instructions (cachegrind). 4,860 ranks
//!   exact 5 min 40 s (337 s of CPU) and 1.92 GB, alone (`/usr/bin/time`), level with
//!   4209f22's run above; the same summary.
//! - 2026-11-30, late (a0a5b9a, the code of 43bebe6; `/usr/bin/time`, one run each, the
//!   other core running SimGrid): 480 ranks exact 3.53 s, quantum 100 ns 1.68 s, 300 ns
//!   1.53 s, 1 us 1.47 s, with the summaries of 2026-11-29 (errors above). 4,860 ranks with
//!   a quantum: 300 ns **57.2 s** (54.7 s of CPU, 1.89 GB), 100 ns 81.7 s (1.87 GB); mean
//!   communication time +0.18 % and +0.061 % above exact (52.314 ms), the run's end
//!   +0.078 % and +0.026 % (as measured 2026-11-29). The SMPI-TI trace 0.094 s against
//!   SMPI's 0.498 s (5.3 x, 9 runs of `tools/simgrid/replay-speed.sh`).
//! - Where 4,860 ranks exact goes (3 of the 10 iterations:
//!   `--set workload.Mpi.program.Generator.Halo3d.iterations=3 --stats`, 81 s): 536 k
//!   solves, each touching 62 groups and 719 constraints, 667 of them unsaturated (tracked
//!   by totals; 50 of those scanned after all). perf over 2 iterations: notices 16 %, member
//!   scans 11 %, fill levels 6.5 %, the event heap 5.8 %, lazy bounds 5.3 %, re-timing 3.7 %,
//!   the rest inlined into the network system (fills, commit).
//! - 2026-12-01 (b1d35dc: lazy constraints off the scanned list, bounds dropped by a round):
//!   4,860 ranks exact **5 min 14 s** (309 s of CPU) and 1.86 GB (`/usr/bin/time`; the other
//!   core ran the 100,000-flow case for its first 3 minutes), the same summary; 2.27 M
//!   solves, each tracking 721 constraints (668 of them lazily, 50 scanned after all) for 61
//!   touched groups. Against a0a5b9a: 2 of the 10 iterations 45.2 s -> 42.6 s (farm-bench,
//!   3 pairs, A/B 1.062), 480 ranks 3.69 s -> 3.59 s (7 pairs, A/B 1.029).
//!
//! Issue 57's targets (480 ranks exact in 1.5 s; 4,860 in 120 s and 4 GB; 100 x SMPI on a
//! real trace) are not met; see ARCHITECTURE.md, "The max-min solver".

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
            ..Default::default()
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

    // A real trace: SimGrid 3.32's `-trace-ti` of the SMPI-TI oracle's LULESH-like program
    // (64 ranks, 16,080 messages), as tests/smpi_ti.rs replays it. SMPI's own replay of it
    // is timed beside hetsim's by tools/simgrid/replay-speed.sh.
    let file = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/oracles/smpi-ti/lulesh.ron");
    let scenario = load_scenario(&file, &[]).unwrap();
    let opts = RunOptions {
        disable: vec!["record".into(), "rendezvous_handshake".into()],
        progress: false,
        ..Default::default()
    };
    let mut group = c.benchmark_group("mpi_smpi_ti");
    group.sample_size(10);
    group.bench_function("lulesh_64_ranks", |b| {
        b.iter(|| simulate_report(&scenario, &opts).unwrap().summary["events"].clone())
    });
    group.finish();
}

criterion_group!(benches, bench);
criterion_main!(benches);
