//! Building the runtime of a task-graph workload: the graph (Cholesky, LU, QR generators or
//! a DAG), the machine and codelet models, and the checks that every task can run.

use hetsim_schema::scenario::{PlatformSpec, Workload};
use hetsim_schema::tasks::RuntimeSpec;

use super::core::Runtime;
use super::data::Data;
use super::model::Flags;
use super::model::Model;
use super::model::graph::{self, Graph};
use super::model::machine::{Arch, Machine, Models};
use super::model::tiled;
use super::out::{Out, RuntimeReport};
use super::pacing::Pacing;
use super::pacing::drivers::Drivers;
use super::sched;
use super::tasks::Tasks;
use super::workers::Workers;
use crate::platform::Topology;

/// The runtime of a task-graph workload on `platform` (`None`: not a task graph), checked:
/// every codelet has a model, every task can run somewhere and fits there.
pub fn build(
    cfg: (&Workload, &RuntimeSpec),
    platform: &PlatformSpec,
    topo: &mut Topology,
    flags: Flags,
    rng: rand_chacha::ChaCha8Rng,
) -> Result<Option<Runtime>, String> {
    let (workload, spec) = cfg;
    if let (Some(lo), Some(hi)) = (spec.min_priority, spec.max_priority)
        && lo > hi
    {
        return Err(format!(
            "runtime.min_priority ({lo}) is above runtime.max_priority ({hi})"
        ));
    }
    let Some((mut graph, flops)) = task_graph(workload)? else {
        return Ok(None);
    };
    let (lo, hi) = spec
        .scheduler
        .priority_range(spec.min_priority, spec.max_priority);
    graph.cap_priorities(lo, hi);
    for (name, model) in &spec.models {
        if model.cuda_sync
            && let Some(c) = graph.codelets.iter().position(|c| c == name)
        {
            graph.set_cuda_sync(c as u16);
        }
    }
    let machine = Machine::from_platform(platform, topo)?;
    if machine.workers.is_empty() {
        return Err("platform: the runtime has no worker (ncpu = 0 and ncuda = 0)".into());
    }
    let mut models = Models::new(&graph.codelets, &spec.models, platform)?;
    for (c, name) in graph.codelets.iter().enumerate() {
        let used = graph.tasks.iter().any(|t| t.codelet == c as u16);
        if used && !models.has_model(c as u16) {
            return Err(format!(
                "codelet `{name}` has no performance model: give runtime.models.{name}, or use a StarPU machine with {name}.<hostname>"
            ));
        }
    }
    check_every_task_runs(&graph, &machine, &mut models)?;
    check_times(&graph, &machine, &mut models)?;
    for (name, weight) in [("alpha", spec.alpha), ("beta", spec.beta)] {
        if !(weight.is_finite() && weight >= 0.0) {
            return Err(format!(
                "runtime.{name}: expected a finite weight of zero or more, got {weight}"
            ));
        }
    }
    let parts = Parts {
        graph,
        machine,
        models,
        flops,
    };
    Ok(Some(assemble(parts, spec, flags, rng)))
}

/// The task graph of a task-graph workload and its flop count (n^3/3 Cholesky, 2n^3/3 LU,
/// 4n^3/3 QR, the tasks' sum for a DAG); `None` for another workload.
fn task_graph(workload: &Workload) -> Result<Option<(Graph, f64)>, String> {
    Ok(Some(match workload {
        Workload::Cholesky(t) => {
            let n = t.n as f64;
            (
                tiled::cholesky(t.n, t.tile, t.precision.bytes())
                    .map_err(|e| format!("workload.Cholesky: {e}"))?,
                n * n * n / 3.0,
            )
        }
        Workload::Lu(t) => {
            let n = t.n as f64;
            (
                tiled::lu(t.n, t.tile, t.precision).map_err(|e| format!("workload.Lu: {e}"))?,
                2.0 * n * n * n / 3.0,
            )
        }
        Workload::Qr(t) => {
            let n = t.n as f64;
            (
                tiled::qr(t.n, t.tile, t.precision.bytes())
                    .map_err(|e| format!("workload.Qr: {e}"))?,
                4.0 * n * n * n / 3.0,
            )
        }
        Workload::Dag(d) => {
            let g = graph::from_dag(d).map_err(|e| format!("workload.Dag: {e}"))?;
            let f = g.flops();
            (g, f)
        }
        _ => return Ok(None),
    }))
}

/// Every task must run somewhere, and fit the memory of where it may run.
fn check_every_task_runs(
    graph: &Graph,
    machine: &Machine,
    models: &mut Models,
) -> Result<(), String> {
    for t in &graph.tasks {
        let runnable = (0..machine.workers.len())
            .any(|w| models.time(t, machine.workers[w].arch).is_some() && machine.fits(w, t.size));
        if !runnable {
            let why = if machine
                .workers
                .iter()
                .any(|w| models.time(t, w.arch).is_some())
            {
                format!(
                    "its data ({} bytes) do not fit the memory of any worker that can run it",
                    t.size
                )
            } else {
                match models.source(t.codelet) {
                    Some(at) => format!(
                        "no worker has a model for it at this size (no finite entry or regression in {at})"
                    ),
                    None => "no worker has a model for it at this size".to_string(),
                }
            };
            return Err(format!(
                "task {} ({}) cannot run: {why}",
                t.label, graph.codelets[t.codelet as usize]
            ));
        }
    }
    Ok(())
}

/// Every time a codelet's model gives a task, on every kind of worker that can run it, is a
/// finite time of zero or more: a regression with negative coefficients, or a history with
/// negative means, would otherwise run as a task of no time.
fn check_times(graph: &Graph, machine: &Machine, models: &mut Models) -> Result<(), String> {
    let mut archs: Vec<Arch> = machine.workers.iter().map(|w| w.arch).collect();
    archs.dedup();
    for t in &graph.tasks {
        for &arch in &archs {
            let Some((mean, sd)) = models.time(t, arch) else {
                continue;
            };
            if !(mean.is_finite() && mean >= 0.0 && sd.is_finite() && sd >= 0.0) {
                return Err(format!(
                    "task {} ({}): its model on {arch:?} gives {mean} s (standard deviation {sd} s) at {} bytes; expected finite times of zero or more (the model: {})",
                    t.label,
                    graph.codelets[t.codelet as usize],
                    t.size,
                    models.source(t.codelet).unwrap_or("none")
                ));
            }
        }
    }
    Ok(())
}

/// What a runtime is made of, checked.
pub struct Parts {
    pub graph: Graph,
    pub machine: Machine,
    pub models: Models,
    /// The application's flop count (for GFlop/s).
    pub flops: f64,
}

/// A runtime at time 0 over checked parts: every task blocked, data at home, workers idle.
pub fn assemble(
    parts: Parts,
    spec: &RuntimeSpec,
    flags: Flags,
    rng: rand_chacha::ChaCha8Rng,
) -> Runtime {
    let Parts {
        graph,
        machine,
        models,
        flops,
    } = parts;
    let nw = machine.workers.len();
    let policy = sched::policy(spec.scheduler, nw);
    let cuda = machine
        .workers
        .iter()
        .map(|w| matches!(w.arch, Arch::Cuda(_)))
        .collect();
    let report = RuntimeReport {
        scheduler: format!("{:?}", spec.scheduler).to_lowercase(),
        tasks: graph.tasks.len() as u64,
        task_times: vec![(f64::NAN, f64::NAN, u32::MAX); graph.tasks.len()],
        ..Default::default()
    };
    Runtime {
        tasks: Tasks::new(&graph, flops),
        workers: Workers::new(nw),
        pacing: Pacing::new(policy.wakes(), Drivers::new(cuda)),
        data: Data::new(&graph, machine.nodes.len()),
        out: Out {
            report,
            ..Default::default()
        },
        model: Model {
            graph,
            machine,
            models,
            flags,
            alpha: spec.alpha,
            beta: spec.beta,
            pipeline: spec.cuda_pipeline.max(1),
        },
        sched: Some(policy),
        rng: Some(rng),
    }
}

/// The switches of the leaves' unit tests: no overheads (hand-computable times), memory
/// limit, shared bus and prefetch on, no noise, no tidying.
#[cfg(test)]
pub const TEST_FLAGS: Flags = Flags {
    overheads: false,
    mem_limit: true,
    shared_bus: true,
    prefetch: true,
    noise: false,
    tidy: false,
};

/// Four 1 GB handles at home in RAM, on a GPU that holds two and a half (the memory
/// leaves' unit tests).
#[cfg(test)]
pub fn four_handles() -> Runtime {
    let dag = r#"(handles: [(name: "a", size: 1e9), (name: "b", size: 1e9),
        (name: "c", size: 1e9), (name: "d", size: 1e9)], tasks: [])"#;
    test_runtime(dag, "{}", 2.5e9, TEST_FLAGS)
}

/// [`four_handles`] with a and b on the GPU, written there (RAM's copies are stale).
#[cfg(test)]
pub fn a_and_b_written_on_the_gpu() -> Runtime {
    use super::data::coherency::Msi;
    use super::data::kinds::Evict;
    let mut rt = four_handles();
    for h in 0..2 {
        assert!(rt.with_data(|d, cx| d.allocate(cx, h, 1, Evict::ForFetch)));
        rt.data.replicas.get_mut(h, 1).state = Msi::Owner;
        rt.data.replicas.get_mut(h, 0).state = Msi::Invalid;
    }
    rt
}

/// A runtime on one GPU (CUDA0, memory node 1 of `gpu_bytes`, 10 GB/s to RAM both ways, no
/// latency) and one CPU core, for the leaves' unit tests.
#[cfg(test)]
pub fn test_runtime(dag: &str, models: &str, gpu_bytes: f64, flags: Flags) -> Runtime {
    use super::model::machine::{Arch, MemNode, Worker};
    use crate::platform::Endpoint;
    use hetsim_schema::load::from_ron;
    use rand_core::SeedableRng;

    let dag: hetsim_schema::tasks::DagSpec = from_ron(dag, "test", "").unwrap();
    let graph = graph::from_dag(&dag).unwrap();
    let given = from_ron(models, "test", "").unwrap();
    let platform = PlatformSpec::File(String::new());
    let models = Models::new(&graph.codelets, &given, &platform).unwrap();
    let worker = |arch, node, name: &str, speedup| Worker {
        arch,
        node,
        name: name.into(),
        speedup,
    };
    let node = |name: &str, endpoint, capacity| MemNode {
        name: name.into(),
        endpoint,
        capacity,
    };
    let machine = Machine {
        workers: vec![
            worker(Arch::Cuda(0), 1, "CUDA0", 13.33),
            worker(Arch::Cpu, 0, "CPU0", 0.5),
        ],
        nodes: vec![
            node("RAM", Endpoint::Host { node: 0 }, f64::INFINITY),
            node("CUDA0", Endpoint::Gpu { node: 0, gpu: 0 }, gpu_bytes),
        ],
        bw: vec![vec![0.0, 10e9], vec![10e9, 0.0]],
        lat: vec![vec![0.0; 2]; 2],
        direct: vec![vec![true; 2]; 2],
    };
    let parts = Parts {
        graph,
        machine,
        models,
        flops: 0.0,
    };
    let spec = RuntimeSpec::default();
    assemble(
        parts,
        &spec,
        flags,
        rand_chacha::ChaCha8Rng::seed_from_u64(1),
    )
}
