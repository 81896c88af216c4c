//! The StarPU-like task runtime: a task graph ([`graph`]) runs on workers ([`machine`]: GPUs first,
//! then CPU cores) under one of StarPU's policies ([`sched`]), with data kept coherent per memory
//! node (MSI replicas) and moved by transfers that are flows on the platform's links.
//!
//! Task priorities are capped into the policy's range at build, as StarPU caps them at submission:
//! eager, random, dm, dmda and dmdar keep [0, 0] (every priority becomes 0, so their queues,
//! dmdar's ready-first pop and data requests see none), the sorting policies the whole `int` range,
//! heteroprio [0, 99]; `runtime.min_priority` / `max_priority` set an end as STARPU_MIN_PRIO /
//! STARPU_MAX_PRIO do. A task becomes ready when its dependencies are done and is pushed to the
//! policy. A worker holds at most `cuda_pipeline` tasks (GPUs) or one (CPUs); it pops when it has
//! room and no task is still fetching its inputs. A GPU holding a task of a synchronous CUDA
//! codelet (StarPU's codelet without STARPU_CUDA_ASYNC: Cholesky's POTRF and LU's GETRF as the
//! examples build for SimGrid; `cuda_sync` in a DAG's models) pops nothing more until it ends:
//! StarPU's driver flushes its pipeline and runs the kernel itself, submitting none of the copies
//! it handles meanwhile and paying no 10 us of kernel queueing. Fetching walks the task's buffers
//! in StarPU's handle order (`_starpu_compar_handles`: tiles of one partitioned matrix written
//! first, then by sub-data path; handles registered alone by registration) and allocates each on
//! the worker's memory node (evicting least-recently-used replicas that no task uses: dropped when
//! another valid copy exists, written back to RAM first when they are the only one; as in StarPU, a
//! buffer counts as used when it is allocated and when a fetch or prefetch finds its data there,
//! not when a copy lands or a task ends) and transfers every buffer it reads that is not valid
//! there from the valid copy StarPU would pick (the direct source with the smallest predicted time;
//! RAM, then a GPU, when none is direct). GPU-to-GPU copies go directly only where the two GPUs
//! have peer access, else through RAM in two hops. Copies between the same pair of nodes, and a
//! GPU-to-GPU copy against copies into either of its ends, go one at a time as in StarPU-SimGrid,
//! in the order their drivers submit them: the driver handling a copy (the GPU end's; the
//! destination's between GPUs) sleeps for the allocations it owes and 10 us of queueing before each
//! submission, one copy after another. A worker runs its ready tasks in order, one at a time, for
//! the codelet model's time. Writes make the worker's replica the owner and invalidate the others.
//! Runtime overheads (switch `runtime_overheads`, StarPU-SimGrid's figures): 10 us before each
//! transfer and each asynchronous GPU kernel (the driver queues it 10 us after its data are there;
//! one queued behind a running kernel starts when that one ends), 175 us per cudaMalloc (taking
//! turns across GPUs: StarPU-SimGrid sleeps for it, and for a cudaFree, under one mutex; buffers up
//! to 4 MiB come from StarPU's sub-allocator, whose 32 MiB chunks alone pay it, and a clean idle
//! buffer of the same size taken over pays nothing), 750 us per cudaFree (an evicted buffer not
//! sub-allocated, a fifth wholly free chunk), 650 us per MiB of pinned RAM for handles without home
//! data. Costs a node's driver owes are paid by its next copy or task. Under every policy a
//! released task is pushed 1 us after its releaser's previous push (StarPU-SimGrid's
//! `_starpu_push_task`). A worker whose task ended pops after its pushes, if any, and its progress
//! (1 us per memory node it drives), which is when a GPU's driver handles its node's request lists
//! again (a request made or pumped meanwhile waits for that progress, so a prefetch cannot evict
//! the tile its task has just written before the successor's push pins it), as StarPU's driver
//! loop ends tasks, makes its progress, then pops: a write-back that progress starts for a
//! prefetch short of memory holds the pop until it is done; a `wont_use` hint coming due at a
//! task's end costs that thread two more pushes (the read acquire and its release callback, after
//! the tasks it released). dm* decisions made at one instant by different releasers do not see each
//! other's pushes (each thread decides before any commits: `sched/dm.rs`). Under eager, prio, ws
//! and lws, pushes and pops follow StarPU-SimGrid's driver threads (`threads.rs`, `drivers.rs`): a
//! thread pushes its released tasks one per microsecond, each push signalling, under ws and lws,
//! every worker, under eager and prio the workers in order up to the first asleep and not yet told
//! to stay awake (every driver starts untold; a CPU stays told for good, a GPU until its next pop;
//! a finished request tells every driver of its destination, a posted one its GPU handler); a
//! driver loop sleeps 1 us per memory node it drives (CPU 1, GPU 2), pops one task, and waits, or
//! loops again if it was signalled meanwhile; a CPU's fetch finding data in RAM wakes every driver
//! of RAM; a GPU pops nothing while its task's data come and sleeps 10 us after a launch. A
//! request made while the GPU driver that handles it is in its loop (waiting, which the request
//! wakes; pushing; or in its progress), a CPU's fetch of data on that GPU for instance, is handled
//! at the end of that driver's progress, just before its pop (StarPU's driver goes through its
//! node's request lists in its progress); one made while that driver holds what it can take is
//! handled at once (its next iteration, microseconds away, is not modelled). Sleeps
//! ending at one instant wake pushers first, then by the instant they began, the last begun first
//! (SimGrid's order, from the oracle's log). Without `runtime_overheads` these microseconds are
//! zero: a thread's pushes are made at once, and other events due at one instant go in the order
//! they were set. Requests have StarPU's levels: a task's fetch goes before push-time prefetches,
//! which go before idle write-backs; a node pair starts fetches while fewer than 5 requests are in
//! flight on it, prefetches while fewer than 2, idle requests when none is. A request allocates its
//! destination buffer when it starts, not when it is made (StarPU's driver allocates as it handles
//! a request): a fetch may evict any idle replica, a prefetch only those no queued task pins. A
//! request short of memory stays queued and tries again when memory frees up or prefetch pins drop
//! on its node, or a copy its node's driver handles ends (the end wakes that driver); meanwhile a
//! prefetch short of memory, or a fetch that is, holds back every prefetch into the node. Prefetch
//! pins follow StarPU's `nb_tasks_prefetch`: a push-time prefetch pins data it finds there at once,
//! else its request pins them when it lands; requests of different tasks are never merged, so a
//! prefetch for data another task's request is to load joins it (holding its source until its turn,
//! as every request that reads does) and, handled while that copy is in flight, loses its pin,
//! handled once the data are there, adds it; served before the other request (more urgent, or a
//! fetch), it finds nothing loading and copies the data itself, and the other one becomes the
//! joining request, in its own place with its own pins. A copy's end is seen before its node pair's
//! next requests are handled (StarPU's progress completes ended copies, then goes through the
//! lists). Once a popped task's data are all there, it takes one pin off each input, if there is
//! one (StarPU's fetch tail). A `wont_use` hint (a read acquire in StarPU: it fires when the
//! handle's last writer ends, while earlier-submitted readers may still run) moves the handle's GPU
//! copies to the front of the eviction order and writes a dirty one back at idle level, so that
//! later readers elsewhere fetch it from RAM. It acts in its release callback, 1 us after the
//! thread's pushes of the tasks the end released (and their prefetches): a CPU task's prefetch of
//! the tile makes the write-back needless. A request counts as loading (StarPU's `load_request`,
//! which dmdar's pop ranks by) from when a driver first handles it, even when it then finds no
//! memory. StarPU's background tidying (`tidy.rs`: under 5 % of a GPU's buffers clean, dirty ones
//! are written back at idle level until 10 % are) is modelled behind the switch `memory_tidying`,
//! on by default as StarPU runs it. A task that writes a handle waits until no transfer of it is in
//! flight. An eviction's write-back is synchronous, as StarPU's transfer_subtree_to_node is: the
//! GPU's driver, which allocates for its node's requests, waits for it, and only then picks the
//! eviction's next victim (victims are written back one at a time). Meanwhile it handles no
//! task end (successors are released and data let go when it is back), pops and launches nothing;
//! kernels it launched before go on, and other requests still progress, but none allocates on that
//! node until the write-back is done (StarPU's `_starpu_is_reclaiming`), so write-backs do not
//! chain behind it. Being a fetch request on its node pair, it also holds back idle requests there.
//! Simplified: a GPU's driver pops its next task as soon as a task's data are there, where
//! StarPU-SimGrid's sleeps 10 us queueing the kernel and 2 us of progress first (tried before
//! task ends were followed by progress: right in the oracle's log, it moved memory-capped rows by
//! -5..-14 points through eviction timing, issue 21's note; tried after, oracle mean error 1.46
//! -> 1.50 %); conflicts between transfers are checked when a transfer starts, a cudaFree does
//! not wait for transfers in flight, a popped task's buffers are allocated at once (in StarPU as its
//! fetch requests start), a prefetch of data relayed through RAM pins them at push, a worker's
//! mutex held by a pusher's walk does not delay its pop, a ws/lws thief never finds its victim's
//! lock taken (StarPU's backs off 1 us and pops again: `sched/ws.rs`), and redux accesses are
//! plain writes (no init or reduction tasks). As StarPU does, a request's mode updates
//! the replicas' states when it ends or finds the data there: the copy prefetched or fetched for a
//! task that writes the data becomes the owner at once, the others stale, its buffer dirty (never a
//! clean victim).
//!
//! Layout: this file is the coordinator (events, systems, and the one place that touches the
//! calendar, the network and the recorder); the leaves hold the rules: `setup.rs` (build and
//! check), `core.rs` (state, worker loop, task ends), `memory.rs` (replicas, allocation, eviction,
//! prefetch), `suballoc.rs` (StarPU's chunked GPU allocator), `tidy.rs` (background write-backs),
//! `transfers.rs` (requests, caps, copies), `sched/` (the policies), `graph.rs` (task graphs),
//! `machine.rs` (workers, buses, codelet models), `drivers.rs` (which workers a push signals
//! under eager and prio) and `threads.rs` (the driver threads' pushes and loops, and the order
//! SimGrid wakes them in).

mod core;
mod data;
mod memory;
mod model;
mod out;
mod pacing;
pub mod sched;
mod setup;
mod tasks;
mod transfers;
mod workers;

pub use model::{graph, machine};

use bevy_app::{App, Plugin};
use bevy_ecs::prelude::*;
use rand_core::{Rng, SeedableRng};

use hetsim_engine::record::{Interval, Recorder, ResourceKind};
use hetsim_engine::{
    Calendar, Inbox, SimAppExt, SimErrors, SimEvent, SimRng, SimSet, SimStartup, SimStep,
    StartupSet, Switches,
};
use hetsim_schema::SimTime;
use hetsim_schema::scenario::Workload;
use hetsim_schema::tasks::RuntimeSpec;

use crate::network::{FlowSpec, Reach, Start};
use crate::platform::{PlatformConfig, Topology};
use core::Runtime;
use out::Due;

pub use out::RuntimeReport;

/// The task-graph workload and runtime settings (inserted by whoever assembles the app).
#[derive(Resource, Debug, Clone)]
pub struct RuntimeConfig {
    pub workload: Workload,
    pub runtime: RuntimeSpec,
    /// Keep the data-event log (`output.runtime_log`).
    pub log: bool,
}

/// A task's time is up, or a transfer (off the shared bus) is over.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
enum RtEvent {
    TaskDone(u32),
    XferDone(u32),
    XferSubmit(u32),
    Start,
    Push(u32),
    Resume(u32),
    Wake(u32),
    Hint(u32),
}

impl SimEvent for RtEvent {
    const NAME: &'static str = "runtime.event";
    fn pack(&self) -> (Entity, u64) {
        let (k, v) = match *self {
            RtEvent::TaskDone(t) => (0u64, t),
            RtEvent::XferDone(x) => (1, x),
            RtEvent::Start => (2, 0),
            RtEvent::Push(t) => (4, t),
            RtEvent::Resume(w) => (5, w),
            RtEvent::XferSubmit(x) => (6, x),
            RtEvent::Wake(i) => (7, i),
            RtEvent::Hint(h) => (8, h),
        };
        (Entity::PLACEHOLDER, (k << 32) | v as u64)
    }
    fn unpack(_: Entity, arg: u64) -> Self {
        let v = arg as u32;
        match arg >> 32 {
            0 => RtEvent::TaskDone(v),
            1 => RtEvent::XferDone(v),
            4 => RtEvent::Push(v),
            5 => RtEvent::Resume(v),
            6 => RtEvent::XferSubmit(v),
            7 => RtEvent::Wake(v),
            8 => RtEvent::Hint(v),
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
            .register_switch("runtime_overheads", true, "StarPU-SimGrid's runtime costs: 10 us per transfer and per GPU kernel queued (overlapped by the kernel running before it), 175 us per cudaMalloc and 750 us per cudaFree (one at a time across GPUs), 1 us per push and 1 us of progress per driven memory node after a task's end (the worker pops after them), eager/prio/ws/lws drivers' 1 us of progress per driven memory node and a GPU driver's 10 us after a kernel launch; off: none (a thread's pushes at once)")
            .register_switch("pcie_shared_bus", true, "data transfers are flows sharing the platform's PCIe links; off: each transfer alone at latency + size / bandwidth (one independent link per transfer)")
            .register_switch("prefetch", true, "dm* schedulers prefetch a task's inputs when they assign it; off: data move when the task is popped")
            .register_switch("memory_tidying", true, "StarPU's background tidying: under 5 % of a GPU's buffers clean, dirty ones are written back to RAM at idle level, least recently used first, until 10 % are; off: dirty buffers reach RAM only when evicted or hinted wont_use")
            .register_switch("perfmodel_noise", false, "task times drawn from the model's normal distribution (mean, stddev; seeded); off: the mean")
            .describe_model("runtime", "StarPU-like task runtime: tasks with access modes and implicit dependencies; CPU and GPU workers (GPU pipeline of 2); MSI replicas per memory node, LRU eviction with synchronous write-back (one victim at a time; the GPU's driver waits for it, and nothing is allocated on the node meanwhile), transfers as flows; eager, prio, random, ws, lws, dm, dmda, dmdar, dmdap, dmdas, dmdasd, heteroprio (automatic buckets); task priorities capped into the policy's range as StarPU does at submission (eager, random, dm, dmda, dmdar: [0, 0] unless runtime.min_priority/max_priority set it); GPU-GPU copies with peer access else through RAM, StarPU-SimGrid's copy serialisation (copies ordered as their GPU's driver submits them, in turn, after its allocations and 10 us of queueing each) and allocation costs (cudaMalloc/cudaFree one at a time across GPUs); a popped task's buffers fetched in StarPU's handle order (written tiles first); fetch, prefetch and idle request levels with StarPU's in-flight caps (5/2/idle per node pair), buffers allocated as a request starts (short of memory it tries again when memory frees up on its node or a copy its node's driver handles ends), StarPU's prefetch pins (requests of different tasks never merged: a request joining another task's copy in flight loses its pin, one served before the other task's queued request, or whose data went before its turn, copies the data itself, in its place), wont_use idle write-backs once the last writer ends, in the hint's callback after its thread's pushes; a request loading from its first handling, short of memory or not; every push costs its releaser 1 us, and a worker whose task ended pops after its pushes and its progress (1 us per driven memory node; its GPU's request lists handled there, so a write-back started for a prefetch holds its pop), as StarPU's driver loop does; a wont_use hint coming due costs the ending thread two more pushes (the acquire and its callback); dm* decisions made at one instant by different releasers do not see each other's pushes (StarPU-SimGrid's threads decide before any commits); eager/prio/ws/lws: StarPU-SimGrid's driver threads (a push costs its thread 1 us and signals, under ws/lws, every worker, under eager/prio, workers up to the first asleep and not yet told, every driver starting untold, CPUs staying told; a driver loop sleeps 1 us per memory node it drives, pops one task, then waits, or loops again if signalled meanwhile; a CPU's fetch finding data in RAM wakes RAM's drivers; a GPU pops nothing while its task's data come and sleeps 10 us after a launch; a request made while the GPU driver that handles it is in its loop is handled at the end of its progress, just before its pop (simplified: one made while it holds a full pipeline is handled at once); sleeps ending together wake pushers first, then by when they began, the last begun first, as SimGrid does; simplified: a worker's mutex held by a pusher's walk does not delay its pop); ws/lws thieves take the newest task of the highest priority, owners the oldest (simplified: a thief never finds its victim's lock taken, where StarPU's backs off 1 us and pops again); StarPU codelet models and bus files; synchronous CUDA codelets (Cholesky's POTRF, LU's GETRF, `cuda_sync` DAG codelets) block their GPU's driver: no pop, no copy submitted, no 10 us queueing; an asynchronous kernel is queued 10 us after its data are there and starts then or when the kernel before it ends (simplified, outside eager/prio/ws/lws: once a task's data are there the driver pops its next task at once, where StarPU's pops 12 us later, after its queueing sleep and progress). StarPU's sub-allocator (32 MiB chunks for buffers up to 4 MiB, counted against the memory limit; first fit in address order, chunks searched in StarPU's list order past those whose free-room hint is short; evicted buffers go back to their chunk); background tidying (switch memory_tidying, on; every new buffer counts as clean, as in StarPU); a copy prefetched or fetched for a task that writes the data is the owner from when it is there, as StarPU updates states with a request's mode")
            .init_resource::<Runtime>()
            .add_systems(SimStartup, setup_runtime.in_set(StartupSet::Workload))
            .add_systems(hetsim_engine::SimFinish, publish_runtime_report)
            .add_stall_check(stuck_tasks);
    }

    /// The step systems, only for a scenario with a task graph (`RuntimeConfig`, inserted
    /// before `App::finish`), and the recording one only when the run records: a model's
    /// systems cost every step even when their condition skips them.
    fn finish(&self, app: &mut App) {
        if app.world().contains_resource::<RuntimeConfig>() {
            app.add_systems(SimStep, run_runtime.in_set(SimSet::Runtime));
            if app.world().resource::<Recorder>().is_on() {
                app.add_systems(SimStep, record_runtime_intervals.in_set(SimSet::Record));
            }
        }
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
    let switches = world.resource::<Switches>();
    let flags = model::Flags {
        overheads: switches.is_on("runtime_overheads"),
        mem_limit: switches.is_on("gpu_memory_limit"),
        shared_bus: switches.is_on("pcie_shared_bus"),
        prefetch: switches.is_on("prefetch"),
        noise: switches.is_on("perfmodel_noise"),
        tidy: switches.is_on("memory_tidying"),
    };
    let Some(mut topo) = world.remove_resource::<Topology>() else {
        return Ok(()); // the platform's own error is reported
    };
    let seed = world.resource_mut::<SimRng>().0.next_u64();
    let rng = rand_chacha::ChaCha8Rng::seed_from_u64(seed);
    let built = setup::build(
        (&cfg.workload, &cfg.runtime),
        &platform,
        &mut topo,
        flags,
        rng,
    );
    world.insert_resource(topo);
    let Some(mut rt) = built? else {
        return Ok(());
    };
    if cfg.log {
        rt.out.log = Some(Vec::new());
    }
    if world.resource::<Recorder>().is_on() {
        let mut rec = world.resource_mut::<Recorder>();
        for (w, info) in rt.model.machine.workers.iter().enumerate() {
            rt.workers.each[w].row = Some(rec.resource(ResourceKind::Worker, &info.name));
        }
    }
    world.insert_resource(rt);
    world
        .resource_mut::<Calendar>()
        .schedule(SimTime::ZERO, RtEvent::Start);
    Ok(())
}

/// The runtime's step: copies whose flows ended, then its own events, the drivers woken at
/// this instant, and its progress; then its timers and flows go out. One system, not a chain
/// of them: a system costs every step its parameters' lookups, and most steps are the
/// runtime's alone.
fn run_runtime(
    mut flows_done: ResMut<Inbox<XferFlowDone>>,
    mut inbox: ResMut<Inbox<RtEvent>>,
    mut rt: ResMut<Runtime>,
    mut cx: Reach,
) {
    rt.out.now = cx.now();
    for XferFlowDone(x) in flows_done.drain() {
        rt.xfer_done(x);
    }
    // Driver threads waking at this instant go after the rest, in SimGrid's order.
    let mut woken: Vec<u32> = Vec::new();
    for ev in inbox.drain() {
        match ev {
            RtEvent::Wake(i) => woken.push(i),
            RtEvent::Start => {
                let roots: Vec<u32> = (0..rt.tasks.left.len() as u32)
                    .filter(|&t| rt.tasks.left[t as usize] == 0)
                    .collect();
                for t in roots {
                    rt.ready(t, None);
                }
            }
            RtEvent::TaskDone(t) => rt.kernel_done(t),
            RtEvent::XferDone(x) => rt.xfer_done(x),
            RtEvent::XferSubmit(x) => rt.submit(x),
            RtEvent::Push(t) => rt.push_due(t),
            RtEvent::Resume(w) => rt.resume(w),
            RtEvent::Hint(h) => rt.evict_first(h),
        }
    }
    rt.pacing.threads.wake_order(&mut woken);
    for i in woken {
        rt.thread_woke(i as usize);
    }
    rt.broadcast_ram();
    rt.progress();
    flush(&mut rt, &mut cx);
}

fn record_runtime_intervals(mut rt: ResMut<Runtime>, mut rec: ResMut<Recorder>) {
    let rows = std::mem::take(&mut rt.out.intervals);
    for (row, codelet, t, start, end) in rows {
        let state = rec.name_id(graph::kernel(&rt.model.graph.codelets[codelet as usize]));
        let label = rec.name_id(&rt.model.graph.tasks[t as usize].label);
        rec.interval(Interval {
            resource: row,
            state,
            label: Some(label),
            start,
            end,
        });
    }
}

/// Schedules the step's timers and launches its transfer flows.
fn flush(rt: &mut Runtime, cx: &mut Reach) {
    for (at, due) in rt.out.timers.drain(..) {
        let ev = match due {
            Due::TaskDone(t) => RtEvent::TaskDone(t),
            Due::XferDone(x) => RtEvent::XferDone(x),
            Due::XferSubmit(x) => RtEvent::XferSubmit(x),
            Due::Push(t) => RtEvent::Push(t),
            Due::Resume(w) => RtEvent::Resume(w),
            Due::Wake(i) => RtEvent::Wake(i),
            Due::Hint(h) => RtEvent::Hint(h),
        };
        cx.cal.schedule(at, ev);
    }
    for (at, x) in std::mem::take(&mut rt.out.flows) {
        let xf = &rt.data.copies.xfers[x as usize];
        let (src, dst) = (
            &rt.model.machine.nodes[xf.src as usize],
            &rt.model.machine.nodes[xf.dst as usize],
        );
        let spec = FlowSpec {
            id: format!("x{x}"),
            src_row: src.name.clone(),
            dst_row: dst.name.clone(),
            bytes: rt.model.graph.handles[xf.handle as usize].size,
            start: Start::Ahead(at),
            cap: None,
            zero_latency: false,
        };
        if let Err(e) = cx.flow(src.endpoint, dst.endpoint, spec, XferFlowDone(x)) {
            cx.fail(format!("runtime: transfer: {e}"));
        }
    }
}

pub fn publish_runtime_report(world: &mut World) {
    if world.get_resource::<RuntimeConfig>().is_none() {
        return;
    }
    let mut rt = world.resource_mut::<Runtime>();
    let graph = std::sync::Arc::new(std::mem::take(&mut rt.model.graph));
    let log = std::sync::Arc::new(rt.out.log.take().unwrap_or_default());
    let mut report = rt.out.report.clone();
    report.graph = graph;
    report.log = log;
    report.worker_nodes = rt.model.machine.workers.iter().map(|w| w.node).collect();
    if report.makespan_s > 0.0 {
        report.gflops = rt.tasks.flops / report.makespan_s / 1e9;
    }
    report.workers = rt
        .model
        .machine
        .workers
        .iter()
        .zip(&rt.workers.each)
        .map(|(i, w)| (i.name.clone(), w.busy_s, w.tasks))
        .collect();
    report.memory = rt
        .model
        .machine
        .nodes
        .iter()
        .zip(&rt.data.mem.peak)
        .map(|(n, &p)| (n.name.clone(), n.capacity, p))
        .collect();
    world.insert_resource(report);
}

fn stuck_tasks(world: &mut World) -> Vec<String> {
    let Some(rt) = world.get_resource::<Runtime>() else {
        return Vec::new();
    };
    if rt.tasks.state.is_empty() || rt.tasks.done == rt.tasks.state.len() as u64 {
        return Vec::new();
    }
    let mut out = vec![format!(
        "{} of {} tasks did not run ({} queued in the scheduler)",
        rt.tasks.state.len() as u64 - rt.tasks.done,
        rt.tasks.state.len(),
        rt.sched.as_ref().map_or(0, |p| p.queued())
    )];
    for (w, wr) in rt.workers.each.iter().enumerate() {
        if let Some(t) = wr.fetching {
            let node = rt.model.machine.workers[w].node;
            out.push(format!(
                "{} fetches {} and waits{}",
                rt.model.machine.workers[w].name,
                rt.model.graph.tasks[t as usize].label,
                if rt.data.mem.mem_wait[node as usize].contains(&t) {
                    format!(
                        " for memory on {} ({:.0} of {:.0} bytes used, nothing evictable)",
                        rt.model.machine.nodes[node as usize].name,
                        rt.data.mem.used[node as usize],
                        rt.model.machine.nodes[node as usize].capacity
                    )
                } else {
                    " for its data".to_string()
                }
            ));
        }
    }
    out
}
