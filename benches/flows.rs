//! `hetsim flows` on the reference performance inputs and on generated ones.
//!
//! Targets (issue 57, SimGrid 3.32 on this kind of machine in brackets): case_n10000_stag
//! under 0.125 s (12.5 s), case_n10000_t0 under 1.2 s (121 s). Each iteration parses the
//! case, builds the app and runs it, as the command does.
//! Measured 2026-11-29 (farm-bench medians of `hetsim flows CASE`): case_n10000_stag 0.279 s
//! (45 x SimGrid), case_n10000_t0 12.2 s (10 x; 17.7 k solves, 14.3 M rate changes, the
//! solver 95 % of it). Flows launched ahead (one event fewer each): case_n10000_stag's run
//! loop 0.20 s -> 0.11 s (`--stats`); the whole command, farm-bench on a quiet machine,
//! 0.231 s against 0.223 s before (pairs' median ratio 0.915, spread 0.86-1.33: within this
//! VM's noise), 54 x SimGrid.
//! Side by side with SimGrid 3.32 on this VM (`tools/simgrid/flow-speed.sh CASE.json BIN 5`,
//! SimGrid run just before each hetsim run, 2026-11-30): case_n10000_stag SimGrid 22.1 s,
//! hetsim 0.183 s, 120 x (completion times within 7.8e-14); before mimalloc lost its huge
//! pages 91.8 x and 82.7 x (0.253 and 0.276 s). case_n1000_t0: 29 x. case_n10000_t0
//! (`flow-speed.sh CASE BIN 1`, 2026-11-30): SimGrid 318 s, hetsim 11.1 s, 28.7 x
//! (completion times within 7.4e-11). The target's 121 s for SimGrid was measured on a
//! faster day of this VM: 100 x SimGrid today is 3.2 s.
//! Long lists re-keyed by a bound (0d6b75a; farm-bench medians of interleaved pairs against
//! 91672f6's binary, 2026-11-30): 30,000 flows over 600 links, starts over 0.03 s
//! (`hetsim flowgen --flows 30000 --links 600 --stagger 0.03 --seed 1`) 52.7 s against
//! 101.7 s (2 pairs, A/B 0.52; exact re-keys 130 M -> 44 M); case_n10000_t0 5.54 s against
//! 5.70 s (5 pairs, A/B 0.98). The crowded generated case below (3,000 flows over 60 links)
//! ran 1.52 s against 2.65 s (one run each, beside a test suite). The 100,000-flow case
//! (`--flows 100000 --links 2000 --stagger 0.1 --seed 1`): 436 s of CPU against 627 s, each
//! beside another long run (`/usr/bin/time`). Same day, side by side (`flow-speed.sh`, the
//! other core running halo3d at 4,860 ranks): SimGrid 109 s on case_n10000_t0 against
//! hetsim 5.87 s (18.6 x); case_n10000_stag SimGrid 11.0 s against 0.089 s (124 x).
//! With completions per group (4209f22, farm-bench medians, 2026-11-30 evening):
//! case_n10000_t0 4.16 s (66430cc 4.37 s beside the clocks alone), case_n10000_stag 0.084 s.
//! With lazy bounds on a plain heap and exact re-keys for short lists only (43bebe6,
//! 2026-11-30 night, farm-bench against bc6420c): case_n10000_t0 3.81 s against 4.16 s
//! (A/B 0.913), case_n10000_stag 0.083 s against 0.084 s. The 100,000-flow case 200.9 s
//! (200.6 s of CPU, 153 MiB), against 219 s for bc6420c beside a build; completion times
//! within 3.9e-13 of bc6420c's.
//! Side by side again (a0a5b9a's binary, the code of 43bebe6, 2026-11-30 late;
//! `flow-speed.sh CASE BIN N`): case_n10000_t0 SimGrid 85.1 s, hetsim 3.83 s, **22.2 x**
//! (3 runs; a run the same hour 88.5 s against 3.82 s, 23.2 x; completion times within
//! 7.4e-11); case_n10000_stag SimGrid 10.59 s, hetsim 0.086 s, **123.4 x** (5 runs; within
//! 7.7e-14). SimGrid's 318 s above was a slow or disturbed run: on this VM 100 x SimGrid on
//! case_n10000_t0 is about 0.9 s, and the 1.2 s stands.
//! Lazy constraints off the scanned list and bounds dropped by a round (b1d35dc, 2026-12-01):
//! case_n10000_t0 3.77 s against a0a5b9a's 3.85 s (farm-bench, 5 pairs, A/B 1.021); the
//! 100,000-flow case 189.5 s (188.1 s of CPU, 153 MiB; the other core running halo3d).

use criterion::{Criterion, criterion_group, criterion_main};
use hetsim::RunOptions;
use hetsim::flowcase::{Recipe, generate, solve};

fn case(name: &str) -> String {
    std::fs::read_to_string(format!(
        "{}/tests/data/flows/perf/{name}.json",
        env!("CARGO_MANIFEST_DIR")
    ))
    .unwrap()
}

fn bench(c: &mut Criterion) {
    let mut g = c.benchmark_group("flows");
    g.sample_size(10);
    for name in ["case_n1000_t0", "case_n10000_stag", "case_n10000_t0"] {
        let text = case(name);
        g.bench_function(name, |b| {
            b.iter(|| solve(&text, name, &RunOptions::default()).unwrap())
        });
    }
    // The all-at-once recipe at a size between the two reference cases; and crowded links,
    // 50 flows a link with starts over 3 ms, so that constraints list many untouched flows
    // (re-keyed by a bound past `EXACT_REKEY_MAX`).
    for (name, links, stagger) in [
        ("generated_n3000_t0", 2000, 0.0),
        ("generated_n3000_l60_stag", 60, 0.003),
    ] {
        let text = generate(Recipe {
            flows: 3000,
            links,
            seed: 1,
            stagger,
        })
        .to_string();
        g.bench_function(name, |b| {
            b.iter(|| solve(&text, name, &RunOptions::default()).unwrap())
        });
    }
    g.finish();
}

criterion_group!(benches, bench);
criterion_main!(benches);
