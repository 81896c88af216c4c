//! The StarPU-like task runtime: a task graph ([`graph`]) runs on workers ([`machine`]: GPUs
//! first, then CPU cores) under one of StarPU's policies ([`sched`]), with data kept
//! coherent per memory node (MSI replicas) and moved by transfers that are flows on the
//! platform's links.
//!
//! A task becomes ready when its dependencies are done and is pushed to the policy. A worker
//! holds at most `cuda_pipeline` tasks (GPUs) or one (CPUs); it pops when it has room and no
//! task is still fetching its inputs. Fetching allocates each buffer on the worker's memory
//! node (evicting least-recently-used replicas that no task uses: dropped when another valid
//! copy exists, written back to RAM first when they are the only one) and transfers every
//! buffer it reads that is not valid there from the valid copy StarPU would pick (the direct
//! source with the smallest predicted time; RAM, then a GPU, when none is direct). GPU-to-GPU
//! copies go directly only where the two GPUs have peer access, else through RAM in two hops.
//! Copies between the same pair of nodes, and a GPU-to-GPU copy against copies into either of
//! its ends, go one at a time as in StarPU-SimGrid. A worker runs its ready tasks in order, one
//! at a time, for the codelet model's time. Writes make the worker's replica the owner and
//! invalidate the others.
//! Runtime overheads (switch `runtime_overheads`, StarPU-SimGrid's figures): 10 us before each
//! transfer and each GPU kernel, 175 us per cudaMalloc (a cached buffer of the same size is
//! reused without it), 750 us per cudaFree when memory runs short and the cache holds other
//! sizes, 650 us per MiB of pinned RAM for handles without home data. Costs a node's driver
//! owes are paid by its next copy or task.
//! Requests have StarPU's levels: a task's fetch goes before push-time prefetches, which go
//! before idle write-backs; a node pair starts fetches while fewer than 5 requests are in
//! flight on it, prefetches while fewer than 2, idle requests when none is. A prefetch may
//! evict idle replicas no other queued task prefetched; one that finds no memory is retried,
//! most urgent first, when memory frees up on its node. A `wont_use` hint moves the handle's
//! GPU copies to the front of the eviction order and writes a dirty one back at idle level.
//! A task that writes a handle waits until no transfer of it is in flight.
//! Simplified: no background tidying (StarPU's 5 %/10 % clean-buffer targets), no
//! sub-allocator, conflicts between transfers are checked when a transfer starts, a cudaFree
//! does not wait for transfers in flight, and redux accesses are plain writes (no init or
//! reduction tasks).

pub mod graph;
pub mod machine;
mod memory;
pub mod sched;

use bevy_app::{App, Plugin};
use bevy_ecs::prelude::*;
use rand_core::Rng;
use std::collections::{BinaryHeap, VecDeque};

use hetsim_components::SimTime;
use hetsim_components::scenario::Workload;
use hetsim_components::tasks::{Mode, RuntimeSpec};
use hetsim_engine::record::{Interval, Recorder, ResId, ResourceKind};
use hetsim_engine::{
    Calendar, Clock, Inbox, SimAppExt, SimErrors, SimEvent, SimRng, SimSet, SimStartup, SimStep,
    StartupSet, Switches,
};

use crate::network::{FlowRequest, Launch, Start};
use crate::platform::{PlatformConfig, Topology};
use graph::{Graph, Priorities};
use machine::{Arch, Machine, Models};
use memory::{Msi, Replicas};
use sched::{Policy, View};

/// The task-graph workload and runtime settings (inserted by whoever assembles the app).
#[derive(Resource, Debug, Clone)]
pub struct RuntimeConfig {
    pub workload: Workload,
    pub runtime: RuntimeSpec,
}

/// StarPU-SimGrid's runtime costs (notes 5.2), seconds: per transfer and per GPU kernel
/// queued, cudaMalloc, cudaFree, and pinning host memory per MiB.
const QUEUE_COST: f64 = 10e-6;
const CUDA_MALLOC: f64 = 175e-6;
const CUDA_FREE: f64 = 750e-6;
const PINNED_PER_MIB: f64 = 650e-6;
const MIB: f64 = 1048576.0;

/// Whether an allocation may evict replicas, and which.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Evict {
    No,
    /// A task's fetch: any idle replica.
    ForFetch,
    /// A push-time prefetch: idle replicas no other queued task prefetched.
    ForPrefetch,
}

/// A prefetch waiting for memory: (task priority, first postponed first, handle, task).
type Postponed = (i64, std::cmp::Reverse<u64>, u32, u32);

/// StarPU's request levels: a task that needs its data now, a push-time prefetch, or an
/// idle write-back. Served in that order; a node pair starts fetches while fewer than
/// [`FETCH_CAP`] requests are in flight on it, prefetches while fewer than [`PREFETCH_CAP`]
/// are, idle requests only when none is.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Default)]
enum Level {
    #[default]
    Fetch,
    Prefetch,
    Idle,
}

/// StarPU 1.4's per-(node, peer, direction) caps on requests in flight (notes 2.4).
const FETCH_CAP: u32 = 5;
const PREFETCH_CAP: u32 = 2;
const IDLE_CAP: u32 = 1;

#[derive(Debug, Clone, Default)]
struct Xfer {
    handle: u32,
    src: u32,
    dst: u32,
    /// A write-back of an evicted replica (frees the source when done; started at once, outside
    /// the request lists, as StarPU's synchronous write-back).
    writeback: bool,
    level: Level,
    /// The priority of the task it is for (request lists are served most urgent first).
    prio: i64,
    /// Taken off its request list and started.
    launched: bool,
    /// GPUs to forward the data to once they land in RAM (no peer access to the source).
    then: Vec<u32>,
    /// When its queueing costs are paid and it may start.
    ready_at: SimTime,
    /// Earlier transfers it waits for, and later ones waiting for it (StarPU-SimGrid's
    /// serialisation: one copy at a time per node pair and per GPU-GPU pair).
    waits: u32,
    wakes: Vec<u32>,
}

impl Xfer {
    /// StarPU-SimGrid's rule for two copies that must not overlap (`new` waits for `old`):
    /// the same node pair (one CUDA stream per pair), crossed GPU-GPU copies, or a GPU-GPU
    /// copy and a copy into one of its ends.
    fn after(new: (u32, u32), old: (u32, u32)) -> bool {
        let gpu_gpu = |(s, d): (u32, u32)| s != 0 && d != 0;
        new == old
            || (gpu_gpu(new) && gpu_gpu(old) && new == (old.1, old.0))
            || (gpu_gpu(new) && (old.1 == new.0 || old.1 == new.1))
            || (gpu_gpu(old) && (new.1 == old.0 || new.1 == old.1))
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum TaskState {
    Blocked,
    Queued,
    Fetching,
    Ready,
    Running,
    Done,
}

#[derive(Debug, Default)]
struct WorkerRt {
    /// Popped tasks in order: the front runs first.
    in_hand: VecDeque<u32>,
    fetching: Option<u32>,
    busy_s: f64,
    tasks: u64,
    row: Option<ResId>,
}

/// What the runtime did, for the summary.
#[derive(Resource, Debug, Clone, Default)]
pub struct RuntimeReport {
    pub scheduler: String,
    pub tasks: u64,
    pub makespan_s: f64,
    /// The application's flop count (n^3/3 Cholesky, 2n^3/3 LU, 4n^3/3 QR; the tasks' sum for
    /// a DAG) over the makespan.
    pub gflops: f64,
    pub workers: Vec<(String, f64, u64)>,
    pub bytes_h2d: f64,
    pub bytes_d2h: f64,
    pub bytes_d2d: f64,
    pub transfers: u64,
    pub evictions: u64,
    pub writebacks: u64,
    /// Per task: start, end (s) and worker index.
    pub task_times: Vec<(f64, f64, u32)>,
    /// Per memory node: name, capacity and the most bytes ever allocated there.
    pub memory: Vec<(String, f64, f64)>,
    /// Each worker's memory node (index into `memory`).
    pub worker_nodes: Vec<u32>,
    /// The task graph that ran (for StarPU-style traces: tasks.rec, data.rec, dag.dot).
    pub graph: std::sync::Arc<Graph>,
}

/// The runtime's whole state.
#[derive(Resource, Default)]
pub struct Runtime {
    graph: Graph,
    pub(crate) machine: Machine,
    models: Models,
    /// The scheduling policy (set up with the runtime).
    sched: Option<Box<dyn Policy>>,
    state: Vec<TaskState>,
    left: Vec<u32>,
    worker_of: Vec<u32>,
    /// dm* predictions per task: (length, transfer not hidden), seconds.
    pred: Vec<(f64, f64)>,
    replicas: Replicas,
    used: Vec<f64>,
    peak: Vec<f64>,
    /// Allocated GPU replicas per node by last use: the eviction order.
    lru: Vec<std::collections::BTreeSet<(u64, u32)>>,
    /// Freed GPU buffers by node (sizes), still counted as used: reusable without
    /// cudaMalloc, or freed with cudaFree when memory runs short.
    cache: Vec<Vec<f64>>,
    /// Allocation costs (cudaMalloc, cudaFree, pinned RAM) each node's driver still owes:
    /// paid by the next copy into the node or the next task started there.
    debt: Vec<f64>,
    xfers: Vec<Xfer>,
    /// Requests not yet started, per node pair (`src * nodes + dst`).
    requests: Vec<Vec<u32>>,
    /// Requests started and not finished, per node pair.
    inflight: Vec<u32>,
    /// Transfers of each handle requested and not finished: a task that writes the handle
    /// waits until there are none (a write-back in flight must not land after the write).
    handle_xfers: Vec<u32>,
    /// Workers whose fetched task waits so, with the handle.
    write_wait: Vec<(u32, u32)>,
    /// Transfers queued or running on the shared bus.
    pending: Vec<u32>,
    /// Tasks each `wont_use` hint still waits for.
    hints_left: Vec<u32>,
    /// Tasks waiting for memory on each node.
    mem_wait: Vec<Vec<u32>>,
    /// A prefetch found nothing to evict on the node: later prefetches there use free memory
    /// only, until a task ends there (StarPU's `prefetch_out_of_memory`).
    prefetch_oom: Vec<bool>,
    /// Tasks whose inputs are pinned by their push-time prefetch, until they are popped.
    prefetched: Vec<bool>,
    /// Prefetches that found no memory, per node, most urgent on top (task priority, then
    /// first postponed): retried when memory frees up there, while their task is queued.
    postponed: Vec<BinaryHeap<Postponed>>,
    postponed_seq: u64,
    /// Nodes where memory was freed this step.
    freed: Vec<bool>,
    workers: Vec<WorkerRt>,
    /// The task each worker runs.
    running: Vec<Option<u32>>,
    /// Worker indices that may make progress.
    dirty: Vec<u32>,
    dirty_mark: Vec<bool>,
    tick: u64,
    now: SimTime,
    pub(crate) alpha: f64,
    pub(crate) beta: f64,
    pipeline: u32,
    overheads: bool,
    mem_limit: bool,
    shared_bus: bool,
    prefetch_on: bool,
    noise: bool,
    rng: Option<rand_chacha::ChaCha8Rng>,
    flops: f64,
    done: u64,
    report: RuntimeReport,
    /// Events to schedule after a step's work: (time, event).
    timers: Vec<(SimTime, RtEvent)>,
    flows: Vec<(SimTime, u32)>,
    intervals: Vec<(ResId, u16, u32, SimTime, SimTime)>,
}

/// A task's time is up, or a transfer (off the shared bus) is over.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
enum RtEvent {
    TaskDone(u32),
    XferDone(u32),
    Start,
}

impl SimEvent for RtEvent {
    const NAME: &'static str = "runtime.event";
    fn pack(&self) -> (Entity, u64) {
        let (k, v) = match *self {
            RtEvent::TaskDone(t) => (0u64, t),
            RtEvent::XferDone(x) => (1, x),
            RtEvent::Start => (2, 0),
        };
        (Entity::PLACEHOLDER, (k << 32) | v as u64)
    }
    fn unpack(_: Entity, arg: u64) -> Self {
        let v = arg as u32;
        match arg >> 32 {
            0 => RtEvent::TaskDone(v),
            1 => RtEvent::XferDone(v),
            _ => RtEvent::Start,
        }
    }
}

/// The flow of transfer `x` has delivered its bytes.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
struct XferFlowDone(u32);

impl SimEvent for XferFlowDone {
    const NAME: &'static str = "runtime.xfer_flow_done";
    fn pack(&self) -> (Entity, u64) {
        (Entity::PLACEHOLDER, self.0 as u64)
    }
    fn unpack(_: Entity, arg: u64) -> Self {
        XferFlowDone(arg as u32)
    }
}

pub struct RuntimePlugin;

impl Plugin for RuntimePlugin {
    fn build(&self, app: &mut App) {
        app.add_sim_event::<RtEvent>()
            .add_sim_event::<XferFlowDone>()
            .register_switch("gpu_memory_limit", true, "GPU memory holds at most its capacity (90 % of the device, or limit_cuda_mem_mb); replicas are evicted LRU with write-back; off: unlimited")
            .register_switch("runtime_overheads", true, "StarPU-SimGrid's runtime costs: 10 us per transfer and per GPU kernel, 175 us per cudaMalloc; off: none")
            .register_switch("pcie_shared_bus", true, "data transfers are flows sharing the platform's PCIe links; off: each transfer alone at latency + size / bandwidth (one independent link per transfer)")
            .register_switch("prefetch", true, "dm* schedulers prefetch a task's inputs when they assign it; off: data move when the task is popped")
            .register_switch("perfmodel_noise", false, "task times drawn from the model's normal distribution (mean, stddev; seeded); off: the mean")
            .describe_model("runtime", "StarPU-like task runtime: tasks with access modes and implicit dependencies; CPU and GPU workers (GPU pipeline of 2); MSI replicas per memory node, LRU eviction with write-back, transfers as flows; eager, prio, random, ws, lws, dm, dmda, dmdar, dmdap, dmdas, dmdasd, heteroprio (automatic buckets); GPU-GPU copies with peer access else through RAM, StarPU-SimGrid's copy serialisation and allocation costs; fetch, prefetch and idle request levels with StarPU's in-flight caps (5/2/idle per node pair), wont_use idle write-backs; StarPU codelet models and bus files. Simplified: no background tidying, no sub-allocator")
            .init_resource::<Runtime>()
            .add_systems(SimStartup, setup_runtime.in_set(StartupSet::Workload))
            .add_systems(
                SimStep,
                (finish_runtime_flows, run_runtime)
                    .chain()
                    .in_set(SimSet::Runtime)
                    .run_if(resource_exists::<RuntimeConfig>),
            )
            .add_systems(
                SimStep,
                record_runtime_intervals
                    .in_set(SimSet::Record)
                    .run_if(resource_exists::<RuntimeConfig>),
            )
            .add_systems(hetsim_engine::SimFinish, publish_runtime_report)
            .add_stall_check(stuck_tasks);
    }
}

fn setup_runtime(world: &mut World) {
    let Some(cfg) = world.get_resource::<RuntimeConfig>().cloned() else {
        return;
    };
    if let Err(e) = setup(world, &cfg) {
        world.resource_mut::<SimErrors>().0.push(e);
    }
}

fn setup(world: &mut World, cfg: &RuntimeConfig) -> Result<(), String> {
    let platform = world.resource::<PlatformConfig>().0.clone();
    let prio = if cfg.runtime.scheduler.uses_priorities() {
        Priorities::Used
    } else {
        Priorities::Ignored
    };
    let (graph, flops) = match &cfg.workload {
        Workload::Cholesky(t) => {
            let n = t.n as f64;
            (
                graph::cholesky(t.n, t.tile, t.precision.bytes(), prio)
                    .map_err(|e| format!("workload.Cholesky: {e}"))?,
                n * n * n / 3.0,
            )
        }
        Workload::Lu(t) => {
            let n = t.n as f64;
            (
                graph::lu(t.n, t.tile, t.precision).map_err(|e| format!("workload.Lu: {e}"))?,
                2.0 * n * n * n / 3.0,
            )
        }
        Workload::Qr(t) => {
            let n = t.n as f64;
            (
                graph::qr(t.n, t.tile, t.precision.bytes())
                    .map_err(|e| format!("workload.Qr: {e}"))?,
                4.0 * n * n * n / 3.0,
            )
        }
        Workload::Dag(d) => {
            let g = graph::from_dag(d).map_err(|e| format!("workload.Dag: {e}"))?;
            let f = g.flops();
            (g, f)
        }
        _ => return Ok(()),
    };
    let machine = {
        let Some(mut topo) = world.get_resource_mut::<Topology>() else {
            return Ok(()); // the platform's own error is reported
        };
        Machine::from_platform(&platform, &mut topo)?
    };
    if machine.workers.is_empty() {
        return Err("platform: the runtime has no worker (ncpu = 0 and ncuda = 0)".into());
    }
    let mut models = Models::new(&graph.codelets, &cfg.runtime.models, &platform)?;
    for (c, name) in graph.codelets.iter().enumerate() {
        let used = graph.tasks.iter().any(|t| t.codelet == c as u16);
        if used && !models.has_model(c as u16) {
            return Err(format!(
                "codelet `{name}` has no performance model: give runtime.models.{name}, or use a StarPU machine with {name}.<hostname>"
            ));
        }
    }
    // Every task must run somewhere, and fit the memory of where it may run.
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
                "no worker has a model for it at this size".to_string()
            };
            return Err(format!(
                "task {} ({}) cannot run: {why}",
                t.label, graph.codelets[t.codelet as usize]
            ));
        }
    }
    let switches = world.resource::<Switches>();
    let (overheads, mem_limit, shared_bus, prefetch_on, noise) = (
        switches.is_on("runtime_overheads"),
        switches.is_on("gpu_memory_limit"),
        switches.is_on("pcie_shared_bus"),
        switches.is_on("prefetch"),
        switches.is_on("perfmodel_noise"),
    );
    let seed_rng = {
        use rand_core::SeedableRng;
        let seed = world.resource_mut::<SimRng>().0.next_u64();
        rand_chacha::ChaCha8Rng::seed_from_u64(seed)
    };
    let recording = world.resource::<Recorder>().is_on();
    let mut workers: Vec<WorkerRt> = (0..machine.workers.len())
        .map(|_| WorkerRt::default())
        .collect();
    if recording {
        let mut rec = world.resource_mut::<Recorder>();
        for (w, info) in machine.workers.iter().enumerate() {
            workers[w].row = Some(rec.resource(ResourceKind::Worker, &info.name));
        }
    }
    let nt = graph.tasks.len();
    let nn = machine.nodes.len();
    let replicas = Replicas::new(&graph, nn);
    let nw = machine.workers.len();
    let rt = Runtime {
        state: vec![TaskState::Blocked; nt],
        left: graph.npred.clone(),
        worker_of: vec![u32::MAX; nt],
        pred: vec![(0.0, 0.0); nt],
        replicas,
        used: vec![0.0; nn],
        peak: vec![0.0; nn],
        lru: vec![Default::default(); nn],
        cache: vec![Vec::new(); nn],
        debt: vec![0.0; nn],
        mem_wait: vec![Vec::new(); nn],
        prefetch_oom: vec![false; nn],
        requests: vec![Vec::new(); nn * nn],
        inflight: vec![0; nn * nn],
        handle_xfers: vec![0; graph.handles.len()],
        write_wait: Vec::new(),
        prefetched: vec![false; nt],
        postponed: vec![BinaryHeap::new(); nn],
        freed: vec![false; nn],
        workers,
        dirty_mark: vec![false; nw],
        hints_left: graph.hints.iter().map(|h| h.1).collect(),
        sched: Some(sched::policy(cfg.runtime.scheduler, nw)),
        running: vec![None; nw],
        alpha: cfg.runtime.alpha,
        beta: cfg.runtime.beta,
        pipeline: cfg.runtime.cuda_pipeline.max(1),
        overheads,
        mem_limit,
        shared_bus,
        prefetch_on,
        noise,
        rng: Some(seed_rng),
        flops,
        report: RuntimeReport {
            scheduler: format!("{:?}", cfg.runtime.scheduler).to_lowercase(),
            tasks: nt as u64,
            task_times: vec![(f64::NAN, f64::NAN, u32::MAX); nt],
            ..Default::default()
        },
        graph,
        machine,
        models,
        ..Default::default()
    };
    world.insert_resource(rt);
    world
        .resource_mut::<Calendar>()
        .schedule(SimTime::ZERO, RtEvent::Start);
    Ok(())
}

/// Everything a step needs to start flows and timers.
#[derive(bevy_ecs::system::SystemParam)]
struct Ctx<'w, 's> {
    cal: ResMut<'w, Calendar>,
    clock: Res<'w, Clock>,
    topo: ResMut<'w, Topology>,
    errors: ResMut<'w, SimErrors>,
    launch: Launch<'w, 's>,
}

fn finish_runtime_flows(
    mut inbox: ResMut<Inbox<XferFlowDone>>,
    mut rt: ResMut<Runtime>,
    clock: Res<Clock>,
) {
    rt.now = clock.now;
    for XferFlowDone(x) in inbox.drain() {
        rt.xfer_done(x);
    }
}

fn run_runtime(mut inbox: ResMut<Inbox<RtEvent>>, mut rt: ResMut<Runtime>, mut cx: Ctx) {
    rt.now = cx.clock.now;
    for ev in inbox.drain() {
        match ev {
            RtEvent::Start => {
                let roots: Vec<u32> = (0..rt.left.len() as u32)
                    .filter(|&t| rt.left[t as usize] == 0)
                    .collect();
                for t in roots {
                    rt.release(t, None);
                }
            }
            RtEvent::TaskDone(t) => rt.task_done(t),
            RtEvent::XferDone(x) => rt.xfer_done(x),
        }
    }
    rt.progress();
    rt.flush(&mut cx);
}

fn record_runtime_intervals(mut rt: ResMut<Runtime>, mut rec: ResMut<Recorder>) {
    let rows = std::mem::take(&mut rt.intervals);
    for (row, codelet, t, start, end) in rows {
        let state = rec.name_id(graph::kernel(&rt.graph.codelets[codelet as usize]));
        let label = rec.name_id(&rt.graph.tasks[t as usize].label);
        rec.interval(Interval {
            resource: row,
            state,
            label: Some(label),
            start,
            end,
        });
    }
}

impl Runtime {
    fn priority(&self, t: u32) -> i64 {
        self.graph.tasks[t as usize].priority
    }

    fn uniform(&mut self) -> f64 {
        let x = self.rng.as_mut().expect("seeded").next_u64();
        (x >> 11) as f64 / (1u64 << 53) as f64
    }

    /// The policy, and what it may read of the rest of the runtime.
    fn policy_and_view(&mut self) -> (&mut dyn Policy, View<'_>) {
        let Runtime {
            sched,
            graph,
            machine,
            models,
            replicas,
            pred,
            running,
            rng,
            now,
            alpha,
            beta,
            ..
        } = self;
        let view = View {
            graph,
            machine,
            models,
            replicas,
            pred,
            running,
            rng: rng.as_mut().expect("seeded"),
            now: now.as_secs_f64(),
            alpha: *alpha,
            beta: *beta,
        };
        (sched.as_deref_mut().expect("a policy"), view)
    }

    fn source_for(&self, h: u32, dst: u32) -> Option<u32> {
        let size = self.graph.handles[h as usize].size;
        self.replicas.source_for(h, dst, size, &self.machine)
    }

    /// Task `t`'s dependencies are done: hand it to the policy.
    fn release(&mut self, t: u32, by: Option<u32>) {
        self.state[t as usize] = TaskState::Queued;
        let (policy, mut view) = self.policy_and_view();
        let pushed = policy.push(t, by, &mut view);
        if let Some(p) = pushed.prediction {
            self.pred[t as usize] = p;
        }
        if let Some(w) = pushed.prefetch {
            self.prefetch(t, w);
        }
        self.wake_all();
    }

    /// dm* prefetch at push: start bringing the task's inputs to `w`'s node. The replicas
    /// stay pinned against other prefetches' evictions until the task is popped.
    fn prefetch(&mut self, t: u32, w: usize) {
        if !self.prefetch_on {
            return;
        }
        let node = self.machine.workers[w].node;
        self.prefetched[t as usize] = true;
        let acc = self.graph.tasks[t as usize].accesses.clone();
        for (h, mode) in acc {
            if !mode.reads() {
                continue;
            }
            self.replicas.get_mut(h, node).prefetch_pins += 1;
            if self.replicas.get(h, node).state == Msi::Invalid {
                let prio = self.priority(t);
                if self.allocate(h, node, Evict::ForPrefetch) {
                    self.request(h, node, Level::Prefetch, prio);
                } else {
                    self.postponed_seq += 1;
                    let seq = std::cmp::Reverse(self.postponed_seq);
                    self.postponed[node as usize].push((prio, seq, h, t));
                }
            }
        }
    }

    /// Memory came free on `node`: postponed prefetches go again, most urgent first, until
    /// one still finds none.
    fn retry_prefetches(&mut self, node: u32) {
        while let Some(&(prio, seq, h, t)) = self.postponed[node as usize].peek() {
            if self.prefetched[t as usize] && self.replicas.get(h, node).state == Msi::Invalid {
                if !self.allocate(h, node, Evict::ForPrefetch) {
                    break;
                }
                self.request(h, node, Level::Prefetch, prio);
            }
            // Brought, popped (its fetch takes over), or already there.
            let top = self.postponed[node as usize].pop();
            debug_assert_eq!(top.map(|e| e.1), Some(seq));
        }
    }

    /// The task leaves its worker's queue: its prefetch pins go.
    fn unpin_prefetch(&mut self, t: u32, node: u32) {
        if std::mem::take(&mut self.prefetched[t as usize]) {
            let acc = self.graph.tasks[t as usize].accesses.clone();
            for (h, mode) in acc {
                if mode.reads() {
                    self.replicas.get_mut(h, node).prefetch_pins -= 1;
                }
            }
        }
    }

    /// Allocates `h` on `node` as StarPU does: a cached buffer of the same size, else
    /// cudaMalloc; short of memory, free cached buffers (cudaFree) and, with `evict`, evict
    /// LRU replicas and reuse their buffers. False: not now. In RAM only handles without home
    /// data get here, in pinned memory.
    fn allocate(&mut self, h: u32, node: u32, evict: Evict) -> bool {
        if self.replicas.get(h, node).allocated {
            return true;
        }
        let size = self.graph.handles[h as usize].size;
        let n = node as usize;
        if node == 0 {
            if self.overheads && self.machine.nodes.len() > 1 {
                self.debt[0] += PINNED_PER_MIB * size / MIB;
            }
        } else if !self.take_cached(n, size) {
            let cap = self.machine.nodes[n].capacity;
            let mut reused = false;
            if self.mem_limit && self.used[n] + size > cap {
                self.flush_cache(n, size);
                if self.used[n] + size > cap {
                    let prefetch = evict == Evict::ForPrefetch;
                    if evict == Evict::No || (prefetch && self.prefetch_oom[n]) {
                        return false;
                    }
                    self.evict(node, self.used[n] + size - cap, prefetch);
                    reused = self.take_cached(n, size);
                    if !reused {
                        self.flush_cache(n, size);
                        if self.used[n] + size > cap {
                            if prefetch {
                                self.prefetch_oom[n] = true;
                            }
                            return false;
                        }
                    }
                }
            }
            if !reused {
                self.used[n] += size;
                self.peak[n] = self.peak[n].max(self.used[n]);
                debug_assert!(
                    !self.mem_limit || self.used[n] <= cap * (1.0 + 1e-12),
                    "memory over capacity"
                );
                if self.overheads {
                    self.debt[n] += CUDA_MALLOC;
                }
            }
        }
        let tick = self.tick;
        let r = self.replicas.get_mut(h, node);
        r.allocated = true;
        r.last_use = tick;
        if node != 0 {
            self.lru[n].insert((tick, h));
        }
        true
    }

    /// Takes a cached buffer of exactly `size` bytes on node `n`.
    fn take_cached(&mut self, n: usize, size: f64) -> bool {
        match self.cache[n].iter().position(|&s| s == size) {
            Some(i) => {
                self.cache[n].swap_remove(i);
                true
            }
            None => false,
        }
    }

    /// Out of memory for `size` bytes on node `n`: cudaFree cached buffers, newest first,
    /// until twice that is freed (StarPU's reclaim target) or none is left.
    fn flush_cache(&mut self, n: usize, size: f64) {
        let mut freed = 0.0;
        while freed < 2.0 * size {
            let Some(s) = self.cache[n].pop() else { break };
            self.used[n] -= s;
            freed += s;
            if self.overheads {
                self.debt[n] += CUDA_FREE;
            }
        }
    }

    /// A `wont_use` hint came due: `h`'s GPU copies go to the front of the eviction order,
    /// and a dirty one is written back to RAM when its link is idle (an IDLEFETCH request),
    /// so that evicting it later costs nothing.
    fn evict_first(&mut self, h: u32) {
        for node in 1..self.machine.nodes.len() as u32 {
            let r = self.replicas.get_mut(h, node);
            if r.allocated {
                let old = r.last_use;
                r.last_use = 0;
                // Dirty: valid here while RAM (the home) is not.
                let dirty = r.state != Msi::Invalid && !r.evicting;
                self.lru[node as usize].remove(&(old, h));
                self.lru[node as usize].insert((0, h));
                if dirty && self.replicas.get(h, 0).state == Msi::Invalid {
                    self.allocate(h, 0, Evict::No);
                    self.request(h, 0, Level::Idle, 0);
                }
            }
        }
    }

    /// Marks a use of `h` on `node` (moves it to the back of the eviction order).
    fn touch(&mut self, h: u32, node: u32) {
        let tick = self.tick;
        let r = self.replicas.get_mut(h, node);
        let old = r.last_use;
        r.last_use = tick;
        if node != 0 && r.allocated {
            self.lru[node as usize].remove(&(old, h));
            self.lru[node as usize].insert((tick, h));
        }
    }

    /// Frees at least `need` bytes on `node` by evicting idle replicas, least recently used
    /// first (shared ones dropped, owners written back to RAM). For a prefetch, replicas
    /// other queued tasks prefetched are kept.
    fn evict(&mut self, node: u32, need: f64, for_prefetch: bool) {
        let nn = self.machine.nodes.len();
        // Victims in LRU order until `need` bytes would be freed (write-backs free later).
        let mut victims = Vec::new();
        let mut counted = 0.0;
        for &(_, h) in &self.lru[node as usize] {
            if counted >= need {
                break;
            }
            let r = self.replicas.get(h, node);
            if r.refcnt == 0
                && r.incoming.is_none()
                && !r.evicting
                && !(for_prefetch && r.prefetch_pins > 0)
            {
                victims.push(h);
                counted += self.graph.handles[h as usize].size;
            }
        }
        for h in victims {
            let r = *self.replicas.get(h, node);
            let others: Vec<u32> = (0..nn as u32)
                .filter(|&n| n != node && self.replicas.get(h, n).state != Msi::Invalid)
                .collect();
            if r.state != Msi::Invalid && others.is_empty() {
                // The only valid copy: write it back to RAM, free when done. Copies to GPUs
                // without peer access may ride on it (`request`).
                self.replicas.get_mut(h, node).evicting = true;
                self.report.writebacks += 1;
                self.allocate(h, 0, Evict::No);
                let x = self.new_xfer(h, node, 0, true, Level::Fetch, 0);
                self.replicas.get_mut(h, 0).incoming = Some(x);
            } else {
                self.free(h, node);
                // The last valid copy elsewhere owns the data now.
                if let [last] = others[..] {
                    self.replicas.get_mut(h, last).state = Msi::Owner;
                }
            }
            self.report.evictions += 1;
        }
    }

    fn free(&mut self, h: u32, node: u32) {
        let size = self.graph.handles[h as usize].size;
        let r = self.replicas.get_mut(h, node);
        let last = r.last_use;
        r.allocated = false;
        r.state = Msi::Invalid;
        r.evicting = false;
        self.lru[node as usize].remove(&(last, h));
        self.cache[node as usize].push(size);
        self.freed[node as usize] = true;
        let waiting = std::mem::take(&mut self.mem_wait[node as usize]);
        for t in waiting {
            let w = self.worker_of[t as usize];
            self.wake(w);
        }
    }

    /// Brings a valid copy of `h` to `node` (already allocated) unless it is there or coming.
    /// A fetch for data a prefetch already asked for raises that request to its level.
    fn request(&mut self, h: u32, node: u32, level: Level, prio: i64) {
        let r = *self.replicas.get(h, node);
        if let Some(x) = r.incoming {
            let xf = &mut self.xfers[x as usize];
            if !xf.launched && (level == Level::Fetch || prio > xf.prio) {
                xf.prio = xf.prio.max(prio);
                if level == Level::Fetch {
                    xf.level = Level::Fetch;
                }
                let (src, dst) = (xf.src, xf.dst);
                self.pump(src, dst);
            }
            return;
        }
        if r.state != Msi::Invalid {
            return;
        }
        let Some(src) = self.source_for(h, node) else {
            return; // never written: nothing to move
        };
        let x = if self.machine.direct[src as usize][node as usize] {
            self.new_xfer(h, src, node, false, level, prio)
        } else {
            // No peer access: to RAM first (or with the copy already going there), then on.
            self.allocate(h, 0, Evict::No);
            self.request(h, 0, level, prio);
            let x = self
                .replicas
                .get(h, 0)
                .incoming
                .expect("RAM copy requested");
            self.xfers[x as usize].then.push(node);
            x
        };
        self.replicas.get_mut(h, node).incoming = Some(x);
    }

    /// A transfer of `h` from `src` to `dst`: a request joins its node pair's list and starts
    /// when the caps allow (its source stays while it is read); a write-back starts at once
    /// (its source is `evicting` instead).
    fn new_xfer(
        &mut self,
        h: u32,
        src: u32,
        dst: u32,
        writeback: bool,
        level: Level,
        prio: i64,
    ) -> u32 {
        let x = self.xfers.len() as u32;
        self.handle_xfers[h as usize] += 1;
        if !writeback {
            self.replicas.get_mut(h, src).refcnt += 1;
            let pair = self.pair(src, dst);
            self.requests[pair].push(x);
        }
        self.xfers.push(Xfer {
            handle: h,
            src,
            dst,
            writeback,
            level,
            prio,
            ..Default::default()
        });
        if writeback {
            self.launch(x);
        } else {
            self.pump(src, dst);
        }
        x
    }

    fn pair(&self, src: u32, dst: u32) -> usize {
        src as usize * self.machine.nodes.len() + dst as usize
    }

    /// Starts the requests of a node pair its caps allow: fetches before prefetches, most
    /// urgent first, then in request order.
    fn pump(&mut self, src: u32, dst: u32) {
        let pair = self.pair(src, dst);
        loop {
            let best = self.requests[pair]
                .iter()
                .enumerate()
                .min_by_key(|&(_, &x)| {
                    let xf = &self.xfers[x as usize];
                    (xf.level, std::cmp::Reverse(xf.prio), x)
                })
                .map(|(i, &x)| (i, x));
            let Some((i, x)) = best else { break };
            let cap = match self.xfers[x as usize].level {
                Level::Fetch => FETCH_CAP,
                Level::Prefetch => PREFETCH_CAP,
                Level::Idle => IDLE_CAP,
            };
            if self.inflight[pair] >= cap {
                break;
            }
            self.requests[pair].remove(i);
            self.inflight[pair] += 1;
            self.launch(x);
        }
    }

    /// Starts transfer `x`: after its queueing cost, and on the shared bus after the copies it
    /// must follow.
    fn launch(&mut self, x: u32) {
        let Xfer {
            handle: h,
            src,
            dst,
            ..
        } = self.xfers[x as usize];
        self.xfers[x as usize].launched = true;
        let size = self.graph.handles[h as usize].size;
        self.report.transfers += 1;
        match (src, dst) {
            (0, _) => self.report.bytes_h2d += size,
            (_, 0) => self.report.bytes_d2h += size,
            _ => self.report.bytes_d2d += size,
        }
        // Queueing cost, after the allocations the destination's driver owes.
        let mut delay = std::mem::take(&mut self.debt[dst as usize]);
        if self.overheads {
            delay += QUEUE_COST;
        }
        let at = self
            .now
            .saturating_add(SimTime::from_secs_saturating(delay));
        let mut xfer = std::mem::take(&mut self.xfers[x as usize]);
        xfer.ready_at = at;
        if self.shared_bus {
            // Waits for the pending copies it must follow; the flow starts after them and
            // the queueing delay.
            for &p in &self.pending {
                let old = &mut self.xfers[p as usize];
                if Xfer::after((src, dst), (old.src, old.dst)) {
                    old.wakes.push(x);
                    xfer.waits += 1;
                }
            }
            self.pending.push(x);
            if xfer.waits == 0 {
                self.flows.push((at, x));
            }
        } else {
            let t = self.machine.alone(src, dst, size);
            self.timers.push((
                at.saturating_add(SimTime::from_secs_saturating(t)),
                RtEvent::XferDone(x),
            ));
        }
        self.xfers[x as usize] = xfer;
    }

    /// Transfer `x` is over: the copies serialised behind it may go.
    fn unblock_after(&mut self, x: u32) {
        if let Some(i) = self.pending.iter().position(|&p| p == x) {
            self.pending.remove(i);
        }
        let now = self.now;
        for w in std::mem::take(&mut self.xfers[x as usize].wakes) {
            let next = &mut self.xfers[w as usize];
            next.waits -= 1;
            if next.waits == 0 {
                self.flows.push((next.ready_at.max(now), w));
            }
        }
    }

    fn xfer_done(&mut self, x: u32) {
        self.unblock_after(x);
        let Xfer {
            handle: h,
            src,
            dst,
            writeback,
            ..
        } = self.xfers[x as usize];
        let then = std::mem::take(&mut self.xfers[x as usize].then);
        let (level, prio) = (self.xfers[x as usize].level, self.xfers[x as usize].prio);
        self.tick += 1;
        self.handle_xfers[h as usize] -= 1;
        if self.handle_xfers[h as usize] == 0 && !self.write_wait.is_empty() {
            let waiting = std::mem::take(&mut self.write_wait);
            for (wh, w) in waiting {
                if wh == h {
                    self.wake(w);
                } else {
                    self.write_wait.push((wh, w));
                }
            }
        }
        if writeback {
            self.replicas.get_mut(h, 0).incoming = None;
            if self.replicas.get(h, src).refcnt > 0 {
                // A task took the replica meanwhile: keep it, both copies now valid.
                self.replicas.get_mut(h, src).evicting = false;
                self.replicas.get_mut(h, src).state = Msi::Shared;
                self.replicas.get_mut(h, 0).state = Msi::Shared;
            } else {
                // RAM holds the data again; the GPU copy goes.
                self.replicas.get_mut(h, 0).state = Msi::Owner;
                self.free(h, src);
            }
        } else {
            let pair = self.pair(src, dst);
            self.inflight[pair] -= 1;
            self.pump(src, dst);
            self.replicas.get_mut(h, src).refcnt -= 1;
            self.touch(h, dst);
            let r = self.replicas.get_mut(h, dst);
            r.incoming = None;
            if r.allocated {
                r.state = Msi::Shared;
                let s = self.replicas.get_mut(h, src);
                if s.state == Msi::Owner {
                    s.state = Msi::Shared;
                }
            }
        }
        // Only the workers of the destination can be waiting for these data.
        for w in 0..self.machine.workers.len() {
            if self.machine.workers[w].node == dst {
                self.wake(w as u32);
            }
        }
        // The second hop of copies between GPUs without peer access.
        for node in then {
            let x2 = self.new_xfer(h, 0, node, false, level, prio);
            self.replicas.get_mut(h, node).incoming = Some(x2);
        }
    }

    fn task_done(&mut self, t: u32) {
        let w = self.worker_of[t as usize] as usize;
        let node = self.machine.workers[w].node;
        self.tick += 1;
        let nn = self.machine.nodes.len() as u32;
        let acc = self.graph.tasks[t as usize].accesses.clone();
        for (h, mode) in acc {
            if mode == Mode::Scratch {
                continue;
            }
            if mode.modifies() {
                for n in 0..nn {
                    if n != node {
                        self.replicas.get_mut(h, n).state = Msi::Invalid;
                    }
                }
                self.replicas.get_mut(h, node).state = Msi::Owner;
            }
            self.replicas.get_mut(h, node).refcnt -= 1;
            self.touch(h, node);
        }
        self.running[w] = None;
        let wr = &mut self.workers[w];
        wr.in_hand.retain(|&x| x != t);
        wr.tasks += 1;
        self.state[t as usize] = TaskState::Done;
        self.report.task_times[t as usize].1 = self.now.as_secs_f64();
        self.done += 1;
        let (policy, view) = self.policy_and_view();
        policy.on_end(t, w, &view);
        for i in 0..self.graph.hint_of[t as usize].len() {
            let id = self.graph.hint_of[t as usize][i] as usize;
            self.hints_left[id] -= 1;
            if self.hints_left[id] == 0 {
                let h = self.graph.hints[id].0;
                self.evict_first(h);
            }
        }
        let succ: Vec<u32> = self.graph.successors(t).to_vec();
        for s in succ {
            self.left[s as usize] -= 1;
            if self.left[s as usize] == 0 {
                self.release(s, Some(w as u32));
            }
        }
        self.wake(w as u32);
        self.prefetch_oom[node as usize] = false;
        self.freed[node as usize] = true;
        for n in 0..nn {
            if !self.mem_wait[n as usize].is_empty() {
                let waiting = std::mem::take(&mut self.mem_wait[n as usize]);
                for t in waiting {
                    self.wake(self.worker_of[t as usize]);
                }
            }
        }
        if self.done == self.graph.tasks.len() as u64 {
            self.report.makespan_s = self.now.as_secs_f64();
        }
    }

    fn wake(&mut self, w: u32) {
        if !self.dirty_mark[w as usize] {
            self.dirty_mark[w as usize] = true;
            self.dirty.push(w);
        }
    }

    fn wake_all(&mut self) {
        for w in 0..self.workers.len() as u32 {
            self.wake(w);
        }
    }

    /// Lets every worker that may move do so.
    fn progress(&mut self) {
        loop {
            while let Some(w) = self.dirty.pop() {
                self.dirty_mark[w as usize] = false;
                self.advance_worker(w as usize);
            }
            // Fetches first, then prefetches (StarPU serves its request lists in that order).
            let nodes: Vec<u32> = (0..self.freed.len() as u32)
                .filter(|&n| std::mem::take(&mut self.freed[n as usize]))
                .collect();
            if nodes.is_empty() {
                break;
            }
            for n in nodes {
                if !self.postponed[n as usize].is_empty() {
                    self.retry_prefetches(n);
                }
            }
        }
    }

    fn advance_worker(&mut self, w: usize) {
        loop {
            // Fetching task: are its inputs there now?
            if let Some(t) = self.workers[w].fetching {
                if !self.fetch(t, w) {
                    break;
                }
                self.state[t as usize] = TaskState::Ready;
                self.workers[w].fetching = None;
            }
            let slots = match self.machine.workers[w].arch {
                Arch::Cuda(_) => self.pipeline as usize,
                Arch::Cpu => 1,
            };
            if self.workers[w].in_hand.len() >= slots {
                break;
            }
            let (policy, mut view) = self.policy_and_view();
            let popped = policy.pop(w, &mut view);
            let Some(t) = popped else { break };
            self.worker_of[t as usize] = w as u32;
            self.state[t as usize] = TaskState::Fetching;
            self.workers[w].in_hand.push_back(t);
            self.workers[w].fetching = Some(t);
            let node = self.machine.workers[w].node;
            let acc = self.graph.tasks[t as usize].accesses.clone();
            for (h, _) in acc {
                self.replicas.get_mut(h, node).refcnt += 1;
            }
            self.unpin_prefetch(t, node);
        }
        self.try_run(w);
    }

    /// Allocates and requests the task's data on the worker's node; true once all is there.
    fn fetch(&mut self, t: u32, w: usize) -> bool {
        let node = self.machine.workers[w].node;
        let acc = self.graph.tasks[t as usize].accesses.clone();
        let mut ready = true;
        for (h, mode) in acc {
            if !self.allocate(h, node, Evict::ForFetch) {
                if !self.mem_wait[node as usize].contains(&t) {
                    self.mem_wait[node as usize].push(t);
                }
                return false;
            }
            if mode.reads() {
                let prio = self.priority(t);
                self.request(h, node, Level::Fetch, prio);
                let r = self.replicas.get(h, node);
                if r.state == Msi::Invalid || r.incoming.is_some() {
                    ready = false;
                }
            }
        }
        if ready {
            // StarPU: a write waits for the requests pending on its handle.
            let acc = &self.graph.tasks[t as usize].accesses;
            if let Some(&(h, _)) = acc
                .iter()
                .find(|&&(h, m)| m.modifies() && self.handle_xfers[h as usize] > 0)
            {
                self.write_wait.push((h, w as u32));
                return false;
            }
        }
        ready
    }

    /// Starts the front task of `w` when it is ready and nothing runs.
    fn try_run(&mut self, w: usize) {
        if self.running[w].is_some() {
            return;
        }
        let Some(&t) = self.workers[w].in_hand.front() else {
            return;
        };
        if self.state[t as usize] != TaskState::Ready {
            return;
        }
        let arch = self.machine.workers[w].arch;
        let task = &self.graph.tasks[t as usize];
        let (mean, sd) = self.models.time(task, arch).expect("checked at push");
        let mut secs = mean;
        if self.noise && sd > 0.0 {
            // Box-Muller from two uniforms of the run's seeded stream.
            let (u1, u2) = (self.uniform().max(1e-300), self.uniform());
            secs =
                (mean + sd * (-2.0 * u1.ln()).sqrt() * (std::f64::consts::TAU * u2).cos()).max(0.0);
        }
        if self.overheads && matches!(arch, Arch::Cuda(_)) {
            secs += QUEUE_COST;
        }
        // Allocations made for it without a copy (written-only buffers) before it starts.
        secs += std::mem::take(&mut self.debt[self.machine.workers[w].node as usize]);
        // Coherence: every buffer the task reads is valid where it runs.
        debug_assert!(
            self.graph.tasks[t as usize]
                .accesses
                .iter()
                .all(|&(h, m)| !m.reads()
                    || self.replicas.get(h, self.machine.workers[w].node).state != Msi::Invalid),
            "a reader would read a stale copy"
        );
        self.report.task_times[t as usize] = (self.now.as_secs_f64(), f64::NAN, w as u32);
        self.state[t as usize] = TaskState::Running;
        self.running[w] = Some(t);
        let wr = &mut self.workers[w];
        wr.busy_s += secs;
        let end = self.now.saturating_add(SimTime::from_secs_saturating(secs));
        if let Some(row) = wr.row {
            self.intervals
                .push((row, self.graph.tasks[t as usize].codelet, t, self.now, end));
        }
        let (policy, view) = self.policy_and_view();
        policy.on_start(t, w, &view);
        self.timers.push((end, RtEvent::TaskDone(t)));
    }

    /// Schedules the step's timers and spawns its transfer flows.
    fn flush(&mut self, cx: &mut Ctx) {
        for (at, ev) in self.timers.drain(..) {
            cx.cal.schedule(at, ev);
        }
        for (at, x) in std::mem::take(&mut self.flows) {
            let xf = &self.xfers[x as usize];
            let (a, b) = (
                self.machine.nodes[xf.src as usize].endpoint,
                self.machine.nodes[xf.dst as usize].endpoint,
            );
            let route = match cx.topo.route(a, b) {
                Ok(r) => r,
                Err(e) => {
                    cx.errors.0.push(format!("runtime: transfer: {e}"));
                    continue;
                }
            };
            let req = FlowRequest {
                id: format!("x{x}"),
                src: self.machine.nodes[xf.src as usize].name.clone(),
                dst: self.machine.nodes[xf.dst as usize].name.clone(),
                route,
                bytes: self.graph.handles[xf.handle as usize].size,
                start: Start::Ahead(at),
                cap: None,
            };
            cx.launch.start_for(&mut cx.cal, req, XferFlowDone(x));
        }
    }
}

pub fn publish_runtime_report(world: &mut World) {
    if world.get_resource::<RuntimeConfig>().is_none() {
        return;
    }
    let mut rt = world.resource_mut::<Runtime>();
    let graph = std::sync::Arc::new(std::mem::take(&mut rt.graph));
    let mut report = rt.report.clone();
    report.graph = graph;
    report.worker_nodes = rt.machine.workers.iter().map(|w| w.node).collect();
    if report.makespan_s > 0.0 {
        report.gflops = rt.flops / report.makespan_s / 1e9;
    }
    report.workers = rt
        .machine
        .workers
        .iter()
        .zip(&rt.workers)
        .map(|(i, w)| (i.name.clone(), w.busy_s, w.tasks))
        .collect();
    report.memory = rt
        .machine
        .nodes
        .iter()
        .zip(&rt.peak)
        .map(|(n, &p)| (n.name.clone(), n.capacity, p))
        .collect();
    world.insert_resource(report);
}

fn stuck_tasks(world: &mut World) -> Vec<String> {
    let Some(rt) = world.get_resource::<Runtime>() else {
        return Vec::new();
    };
    if rt.state.is_empty() || rt.done == rt.state.len() as u64 {
        return Vec::new();
    }
    let mut out = vec![format!(
        "{} of {} tasks did not run ({} queued in the scheduler)",
        rt.state.len() as u64 - rt.done,
        rt.state.len(),
        rt.sched.as_ref().map_or(0, |p| p.queued())
    )];
    for (w, wr) in rt.workers.iter().enumerate() {
        if let Some(t) = wr.fetching {
            let node = rt.machine.workers[w].node;
            out.push(format!(
                "{} fetches {} and waits{}",
                rt.machine.workers[w].name,
                rt.graph.tasks[t as usize].label,
                if rt.mem_wait[node as usize].contains(&t) {
                    format!(
                        " for memory on {} ({:.0} of {:.0} bytes used, nothing evictable)",
                        rt.machine.nodes[node as usize].name,
                        rt.used[node as usize],
                        rt.machine.nodes[node as usize].capacity
                    )
                } else {
                    " for its data".to_string()
                }
            ));
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::Xfer;

    #[test]
    fn copies_serialise_as_starpu_simgrid_does() {
        // Same pair: one CUDA stream per (src, dst).
        assert!(Xfer::after((0, 1), (0, 1)));
        // Different pairs from RAM overlap (they share the bus through max-min).
        assert!(!Xfer::after((0, 1), (0, 2)) && !Xfer::after((1, 0), (0, 1)));
        // Crossed GPU-GPU copies, and GPU-GPU against a copy into either end.
        assert!(Xfer::after((1, 2), (2, 1)));
        assert!(Xfer::after((1, 2), (0, 1)) && Xfer::after((1, 2), (0, 2)));
        assert!(Xfer::after((0, 2), (1, 2)) && Xfer::after((0, 1), (1, 2)));
        assert!(!Xfer::after((1, 0), (1, 2)) && !Xfer::after((0, 3), (1, 2)));
    }
}
