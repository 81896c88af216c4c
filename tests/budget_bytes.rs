//! The memory budget's estimates (`schema/src/budget.rs`) against the bytes a run really
//! allocates, on small cases. Each case runs a shipped scenario at two sizes of the count an
//! estimate follows; what the heap's peak grew by must be at most what the estimates grew by
//! (they are upper bounds: a run they let through fits), and not so far below it that the
//! budget refuses runs that would fit easily.
//!
//! The heap is measured by a counting allocator, so this file holds one test: tests running
//! beside it on other threads would count into its peaks.

use std::alloc::{GlobalAlloc, Layout, System};
use std::sync::atomic::{AtomicUsize, Ordering::Relaxed};

use hetsim::schema::budget;
use hetsim::schema::load::load_scenario;

/// The system allocator, counting the bytes held now and the peak since the last reset.
struct Counting;

static NOW: AtomicUsize = AtomicUsize::new(0);
static PEAK: AtomicUsize = AtomicUsize::new(0);

fn grew(bytes: usize) {
    let now = NOW.fetch_add(bytes, Relaxed) + bytes;
    PEAK.fetch_max(now, Relaxed);
}

unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        let p = unsafe { System.alloc(layout) };
        if !p.is_null() {
            grew(layout.size());
        }
        p
    }

    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        unsafe { System.dealloc(ptr, layout) };
        NOW.fetch_sub(layout.size(), Relaxed);
    }

    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        let p = unsafe { System.realloc(ptr, layout, new_size) };
        if !p.is_null() {
            NOW.fetch_sub(layout.size(), Relaxed);
            grew(new_size);
        }
        p
    }
}

#[global_allocator]
static ALLOCATOR: Counting = Counting;

/// A shipped scenario with `set` applied, run to its end: the estimates' total and the heap's
/// peak above what was held before the run.
fn run(scenario: &str, set: &[String]) -> (f64, f64) {
    let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join(scenario);
    let s = load_scenario(&path, set).unwrap();
    let estimated: f64 = budget::estimates(&s).iter().map(|e| e.bytes).sum();
    let base = NOW.load(Relaxed);
    PEAK.store(base, Relaxed);
    let report = hetsim::simulate_report(&s, &hetsim::RunOptions::default());
    let peak = PEAK.load(Relaxed) - base;
    report.unwrap_or_else(|e| panic!("{scenario} {set:?}: {e}"));
    (estimated, peak as f64)
}

/// How far the estimates may lie above the measured growth: they are sized on the largest
/// shipped cases, where a rank or a task holds more than on these small ones.
const MAX_OVER: f64 = 64.0;

#[test]
fn each_estimate_bounds_what_its_count_allocates() {
    // (scenario, fixed settings, the count an estimate follows, its small and large value)
    let cases: [(&str, &[&str], &str, &str, &str); 9] = [
        ("scenarios/demo.ron", &[], "platform.nodes", "200", "400"),
        (
            "scenarios/demo.ron",
            &[],
            "platform.node.cpu_cores",
            "2000",
            "4000",
        ),
        (
            "scenarios/demo.ron",
            &[],
            "platform.node.gpus",
            "100",
            "200",
        ),
        (
            "scenarios/studies/nccl-allreduce.ron",
            &["workload.gpus=16", "platform.nodes=2"],
            "platform.network.FatTree.children",
            "[12, 30]",
            "[24, 60]",
        ),
        (
            "scenarios/cholesky-attila.ron",
            &[],
            "workload.n",
            "9600",
            "19200",
        ),
        (
            "scenarios/whatif/halo.ron",
            &["platform.nodes=16"],
            "workload.Mpi.ranks",
            "32",
            "64",
        ),
        (
            "scenarios/whatif/halo.ron",
            &[],
            "workload.Mpi.program.Generator.Halo3d.iterations",
            "20",
            "40",
        ),
        (
            "scenarios/dgx-a100-training.ron",
            &[],
            "workload.repeat",
            "20",
            "40",
        ),
        (
            "tests/data/scenarios/mix-pcie.ron",
            &[],
            "platform.node.gpus",
            "100",
            "200",
        ),
    ];
    for (scenario, fixed, field, small, large) in cases {
        let at = |value: &str| {
            let mut set: Vec<String> = fixed.iter().map(|s| s.to_string()).collect();
            set.push(format!("{field}={value}"));
            run(scenario, &set)
        };
        let (e1, m1) = at(small);
        let (e2, m2) = at(large);
        let (estimated, measured) = (e2 - e1, m2 - m1);
        eprintln!(
            "{scenario} {field} {small} -> {large}: estimated +{estimated:.3e} B, measured +{measured:.3e} B ({:.1}x)",
            estimated / measured
        );
        assert!(measured > 0.0, "{scenario}: {field} does not grow the heap");
        assert!(
            estimated >= measured,
            "{scenario}: {field} {small} -> {large} allocated {measured:.3e} B more, the estimates only {estimated:.3e} B"
        );
        assert!(
            estimated <= MAX_OVER * measured,
            "{scenario}: {field} {small} -> {large}: the estimates grew {estimated:.3e} B, {:.0} times the {measured:.3e} B allocated",
            estimated / measured
        );
    }
}
