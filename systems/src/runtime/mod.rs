#![doc = include_str!("README.md")]

mod core;
mod data;
mod model;
mod out;
mod pacing;
pub mod sched;
mod setup;
mod tasks;
mod workers;

pub use model::{graph, machine, tiled};

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

/// The runtime's timers on the calendar are the ones it asks for ([`Due`]).
impl SimEvent for Due {
    const NAME: &'static str = "runtime.event";
    fn pack(&self) -> (Entity, u64) {
        let (k, v) = match *self {
            Due::TaskDone(t) => (0u64, t),
            Due::XferDone(x) => (1, x),
            Due::Start => (2, 0),
            Due::Push(t) => (4, t),
            Due::Resume(w) => (5, w),
            Due::XferSubmit(x) => (6, x),
            Due::Wake(i) => (7, i),
            Due::Hint(h) => (8, h),
        };
        (Entity::PLACEHOLDER, (k << 32) | v as u64)
    }
    fn unpack(_: Entity, arg: u64) -> Self {
        let v = arg as u32;
        match arg >> 32 {
            0 => Due::TaskDone(v),
            1 => Due::XferDone(v),
            4 => Due::Push(v),
            5 => Due::Resume(v),
            6 => Due::XferSubmit(v),
            7 => Due::Wake(v),
            8 => Due::Hint(v),
            _ => Due::Start,
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
        app.add_sim_event::<Due>()
            .add_sim_event::<XferFlowDone>()
            .register_switch("gpu_memory_limit", true, "GPU memory holds at most its capacity (90 % of the device, or limit_cuda_mem_mb); replicas are evicted LRU with write-back; off: unlimited")
            .register_switch("runtime_overheads", true, include_str!("overheads.txt"))
            .register_switch("pcie_shared_bus", true, "data transfers are flows sharing the platform's PCIe links; off: each transfer alone at latency + size / bandwidth (one independent link per transfer)")
            .register_switch("prefetch", true, "dm* schedulers prefetch a task's inputs when they assign it; off: data move when the task is popped")
            .register_switch("memory_tidying", true, "StarPU's background tidying: under 5 % of a GPU's buffers clean, dirty ones are written back to RAM at idle level, least recently used first, until 10 % are; off: dirty buffers reach RAM only when evicted or hinted wont_use")
            .register_switch("perfmodel_noise", false, "task times drawn from the model's normal distribution (mean, stddev; seeded); off: the mean")
            .describe_model("runtime", include_str!("summary.txt"))
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
        .schedule(SimTime::ZERO, Due::Start);
    Ok(())
}

/// The runtime's step: copies whose flows ended, then its own events, the drivers woken at
/// this instant, and its progress; then its timers and flows go out. One system, not a chain
/// of them: a system costs every step its parameters' lookups, and most steps are the
/// runtime's alone.
fn run_runtime(
    mut flows_done: ResMut<Inbox<XferFlowDone>>,
    mut inbox: ResMut<Inbox<Due>>,
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
            Due::Wake(i) => woken.push(i),
            Due::Start => {
                let roots: Vec<u32> = (0..rt.tasks.left.len() as u32)
                    .filter(|&t| rt.tasks.left[t as usize] == 0)
                    .collect();
                for t in roots {
                    rt.ready(t, None);
                }
            }
            Due::TaskDone(t) => rt.kernel_done(t),
            Due::XferDone(x) => rt.xfer_done(x),
            Due::XferSubmit(x) => rt.with_data(|d, cx| d.submit(cx, x)),
            Due::Push(t) => rt.push_due(t),
            Due::Resume(w) => rt.resume(w),
            Due::Hint(h) => rt.with_data(|d, cx| d.evict_first(cx, h)),
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
        cx.cal.schedule(at, due);
    }
    for (at, x) in std::mem::take(&mut rt.out.flows) {
        let xf = &rt.data.copies.xfers[x as usize];
        let (src, dst) = (
            &rt.model.machine.nodes[xf.src as usize],
            &rt.model.machine.nodes[xf.dst as usize],
        );
        let spec = FlowSpec {
            id: format!("x{x}").into(),
            src_row: src.name.as_str().into(),
            dst_row: dst.name.as_str().into(),
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
