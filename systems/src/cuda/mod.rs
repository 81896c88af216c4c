//! The compute plugin: CUDA-like streams per GPU, driven by one host thread per GPU, with NCCL
//! collectives as kernels on the streams.
//!
//! Each host thread runs its program: every call that enqueues work costs `launch_overhead` of
//! host time, after which the work is visible to the GPU; synchronisations block the host
//! until the stream (or every stream) is empty. A stream runs its items one after another:
//! kernels take their modelled time; copies are flows on the platform's PCIe or NVLink links,
//! at most `copy_engines` at once per GPU; `Record` completes an event, `Wait` holds the
//! stream until the event's last record enqueued before it has completed; an NCCL call waits
//! at the head of each member's stream until every member has reached it (NCCL kernels spin
//! on their peers), then runs as planned by [`crate::nccl`] and releases all streams at once.
//! A CUDA graph is a captured list of items; a launch costs one overhead and runs them in order
//! on the launching stream; `Launch { times }` makes its launches one host step at a time. A
//! stream holds at most 1,024 pending items: a call that would enqueue more blocks the host
//! until one ends (CUDA's launch queue).
//! Simplified: kernels on different streams overlap without slowing each other (no SM
//! sharing), captured graphs run on one stream, the launch queue's depth is the usual
//! measured figure and per stream.
//!
//! Layout: this file is the coordinator (events, systems, and the one place that touches the
//! calendar, the network, the NCCL plugin and the recorder); the leaves take plain data and
//! return `device::Effect`s: `setup.rs` (devices, checks), `host.rs` (host threads),
//! `stream.rs` (streams), `device.rs` (the state they share).

mod device;
mod host;
mod setup;
mod stream;

use bevy_app::{App, Plugin};
use bevy_ecs::prelude::*;

use hetsim_engine::record::{Interval, Recorder, ResourceKind};
use hetsim_engine::{
    Calendar, Clock, Inbox, SimAppExt, SimEvent, SimSet, SimStartup, SimStep, StartupSet,
};
use hetsim_schema::SimTime;
use hetsim_schema::cuda::CudaSpec;
use hetsim_schema::scenario::PlatformSpec;

use crate::nccl::{self, CollectiveRecord, Collectives};
use crate::network::{FlowSpec, Reach, Start};
use crate::platform::{Endpoint, PlatformConfig, Topology};
use device::{Effect, Gpus};

pub use device::DeviceTotals;

/// The CUDA workloads to run (inserted by whoever assembles the app): the scenario's `Cuda`
/// workload, or each CUDA job of its `jobs`.
#[derive(Resource, Debug, Clone)]
pub struct CudaConfig(pub Vec<CudaJob>);

/// One CUDA job: its GPUs, host threads and NCCL communicator are its own.
pub type CudaJob = crate::jobs::instance::Instance<CudaSpec>;

/// Totals published at the end of a run (the output crate reads this).
#[derive(Resource, Debug, Clone, Default)]
pub struct CudaReport {
    /// Every device, job after job.
    pub devices: Vec<DeviceTotals>,
    pub collectives: Vec<CollectiveRecord>,
    /// Each job's share of the above, when the scenario has `jobs`.
    pub jobs: Vec<CudaJobReport>,
}

/// One CUDA job's totals.
#[derive(Debug, Clone, Default)]
pub struct CudaJobReport {
    pub name: String,
    pub start_s: f64,
    pub devices: Vec<DeviceTotals>,
    pub collectives: Vec<CollectiveRecord>,
}

/// Every job's GPUs and host threads.
#[derive(Resource, Default)]
pub struct Cuda {
    jobs: Vec<CudaRt>,
}

/// The state of one job's GPUs and host threads, and their communicator in the NCCL plugin.
#[derive(Default)]
struct CudaRt {
    gpus: Gpus,
    comm: Option<u32>,
    name: Option<String>,
    start: SimTime,
}

/// A stream item's time is up (`done`) or its enqueueing call has returned (not `done`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
struct StreamTimer {
    job: u16,
    dev: u32,
    stream: u32,
    done: bool,
}

/// Bits of a packed device and stream index: a job's GPUs number below 2^24 (checked at
/// setup), its streams below [`setup::MAX_STREAMS`].
const DEV_BITS: u32 = 24;
const STREAM_BITS: u32 = 23;

impl SimEvent for StreamTimer {
    const NAME: &'static str = "cuda.stream_timer";
    fn pack(&self) -> (Entity, u64) {
        let arg = ((self.job as u64) << (DEV_BITS + STREAM_BITS + 1))
            | ((self.dev as u64) << (STREAM_BITS + 1))
            | ((self.stream as u64) << 1)
            | self.done as u64;
        (Entity::PLACEHOLDER, arg)
    }
    fn unpack(_: Entity, arg: u64) -> Self {
        StreamTimer {
            job: (arg >> (DEV_BITS + STREAM_BITS + 1)) as u16,
            dev: ((arg >> (STREAM_BITS + 1)) & ((1 << DEV_BITS) - 1)) as u32,
            stream: ((arg >> 1) & ((1 << STREAM_BITS) - 1)) as u32,
            done: arg & 1 == 1,
        }
    }
}

/// Packs a job and a 32-bit index (a device, a collective) into an event's argument.
fn pack_job(job: u16, i: u32) -> u64 {
    ((job as u64) << 32) | i as u64
}

fn unpack_job(arg: u64) -> (u16, u32) {
    ((arg >> 32) as u16, arg as u32)
}

/// A host thread's busy time is over (`dev`: its device in job `job`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
struct HostWake {
    job: u16,
    dev: u32,
}

impl SimEvent for HostWake {
    const NAME: &'static str = "cuda.host_wake";
    fn pack(&self) -> (Entity, u64) {
        (Entity::PLACEHOLDER, pack_job(self.job, self.dev))
    }
    fn unpack(_: Entity, arg: u64) -> Self {
        let (job, dev) = unpack_job(arg);
        HostWake { job, dev }
    }
}

/// Collective `k` of job `job`: its transfers and fill are over.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
struct CollDone {
    job: u16,
    k: u32,
}

impl SimEvent for CollDone {
    const NAME: &'static str = "cuda.collective_done";
    fn pack(&self) -> (Entity, u64) {
        (Entity::PLACEHOLDER, pack_job(self.job, self.k))
    }
    fn unpack(_: Entity, arg: u64) -> Self {
        let (job, k) = unpack_job(arg);
        CollDone { job, k }
    }
}

/// The flow of the copy at the head of a stream has delivered its bytes.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
struct CopyEnd {
    job: u16,
    dev: u32,
    stream: u32,
}

impl SimEvent for CopyEnd {
    const NAME: &'static str = "cuda.copy_end";
    fn pack(&self) -> (Entity, u64) {
        let t = StreamTimer {
            job: self.job,
            dev: self.dev,
            stream: self.stream,
            done: false,
        };
        t.pack()
    }
    fn unpack(e: Entity, arg: u64) -> Self {
        let t = StreamTimer::unpack(e, arg);
        CopyEnd {
            job: t.job,
            dev: t.dev,
            stream: t.stream,
        }
    }
}

pub struct CudaPlugin;

impl Plugin for CudaPlugin {
    fn build(&self, app: &mut App) {
        app.add_sim_event::<StreamTimer>()
            .add_sim_event::<HostWake>()
            .add_sim_event::<CollDone>()
            .add_sim_event::<CopyEnd>()
            .describe_model("cuda", include_str!("summary.txt"))
            .init_resource::<Cuda>()
            .add_systems(SimStartup, setup_devices.in_set(StartupSet::Workload))
            .add_systems(hetsim_engine::SimFinish, publish_report)
            .add_stall_check(stuck_devices);
    }

    /// The step systems, only for a scenario with a CUDA workload (`CudaConfig`, inserted
    /// before `App::finish`), and the recording one only when the run records.
    fn finish(&self, app: &mut App) {
        if app.world().contains_resource::<CudaConfig>() {
            nccl::enable(app);
            app.add_systems(
                SimStep,
                (
                    finish_timed_items,
                    finish_copies,
                    finish_collectives,
                    wake_hosts,
                    run_hosts_and_streams,
                )
                    .chain()
                    .in_set(SimSet::Compute),
            );
            if app.world().resource::<Recorder>().is_on() {
                app.add_systems(SimStep, record_stream_intervals.in_set(SimSet::Record));
            }
        }
    }
}

fn setup_devices(world: &mut World) {
    let Some(cfg) = world.get_resource::<CudaConfig>().map(|c| c.0.clone()) else {
        return;
    };
    let jobs = crate::jobs::instance::set_up_each(world, &cfg, "CUDA", setup);
    world.insert_resource(Cuda { jobs });
}

fn setup(world: &mut World, job: &CudaJob, j: u16) -> Result<CudaRt, String> {
    let PlatformSpec::Cluster(cluster) = world.resource::<PlatformConfig>().0.clone() else {
        return Err("workload.Cuda: needs a Cluster platform (nodes of GPUs)".into());
    };
    let prefix = job.prefix();
    let mut gpus = setup::build(job.spec.clone(), &cluster, job.nodes.as_deref(), &prefix)?;
    if gpus.devs.len() >= 1 << DEV_BITS {
        return Err(format!(
            "workload.Cuda.gpus: {} GPUs, at most {} in one job",
            gpus.devs.len(),
            (1u32 << DEV_BITS) - 1
        ));
    }
    let comm = if setup::uses_nccl(&gpus.spec().program) {
        let members: Vec<_> = gpus.devs.iter().map(|d| d.gpu).collect();
        let mut topo = world.resource_mut::<Topology>();
        let comm = nccl::Comm::new(
            members.clone(),
            &gpus.spec().nccl,
            &mut topo,
            &cluster.node.gpu.name,
        )
        .map_err(|e| format!("workload.Cuda.nccl: {e}"))?;
        let rows = gpus.devs.iter().map(|d| d.name.clone()).collect();
        let mut colls = world.resource_mut::<Collectives>();
        Some(colls.register(comm, rows, move |k| CollDone { job: j, k }))
    } else {
        None
    };
    if world.resource::<Recorder>().is_on() {
        let mut rec = world.resource_mut::<Recorder>();
        for dev in &mut gpus.devs {
            for (s, st) in dev.streams.iter_mut().enumerate() {
                let row = format!("{}.stream[{s}]", dev.name);
                st.row = Some(rec.resource(ResourceKind::Stream, &row));
            }
        }
    }
    let mut cal = world.resource_mut::<Calendar>();
    for dev in 0..gpus.devs.len() as u32 {
        cal.schedule(job.start, HostWake { job: j, dev });
    }
    Ok(CudaRt {
        gpus,
        comm,
        name: job.name.clone(),
        start: job.start,
    })
}

/// Where the devices' effects go: the calendar and the network, the NCCL plugin.
#[derive(bevy_ecs::system::SystemParam)]
struct Sinks<'w, 's> {
    reach: Reach<'w, 's>,
    colls: ResMut<'w, Collectives>,
}

fn finish_timed_items(
    mut inbox: ResMut<Inbox<StreamTimer>>,
    mut cuda: ResMut<Cuda>,
    clock: Res<Clock>,
) {
    for t in inbox.drain() {
        let gpus = &mut cuda.jobs[t.job as usize].gpus;
        gpus.timer(t.dev, t.stream, t.done, clock.now);
    }
}

fn finish_copies(mut inbox: ResMut<Inbox<CopyEnd>>, mut cuda: ResMut<Cuda>, clock: Res<Clock>) {
    for CopyEnd { job, dev, stream } in inbox.drain() {
        cuda.jobs[job as usize]
            .gpus
            .copy_done(dev, stream, clock.now);
    }
}

fn finish_collectives(mut inbox: ResMut<Inbox<CollDone>>, mut cuda: ResMut<Cuda>, sinks: Sinks) {
    let now = sinks.reach.now();
    for CollDone { job, k } in inbox.drain() {
        let rt = &mut cuda.jobs[job as usize];
        let comm = rt.comm.expect("a communicator");
        let record = sinks.colls.record(comm, k, now);
        rt.gpus.end_collective(k, now, record);
    }
}

fn wake_hosts(mut inbox: ResMut<Inbox<HostWake>>, mut cuda: ResMut<Cuda>) {
    for HostWake { job, dev } in inbox.drain() {
        cuda.jobs[job as usize].gpus.hosts.push(dev);
    }
}

fn run_hosts_and_streams(mut cuda: ResMut<Cuda>, mut sinks: Sinks) {
    let now = sinks.reach.now();
    for (j, rt) in cuda.jobs.iter_mut().enumerate() {
        rt.gpus.run_hosts_and_streams(now);
        rt.apply_effects(j as u16, &mut sinks);
    }
}

impl CudaRt {
    /// Carries out what the devices of job `j` asked, in the order they asked.
    fn apply_effects(&mut self, j: u16, sinks: &mut Sinks) {
        let Sinks { reach, colls } = sinks;
        let now = reach.now();
        for fx in std::mem::take(&mut self.gpus.fx) {
            match fx {
                Effect::HostWake { at, dev } => reach.cal.schedule(at, HostWake { job: j, dev }),
                Effect::StreamTimer {
                    at,
                    dev,
                    stream,
                    done,
                } => reach.cal.schedule(
                    at,
                    StreamTimer {
                        job: j,
                        dev,
                        stream,
                        done,
                    },
                ),
                Effect::Copy {
                    dev,
                    stream,
                    from,
                    to,
                    bytes,
                } => {
                    let name = &self.gpus.devs[dev as usize].name;
                    // Named by where the bytes go: a HostToDevice copy is from the host.
                    let end = |e: Endpoint| e.cluster_name().unwrap_or_else(|| name.clone());
                    let spec = FlowSpec {
                        id: format!("{name}.copy").into(),
                        src_row: end(from).into(),
                        dst_row: end(to).into(),
                        bytes,
                        start: Start::At(now),
                        cap: None,
                        zero_latency: false,
                    };
                    let done = CopyEnd {
                        job: j,
                        dev,
                        stream,
                    };
                    if let Err(e) = reach.flow(from, to, spec, done) {
                        reach.fail(format!("{name}: copy: {e}"));
                    }
                }
                Effect::Nccl { k } => {
                    let c = self.comm.expect("a communicator for NCCL calls");
                    if let Err(e) = colls.arrive(c, k, &self.gpus.colls[k as usize], reach) {
                        let job = self.name.as_ref().map(|n| format!("job `{n}`: "));
                        reach.fail(format!("{}workload.Cuda: {e}", job.unwrap_or_default()));
                    }
                }
            }
        }
    }
}

/// Hands the stream intervals that ended this step to the recorder.
fn record_stream_intervals(mut cuda: ResMut<Cuda>, mut rec: ResMut<Recorder>) {
    for rt in &mut cuda.jobs {
        for (row, state, label, start, end) in rt.gpus.finished.drain(..) {
            let state = rec.name_id(&state);
            let label = label.map(|l| rec.name_id(&l));
            rec.interval(Interval {
                resource: row,
                state,
                label,
                start,
                end,
            });
        }
    }
}

/// Publishes the totals once the run is over.
pub fn publish_report(world: &mut World) {
    if world.get_resource::<CudaConfig>().is_none() {
        return;
    }
    let mut report = CudaReport::default();
    for rt in &world.resource::<Cuda>().jobs {
        let devices = rt.gpus.totals();
        report.devices.extend(devices.iter().cloned());
        report
            .collectives
            .extend(rt.gpus.done_colls.iter().cloned());
        if let Some(name) = &rt.name {
            report.jobs.push(CudaJobReport {
                name: name.clone(),
                start_s: rt.start.as_secs_f64(),
                devices,
                collectives: rt.gpus.done_colls.clone(),
            });
        }
    }
    world.insert_resource(report);
}

/// Hosts and streams that have not finished when no event is left.
fn stuck_devices(world: &mut World) -> Vec<String> {
    let Some(cuda) = world.get_resource::<Cuda>() else {
        return Vec::new();
    };
    let colls = world.get_resource::<Collectives>();
    let mut out = Vec::new();
    for rt in &cuda.jobs {
        let arrived = |k: u32| match (rt.comm, colls) {
            (Some(c), Some(colls)) => colls.arrived(c, k),
            _ => 0,
        };
        let job = rt.name.as_ref().map(|n| format!("job `{n}`: "));
        let job = job.unwrap_or_default();
        out.extend(
            rt.gpus
                .stuck(arrived)
                .into_iter()
                .map(|s| format!("{job}{s}")),
        );
    }
    out
}
