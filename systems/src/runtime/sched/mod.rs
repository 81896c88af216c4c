//! StarPU's scheduling policies (src/sched_policies/), as the reference notes describe them,
//! one family per file: `eager.rs` (eager: one FIFO; prio: one priority list), `random.rs`
//! (weighted by relative speed-up), `ws.rs` (ws and lws: per-worker priority deques with
//! stealing; lws steals from workers of its own kind first), `dm.rs` (dm: earliest expected
//! finish; dmda: plus transfer penalty, alpha/beta fitness, prefetch at push; dmdar:
//! ready-first pop: among the tasks of the head's priority, the first lacking the fewest bytes
//! not valid, then not being loaded, then not allocated; dmdap: priority-sorted queues;
//! dmdas: both; dmdasd: dmdas whose decision counts only the queued work ahead of the task)
//! and `heteroprio.rs`. Ties go to the first
//! worker in StarPU's order (GPUs first).
//!
//! A policy sees the runtime through a [`View`] (the graph, the machine and models, the
//! replicas, predictions, which workers run, the clock and the run's random stream) and
//! returns what it decided ([`Pushed`]: a prediction to keep, a worker to prefetch for); it
//! never changes the runtime itself.
//! Simplified: see each policy's file.

mod dm;
mod eager;
mod heteroprio;
mod random;
mod ws;

use std::collections::VecDeque;

use rand_core::Rng;

use hetsim_schema::tasks::{Mode, Scheduler};

use super::data::coherency::Replicas;
use super::model::graph::Graph;
use super::model::machine::{Arch, Machine, Models, Worker};
pub use super::pacing::Wakes;

/// A scheduling policy: where ready tasks wait, and which one a worker takes.
pub trait Policy: Send + Sync {
    /// Task `t` became ready (released by worker `by`, or at submission).
    fn push(&mut self, t: u32, by: Option<u32>, rt: &mut View) -> Pushed;
    /// Worker `w` asks for work.
    fn pop(&mut self, w: usize, rt: &mut View) -> Option<u32>;
    /// Task `t`'s inputs are there and it starts on `w`.
    fn on_start(&mut self, _t: u32, _w: usize, _rt: &View) {}
    /// Task `t` ended on `w`.
    fn on_end(&mut self, _t: u32, _w: usize, _rt: &View) {}
    /// Tasks waiting in the policy's queues.
    fn queued(&self) -> usize;
    /// Tasks in worker `w`'s own queue, for policies that keep one (the runtime log).
    fn queued_on(&self, _w: usize) -> Option<usize> {
        None
    }
    /// Whom a push wakes, and whether StarPU-SimGrid's driver states pace the pops
    /// (`drivers.rs`, `threads.rs`).
    fn wakes(&self) -> Wakes {
        Wakes::AtOnce
    }
}

/// What a push decided beyond the policy's own queues.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct Pushed {
    /// dm*: the task's predicted (length, transfer not hidden), seconds.
    pub prediction: Option<(f64, f64)>,
    /// Bring the task's inputs to this worker's memory node now (dm* prefetch at push).
    pub prefetch: Option<usize>,
    /// The worker whose own queue took the task (dm*, random): only it can pop it, so only
    /// it is woken.
    pub queue: Option<usize>,
}

/// The policy of a scheduler, for `workers` workers.
pub fn policy(kind: Scheduler, workers: usize) -> Box<dyn Policy> {
    match kind {
        Scheduler::Eager => Box::new(eager::Central::new(false)),
        Scheduler::Prio => Box::new(eager::Central::new(true)),
        Scheduler::Random => Box::new(random::Random::new(workers)),
        Scheduler::Ws => Box::new(ws::WorkStealing::new(workers, false)),
        Scheduler::Lws => Box::new(ws::WorkStealing::new(workers, true)),
        Scheduler::Heteroprio => Box::new(heteroprio::Heteroprio::default()),
        Scheduler::Dm
        | Scheduler::Dmda
        | Scheduler::Dmdar
        | Scheduler::Dmdap
        | Scheduler::Dmdas
        | Scheduler::Dmdasd => Box::new(dm::DequeModel::new(kind, workers)),
    }
}

/// What a task still lacks on a worker's node, in bytes, in the order dmdar compares it.
#[derive(Debug, Clone, Copy, Default, PartialEq, PartialOrd)]
pub struct Missing {
    pub non_ready: f64,
    pub non_loading: f64,
    pub non_allocated: f64,
}

/// What a policy may read of the runtime (and the run's random stream it may draw from).
pub struct View<'a> {
    pub graph: &'a Graph,
    pub machine: &'a Machine,
    pub models: &'a mut Models,
    pub replicas: &'a Replicas,
    /// dm* predictions per task: (length, transfer not hidden).
    pub pred: &'a [(f64, f64)],
    /// The task each worker runs.
    pub running: &'a [Option<u32>],
    pub rng: &'a mut rand_chacha::ChaCha8Rng,
    /// The current time in seconds.
    pub now: f64,
    /// dmda's fitness weights (StarPU's alpha and beta).
    pub alpha: f64,
    pub beta: f64,
}

impl View<'_> {
    pub fn priority(&self, t: u32) -> i64 {
        self.graph.tasks[t as usize].priority
    }

    pub fn codelet(&self, t: u32) -> u16 {
        self.graph.tasks[t as usize].codelet
    }

    pub fn workers(&self) -> &[Worker] {
        &self.machine.workers
    }

    pub fn can_run(&mut self, t: u32, w: usize) -> bool {
        self.predicted(t, w).is_some()
    }

    /// The model's mean time of task `t` on worker `w` and whether the model is calibrated
    /// there (else dm* see NaN); `None`: it cannot run there.
    pub fn predicted(&mut self, t: u32, w: usize) -> Option<(f64, bool)> {
        let task = &self.graph.tasks[t as usize];
        if !self.machine.fits(w, task.size) {
            return None;
        }
        let arch = self.machine.workers[w].arch;
        self.models.timing(task, arch).map(|(m, _, cal)| (m, cal))
    }

    pub fn is_gpu(&self, w: usize) -> bool {
        matches!(self.machine.workers[w].arch, Arch::Cuda(_))
    }

    /// Workers of each kind: (GPUs, CPUs).
    pub fn worker_counts(&self) -> (usize, usize) {
        let gpus = (0..self.machine.workers.len())
            .filter(|&w| self.is_gpu(w))
            .count();
        (gpus, self.machine.workers.len() - gpus)
    }

    /// How much faster a GPU runs task `t` than a CPU core (the models' means): infinite
    /// when only GPUs can run it, 0 when only CPUs can.
    pub fn acceleration(&mut self, t: u32) -> f64 {
        let mean = |rt: &mut View, gpu: bool| {
            (0..rt.machine.workers.len())
                .find(|&w| rt.is_gpu(w) == gpu && rt.can_run(t, w))
                .and_then(|w| rt.predicted(t, w))
                .map(|(m, _)| m)
        };
        match (mean(self, false), mean(self, true)) {
            (Some(cpu), Some(gpu)) if gpu > 0.0 => cpu / gpu,
            (_, Some(_)) => f64::INFINITY,
            _ => 0.0,
        }
    }

    pub fn is_busy(&self, w: usize) -> bool {
        self.running[w].is_some()
    }

    /// A uniform draw in [0, 1) from the run's seeded stream.
    pub fn uniform(&mut self) -> f64 {
        uniform(self.rng)
    }

    pub fn prediction(&self, t: u32) -> (f64, f64) {
        self.pred[t as usize]
    }

    /// dmda's penalty: predicted time to bring the task's read data to `w`'s node (data
    /// valid there or already on its way cost nothing).
    pub fn transfer_penalty(&self, t: u32, w: usize) -> f64 {
        let node = self.machine.workers[w].node;
        let mut total = 0.0;
        for &(h, mode) in &self.graph.tasks[t as usize].accesses {
            if !mode.reads() {
                continue;
            }
            let r = self.replicas.get(h, node);
            if r.valid() || r.incoming.is_some() {
                continue;
            }
            let size = self.graph.handles[h as usize].size;
            if let Some(src) = self.replicas.source_for(h, node, size, self.machine) {
                total += self.machine.predict(src, node, size);
            }
        }
        total
    }

    /// Bytes the task would still need on `w`'s node (StarPU's
    /// `starpu_st_non_ready_buffers_size`): read and not valid, of those not being loaded
    /// either, and not allocated.
    pub fn missing_bytes(&self, t: u32, w: usize) -> Missing {
        let node = self.machine.workers[w].node;
        let mut m = Missing::default();
        for &(h, mode) in &self.graph.tasks[t as usize].accesses {
            if matches!(mode, Mode::Scratch | Mode::Redux) {
                continue;
            }
            let r = self.replicas.get(h, node);
            let size = self.graph.handles[h as usize].size;
            if mode.reads() && !r.valid() {
                m.non_ready += size;
                if !r.loading {
                    m.non_loading += size;
                }
            }
            if !r.allocated {
                m.non_allocated += size;
            }
        }
        m
    }
}

/// A uniform draw in [0, 1) from `rng`: its top 53 bits over 2^53.
pub fn uniform(rng: &mut rand_chacha::ChaCha8Rng) -> f64 {
    (rng.next_u64() >> 11) as f64 / (1u64 << 53) as f64
}

/// Inserts after every task of priority >= `prio` (highest first, FIFO within a priority).
fn insert_sorted(q: &mut VecDeque<u32>, t: u32, prio: i64, rt: &View) {
    let at = q.partition_point(|&x| rt.priority(x) >= prio);
    q.insert(at, t);
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::runtime::core::Runtime;
    use crate::runtime::data::coherency::Msi;
    use crate::runtime::model::Flags;
    use crate::runtime::setup::test_runtime;

    /// A runtime on one GPU (CUDA0) and one CPU core; the policies under test are separate
    /// from its own.
    fn runtime(dag: &str, models: &str) -> Runtime {
        test_runtime(dag, models, 16e9, Flags::default())
    }

    fn view(rt: &mut Runtime) -> View<'_> {
        rt.policy_and_view().1
    }

    const READS_X: &str = r#"(handles: [(name: "x", size: 1e9)],
        tasks: [(name: "t", codelet: "k", accesses: [("x", R)])])"#;
    const GPU_FASTER: &str =
        r#"{"k": (cpu: Some(Constant("100ms")), cuda: Some(Constant("10ms")))}"#;

    #[test]
    fn dmda_weighs_the_transfer_a_gpu_would_need() {
        // On the GPU: 10 ms after copying 1 GB, which StarPU predicts at 2 x ngpus x size /
        // bandwidth = 0.2 s: ends at 0.21 s, fitness (0.21 - 0.1) + 0.2 = 0.31. On the CPU
        // the data are there: ends at 0.1 s, fitness 0. dmda takes the CPU and prefetches
        // for it; dm, blind to data, takes the GPU.
        let mut rt = runtime(READS_X, GPU_FASTER);
        let mut dmda = policy(Scheduler::Dmda, 2);
        let pushed = dmda.push(0, None, &mut view(&mut rt));
        assert_eq!(
            pushed,
            Pushed {
                prediction: Some((0.1, 0.0)),
                prefetch: Some(1),
                queue: Some(1),
            }
        );
        assert_eq!(dmda.pop(0, &mut view(&mut rt)), None);
        assert_eq!(dmda.pop(1, &mut view(&mut rt)), Some(0));

        let mut dm = policy(Scheduler::Dm, 2);
        let pushed = dm.push(0, None, &mut view(&mut rt));
        assert_eq!(pushed.prefetch, None);
        assert_eq!(dm.pop(0, &mut view(&mut rt)), Some(0));

        // With x already valid on the GPU, dmda takes the GPU too.
        rt.data.replicas.get_mut(0, 1).state = Msi::Shared;
        let mut dmda = policy(Scheduler::Dmda, 2);
        let pushed = dmda.push(0, None, &mut view(&mut rt));
        assert_eq!(pushed.prefetch, Some(0));
        assert_eq!(pushed.prediction, Some((0.01, 0.0)));
    }

    #[test]
    fn dmdar_pops_the_first_task_lacking_the_least_among_the_head_priority() {
        // GPU-only codelet, so dmdar queues everything on CUDA0 in push order: a (priority 1,
        // x missing), b (priority 0, lacks nothing), c (priority 1, y missing but on its way),
        // d (priority 1, z there). StarPU's pop_first_ready_task skips lower priorities
        // without stopping, and ranks by bytes not valid, then not being loaded.
        let dag = r#"(handles: [(name: "x", size: 1e9), (name: "y", size: 1e9),
            (name: "z", size: 1e9)], tasks: [
            (name: "a", codelet: "g", priority: 1, accesses: [("x", R)]),
            (name: "b", codelet: "g", priority: 0),
            (name: "c", codelet: "g", priority: 1, accesses: [("y", R)]),
            (name: "d", codelet: "g", priority: 1, accesses: [("z", R)])])"#;
        let gpu_only = r#"{"g": (cpu: None, cuda: Some(Constant("10ms")))}"#;
        let mut rt = runtime(dag, gpu_only);
        rt.data.replicas.get_mut(1, 1).loading = true;
        for h in [1, 2] {
            rt.data.replicas.get_mut(h, 1).allocated = true;
        }
        rt.data.replicas.get_mut(2, 1).state = Msi::Shared;
        let mut dmdar = policy(Scheduler::Dmdar, 2);
        for t in 0..4 {
            dmdar.push(t, None, &mut view(&mut rt));
        }
        let order: Vec<_> = (0..4).map(|_| dmdar.pop(0, &mut view(&mut rt))).collect();
        assert_eq!(order, [Some(3), Some(2), Some(0), Some(1)]);
    }

    /// Four tasks a, b, c, d with priorities 0, 1, 1, 0 released by worker 0.
    const FOUR: &str = r#"(handles: [], tasks: [
        (name: "a", codelet: "k", priority: 0), (name: "b", codelet: "k", priority: 1),
        (name: "c", codelet: "k", priority: 1), (name: "d", codelet: "k", priority: 0)])"#;

    #[test]
    fn ws_thief_takes_the_newest_of_the_highest_priority_from_a_busy_victim() {
        // Worker 0's deque: b, c (priority 1, in release order), then a, d. StarPU 1.4's
        // owner pops from the front (prio_deque_pop_task_for_worker: list_begin), a thief
        // deques from the back of the highest priority (list_back_highest, then
        // list_prev_highest), and robs only a worker whose last pop returned a task.
        for kind in [Scheduler::Ws, Scheduler::Lws] {
            let mut rt = runtime(FOUR, GPU_FASTER);
            let mut ws = policy(kind, 2);
            for t in 0..4 {
                ws.push(t, Some(0), &mut view(&mut rt));
            }
            assert_eq!(ws.queued(), 4);
            // Worker 0 has not popped yet: not busy, nothing to steal.
            assert_eq!(ws.pop(1, &mut view(&mut rt)), None, "{kind:?}");
            assert_eq!(ws.pop(0, &mut view(&mut rt)), Some(1), "{kind:?}");
            // Busy now, even though nothing runs (`running` is empty throughout).
            assert_eq!(ws.pop(1, &mut view(&mut rt)), Some(2), "{kind:?}");
            // Of a and d (priority 0), the thief takes d, the owner a.
            assert_eq!(ws.pop(1, &mut view(&mut rt)), Some(3), "{kind:?}");
            assert_eq!(ws.pop(0, &mut view(&mut rt)), Some(0), "{kind:?}");
            // Worker 0's pop found its deque empty and stole nothing: no longer busy.
            assert_eq!(ws.pop(0, &mut view(&mut rt)), None, "{kind:?}");
        }
    }

    #[test]
    fn ws_submitted_tasks_go_round_robin_from_the_worker_after_the_last() {
        // StarPU's last_push_worker starts at 0 and is advanced before use: worker 1 first.
        let mut rt = runtime(FOUR, GPU_FASTER);
        let mut ws = policy(Scheduler::Ws, 2);
        for t in 0..3 {
            ws.push(t, None, &mut view(&mut rt));
        }
        // Worker 1 got a and c, worker 0 got b.
        assert_eq!(ws.pop(0, &mut view(&mut rt)), Some(1));
        assert_eq!(
            ws.pop(0, &mut view(&mut rt)),
            None,
            "worker 1 is not busy yet"
        );
        assert_eq!(ws.pop(1, &mut view(&mut rt)), Some(2), "priority 1 first");
        assert_eq!(ws.pop(1, &mut view(&mut rt)), Some(0));
    }

    #[test]
    fn eager_hands_out_in_arrival_order_and_prio_by_priority() {
        let dag = r#"(handles: [], tasks: [
            (name: "a", codelet: "k", priority: 0), (name: "b", codelet: "k", priority: 5)])"#;
        let mut rt = runtime(dag, GPU_FASTER);
        let mut eager = policy(Scheduler::Eager, 2);
        let mut prio = policy(Scheduler::Prio, 2);
        for t in 0..2 {
            eager.push(t, None, &mut view(&mut rt));
            prio.push(t, None, &mut view(&mut rt));
        }
        assert_eq!(eager.pop(1, &mut view(&mut rt)), Some(0));
        assert_eq!(prio.pop(1, &mut view(&mut rt)), Some(1));
    }
}
