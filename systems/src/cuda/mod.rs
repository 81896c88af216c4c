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
    Calendar, Clock, Inbox, SimAppExt, SimErrors, SimEvent, SimSet, SimStartup, SimStep, StartupSet,
};
use hetsim_schema::SimTime;
use hetsim_schema::cuda::CudaSpec;
use hetsim_schema::scenario::PlatformSpec;

use crate::nccl::{self, CollectiveRecord, Collectives};
use crate::network::{FlowSpec, Reach, Start};
use crate::platform::{Endpoint, PlatformConfig, Topology};
use device::{Effect, Gpus};

pub use device::DeviceTotals;

/// The CUDA workload to run (inserted by whoever assembles the app).
#[derive(Resource, Debug, Clone)]
pub struct CudaConfig(pub CudaSpec);

/// Totals published at the end of a run (the output crate reads this).
#[derive(Resource, Debug, Clone, Default)]
pub struct CudaReport {
    pub devices: Vec<DeviceTotals>,
    pub collectives: Vec<CollectiveRecord>,
}

/// The state of every GPU and host thread, and their communicator in the NCCL plugin.
#[derive(Resource, Default)]
pub struct Cuda {
    gpus: Gpus,
    comm: Option<u32>,
}

/// A stream item's time is up (`done`) or its enqueueing call has returned (not `done`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
struct StreamTimer {
    dev: u32,
    stream: u32,
    done: bool,
}

impl SimEvent for StreamTimer {
    const NAME: &'static str = "cuda.stream_timer";
    fn pack(&self) -> (Entity, u64) {
        let arg = ((self.dev as u64) << 32) | ((self.stream as u64) << 1) | self.done as u64;
        (Entity::PLACEHOLDER, arg)
    }
    fn unpack(_: Entity, arg: u64) -> Self {
        StreamTimer {
            dev: (arg >> 32) as u32,
            stream: ((arg & 0xffff_ffff) >> 1) as u32,
            done: arg & 1 == 1,
        }
    }
}

/// A host thread's busy time is over.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
struct HostWake(u32);

impl SimEvent for HostWake {
    const NAME: &'static str = "cuda.host_wake";
    fn pack(&self) -> (Entity, u64) {
        (Entity::PLACEHOLDER, self.0 as u64)
    }
    fn unpack(_: Entity, arg: u64) -> Self {
        HostWake(arg as u32)
    }
}

/// A collective's transfers and fill are over.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
struct CollDone(u32);

impl SimEvent for CollDone {
    const NAME: &'static str = "cuda.collective_done";
    fn pack(&self) -> (Entity, u64) {
        (Entity::PLACEHOLDER, self.0 as u64)
    }
    fn unpack(_: Entity, arg: u64) -> Self {
        CollDone(arg as u32)
    }
}

/// The flow of the copy at the head of a stream has delivered its bytes.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
struct CopyEnd {
    dev: u32,
    stream: u32,
}

impl SimEvent for CopyEnd {
    const NAME: &'static str = "cuda.copy_end";
    fn pack(&self) -> (Entity, u64) {
        (
            Entity::PLACEHOLDER,
            ((self.dev as u64) << 32) | self.stream as u64,
        )
    }
    fn unpack(_: Entity, arg: u64) -> Self {
        CopyEnd {
            dev: (arg >> 32) as u32,
            stream: arg as u32,
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
    let Some(spec) = world.get_resource::<CudaConfig>().map(|c| c.0.clone()) else {
        return;
    };
    if let Err(e) = setup(world, spec) {
        world.resource_mut::<SimErrors>().0.push(e);
    }
}

fn setup(world: &mut World, spec: CudaSpec) -> Result<(), String> {
    let PlatformSpec::Cluster(cluster) = world.resource::<PlatformConfig>().0.clone() else {
        return Err("workload.Cuda: needs a Cluster platform (nodes of GPUs)".into());
    };
    let mut gpus = setup::build(spec, &cluster)?;
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
        let rows = members.iter().map(setup::device_name).collect();
        let mut colls = world.resource_mut::<Collectives>();
        Some(colls.register(comm, rows, CollDone))
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
    for d in 0..gpus.devs.len() as u32 {
        cal.schedule(SimTime::ZERO, HostWake(d));
    }
    world.insert_resource(Cuda { gpus, comm });
    Ok(())
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
        cuda.gpus.timer(t.dev, t.stream, t.done, clock.now);
    }
}

fn finish_copies(mut inbox: ResMut<Inbox<CopyEnd>>, mut cuda: ResMut<Cuda>, clock: Res<Clock>) {
    for CopyEnd { dev, stream } in inbox.drain() {
        cuda.gpus.copy_done(dev, stream, clock.now);
    }
}

fn finish_collectives(mut inbox: ResMut<Inbox<CollDone>>, mut cuda: ResMut<Cuda>, sinks: Sinks) {
    let now = sinks.reach.now();
    for CollDone(k) in inbox.drain() {
        let comm = cuda.comm.expect("a communicator");
        let record = sinks.colls.record(comm, k, now);
        cuda.gpus.end_collective(k, now, record);
    }
}

fn wake_hosts(mut inbox: ResMut<Inbox<HostWake>>, mut cuda: ResMut<Cuda>) {
    for HostWake(d) in inbox.drain() {
        cuda.gpus.hosts.push(d);
    }
}

fn run_hosts_and_streams(mut cuda: ResMut<Cuda>, mut sinks: Sinks) {
    cuda.gpus.run_hosts_and_streams(sinks.reach.now());
    cuda.apply_effects(&mut sinks);
}

impl Cuda {
    /// Carries out what the devices asked, in the order they asked.
    fn apply_effects(&mut self, sinks: &mut Sinks) {
        let Sinks { reach, colls } = sinks;
        let now = reach.now();
        for fx in std::mem::take(&mut self.gpus.fx) {
            match fx {
                Effect::HostWake { at, dev } => reach.cal.schedule(at, HostWake(dev)),
                Effect::StreamTimer {
                    at,
                    dev,
                    stream,
                    done,
                } => reach.cal.schedule(at, StreamTimer { dev, stream, done }),
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
                        id: format!("{name}.copy"),
                        src_row: end(from),
                        dst_row: end(to),
                        bytes,
                        start: Start::At(now),
                        cap: None,
                        zero_latency: false,
                    };
                    if let Err(e) = reach.flow(from, to, spec, CopyEnd { dev, stream }) {
                        reach.fail(format!("{name}: copy: {e}"));
                    }
                }
                Effect::Nccl { k } => {
                    let c = self.comm.expect("a communicator for NCCL calls");
                    if let Err(e) = colls.arrive(c, k, &self.gpus.colls[k as usize], reach) {
                        reach.fail(format!("workload.Cuda: {e}"));
                    }
                }
            }
        }
    }
}

/// Hands the stream intervals that ended this step to the recorder.
fn record_stream_intervals(mut cuda: ResMut<Cuda>, mut rec: ResMut<Recorder>) {
    for (row, state, label, start, end) in cuda.gpus.finished.drain(..) {
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

/// Publishes the totals once the run is over.
pub fn publish_report(world: &mut World) {
    if world.get_resource::<CudaConfig>().is_none() {
        return;
    }
    let cuda = world.resource::<Cuda>();
    let report = CudaReport {
        devices: cuda.gpus.totals(),
        collectives: cuda.gpus.done_colls.clone(),
    };
    world.insert_resource(report);
}

/// Hosts and streams that have not finished when no event is left.
fn stuck_devices(world: &mut World) -> Vec<String> {
    let Some(cuda) = world.get_resource::<Cuda>() else {
        return Vec::new();
    };
    let colls = world.get_resource::<Collectives>();
    let arrived = |k: u32| match (cuda.comm, colls) {
        (Some(c), Some(colls)) => colls.arrived(c, k),
        _ => 0,
    };
    cuda.gpus.stuck(arrived)
}
