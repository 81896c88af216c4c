//! The MPI plugin: ranks on GPUs run their programs; messages follow eager or rendezvous
//! protocols over the platform's links, on one of four paths:
//!
//! - `nvlink`: both buffers on GPUs of one node: GPU to GPU over the node's links (NVLink
//!   when the platform has it, else through PCIe);
//! - `gpudirect` (switch `gpudirect` on, device buffers on different nodes): pinning delay,
//!   then GPU -> PCIe -> NIC -> network -> NIC -> GPU, always by rendezvous;
//! - `hostcopy` (switch off): device-to-host copy at the sender, host to host over the NICs,
//!   host-to-device copy at the receiver (or both copies at the sender, `copy_at: Sender`, as
//!   TraceR charges them); a copy costs `gpu_copy_delay + bytes x gpu_copy_per_byte`, or with
//!   switch `pcie_copy_contention` the delay then a flow on the PCIe links;
//! - `host`: host buffers, host to host.
//!
//! Matching follows MPI: by source, tag and communicator (one: world), in posting order, with
//! an unexpected-message queue. An envelope is matched when it is sent (so messages between
//! two ranks never overtake); the data then takes its protocol's time.
//!
//! Completion follows MPI libraries, not delivery:
//! - eager messages (up to `eager_limit`, switch `eager_protocol`): the send is done once its
//!   data is injected (after the device-to-host copy on HostCopy), so a rank sending several
//!   in a row has them in flight together; the data wait at the receiver if unmatched. Each
//!   holds one of the receiver's eager buffers for its sender (`eager_credits`, 64 per peer)
//!   until its receive completes; a sender out of buffers queues its eager data until one
//!   returns (a blocking send then blocks, as with MVAPICH's backlog);
//! - rendezvous: a control message (RTS), the receiver answers (CTS) once matched, then the
//!   data moves; the send is done when the data transfer ends (the RDMA completion). Control
//!   messages go between the two hosts and pay latency plus size over the bottleneck, without
//!   sharing bandwidth. SMPI charges no handshake; real libraries pay it, so we keep it;
//! - a receive is done when its data is in the user buffer (after the host-to-device copy on
//!   HostCopy).
//!
//! Intra-node GPU-to-GPU transfers use at most `copy_queues` at once per node (TraceR's
//! node_copy_queues, 4); each MPI call may cost `call_overhead` first.
//!
//! Simplified: one communicator, no probe/test/cancel, HostCopy copies are not limited by copy
//! engines, eager buffers return to the sender without a message of their own.
//!
//! Layout: this file is the coordinator (events, systems, and the one place that touches
//! the calendar, the network and the recorder); the leaves take plain data and return
//! `effects::Effect`s: `setup.rs` (placement, programs, checks), `rank.rs` (the
//! interpreter), `protocol.rs` (a message's protocol), `message.rs` (its paths and stages),
//! `matching.rs` (posted and unexpected queues), `collectives/` (collectives as point-to-point
//! steps, a file per collective family), `program.rs`
//! (the trace grammar), `generators.rs` (the proxy applications), `stats.rs` (what programs
//! hold, for `hetsim trace-stats`).

pub mod collectives;
mod effects;
pub mod generators;
mod matching;
mod message;
pub mod otf2;
pub mod program;
mod protocol;
mod rank;
mod setup;
pub mod smpi;
pub mod stats;
pub mod ti;

use bevy_app::{App, Plugin};
use bevy_ecs::prelude::*;
use std::collections::HashMap;

use hetsim_components::Gpu;
use hetsim_engine::record::{Interval, Recorder, ResId, ResourceKind};
use hetsim_engine::{
    Calendar, Clock, Inbox, SimAppExt, SimErrors, SimEvent, SimSet, SimStartup, SimStep,
    StartupSet, Switches,
};
use hetsim_schema::SimTime;
use hetsim_schema::mpi::MpiSpec;

use crate::nccl::{self, Collectives};
use crate::network::{FlowSpec, Reach, Start};
use crate::platform::Topology;
use crate::platform::topology::Layout;
use effects::Effect;
use rank::Job;

pub use message::{Path, Stage};
pub use rank::RankTotals;

/// The MPI job to run (inserted by whoever assembles the app).
#[derive(Resource, Debug, Clone)]
pub struct MpiConfig(pub MpiSpec);

/// A rank's entity.
#[derive(Component, Debug, Clone)]
pub struct Rank {
    pub index: u32,
    pub node: u32,
    pub gpu: u32,
}

/// What the MPI layer reports after a run.
#[derive(Resource, Debug, Clone, Default)]
pub struct MpiReport {
    pub ranks: Vec<RankTotals>,
    /// Messages and bytes per path, in [`Path::ALL`] order.
    pub messages: [u64; 4],
    pub bytes: [f64; 4],
}

/// The MPI layer's state: the job, and its NCCL communicator in the NCCL plugin.
#[derive(Resource, Default)]
pub struct Mpi {
    job: Job,
    nccl_comm: Option<u32>,
}

/// A protocol step due after a delay (copies, pinning, control messages).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
struct MsgTimer {
    msg: u32,
    stage: Stage,
}

/// The flow of a stage of a message has delivered its bytes.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
struct FlowEnd {
    msg: u32,
    stage: Stage,
}

fn pack_stage(msg: u32, stage: Stage) -> u64 {
    ((msg as u64) << 8) | stage as u64
}

fn unpack_stage(arg: u64) -> (u32, Stage) {
    ((arg >> 8) as u32, Stage::from_u8((arg & 0xff) as u8))
}

impl SimEvent for MsgTimer {
    const NAME: &'static str = "mpi.msg_timer";
    fn pack(&self) -> (Entity, u64) {
        (Entity::PLACEHOLDER, pack_stage(self.msg, self.stage))
    }
    fn unpack(_: Entity, arg: u64) -> Self {
        let (msg, stage) = unpack_stage(arg);
        MsgTimer { msg, stage }
    }
}

impl SimEvent for FlowEnd {
    const NAME: &'static str = "mpi.flow_end";
    fn pack(&self) -> (Entity, u64) {
        (Entity::PLACEHOLDER, pack_stage(self.msg, self.stage))
    }
    fn unpack(_: Entity, arg: u64) -> Self {
        let (msg, stage) = unpack_stage(arg);
        FlowEnd { msg, stage }
    }
}

/// A rank's busy period is over (`u32::MAX`: the start signal).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
struct RankWake(u32);

impl SimEvent for RankWake {
    const NAME: &'static str = "mpi.rank_wake";
    fn pack(&self) -> (Entity, u64) {
        (Entity::PLACEHOLDER, self.0 as u64)
    }
    fn unpack(_: Entity, arg: u64) -> Self {
        RankWake(arg as u32)
    }
}

/// NCCL call `k` is over (its flows and its pipeline fill).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
struct NcclDone(u32);

impl SimEvent for NcclDone {
    const NAME: &'static str = "mpi.nccl_done";
    fn pack(&self) -> (Entity, u64) {
        (Entity::PLACEHOLDER, self.0 as u64)
    }
    fn unpack(_: Entity, arg: u64) -> Self {
        NcclDone(arg as u32)
    }
}

pub struct MpiPlugin;

impl Plugin for MpiPlugin {
    fn build(&self, app: &mut App) {
        app.add_sim_event::<MsgTimer>()
            .add_sim_event::<FlowEnd>()
            .add_sim_event::<RankWake>()
            .add_sim_event::<NcclDone>()
            .register_switch(
                "gpudirect",
                true,
                "device buffers between nodes go GPU-NIC-network-NIC-GPU (GPUDirect RDMA, rendezvous); off: staged through host memory (HostCopy)",
            )
            .register_switch(
                "eager_protocol",
                true,
                "messages up to eager_limit go eagerly; off: every message by rendezvous",
            )
            .register_switch(
                "rendezvous_handshake",
                true,
                "a rendezvous message sends RTS and waits for CTS (each a control message) before its data; off: its data start once both sides are there, as SMPI models it",
            )
            .register_switch(
                "pcie_copy_contention",
                false,
                "HostCopy copies are flows on the PCIe links after their fixed delay; off: fixed delay + bytes x per-byte cost",
            )
            .describe_model(
                "mpi",
                include_str!("summary.txt"),
            )
            .init_resource::<Mpi>()
            .add_systems(SimStartup, spawn_ranks.in_set(StartupSet::Workload))
            .add_systems(hetsim_engine::SimFinish, publish_report)
            .add_stall_check(stuck_ranks);
    }

    /// The step systems, only for a scenario with an MPI workload (`MpiConfig`, inserted
    /// before `App::finish`).
    fn finish(&self, app: &mut App) {
        if app.world().contains_resource::<MpiConfig>() {
            nccl::enable(app);
            app.add_systems(
                SimStep,
                (
                    advance_messages,
                    wake_computed_ranks,
                    finish_nccl_calls,
                    run_ready_ranks,
                )
                    .chain()
                    .in_set(SimSet::Protocol),
            );
        }
    }
}

/// Places the ranks, reads their programs, spawns their entities and readies them.
fn spawn_ranks(world: &mut World) {
    let Some(cfg) = world.get_resource::<MpiConfig>().map(|c| c.0.clone()) else {
        return;
    };
    if let Err(e) = setup(world, &cfg) {
        world.resource_mut::<SimErrors>().0.push(e);
    }
}

fn setup(world: &mut World, cfg: &MpiSpec) -> Result<(), String> {
    let topo = world
        .get_resource::<Topology>()
        .ok_or("workload.Mpi: the platform did not build")?;
    let Layout::Cluster(layout) = &topo.layout else {
        return Err("workload.Mpi: MPI ranks need a Cluster platform (nodes with GPUs)".into());
    };
    let shape = (layout.nodes, layout.gpus);
    let mut speeds = HashMap::new();
    let mut model = None;
    for g in world.query::<&Gpu>().iter(world) {
        speeds.insert((g.node, g.index), g.speed);
        model.get_or_insert_with(|| g.model.clone());
    }
    let sw = world.resource::<Switches>();
    let switches = protocol::Switches {
        gpudirect: sw.is_on("gpudirect"),
        eager: sw.is_on("eager_protocol"),
        copy_contention: sw.is_on("pcie_copy_contention"),
        handshake: sw.is_on("rendezvous_handshake"),
    };
    let mut job = setup::build(cfg, shape, &speeds, switches)?;
    // A rank's name is its timeline row, its entity's name and its row in NCCL's flows.
    let names: Vec<String> = job
        .ranks
        .iter()
        .enumerate()
        .map(|(r, rank)| message::rank_row(rank.node, r))
        .collect();
    spawn_rank_entities(world, &mut job, &names);
    let nccl_comm = if job.ranks.iter().any(|r| r.calls_nccl()) {
        let gpus = job.ranks.iter().map(|r| r.gpu).collect();
        let mut topo = world.resource_mut::<Topology>();
        let comm = nccl::Comm::new(gpus, &cfg.nccl, &mut topo, &model.unwrap_or_default())
            .map_err(|e| format!("workload.Mpi.nccl: {e}"))?;
        let mut colls = world.resource_mut::<Collectives>();
        Some(colls.register(comm, names, NcclDone))
    } else {
        None
    };
    world.insert_resource(Mpi { job, nccl_comm });
    // Run the ranks at time 0.
    world
        .resource_mut::<Calendar>()
        .schedule(SimTime::ZERO, RankWake(u32::MAX));
    Ok(())
}

/// Each rank's entity, named `names[r]`, and its timeline row when the recorder is on.
fn spawn_rank_entities(world: &mut World, job: &mut Job, names: &[String]) {
    let on = world.resource::<Recorder>().is_on();
    for (r, rank) in job.ranks.iter_mut().enumerate() {
        let name = names[r].clone();
        if on {
            let row = world
                .resource_mut::<Recorder>()
                .resource(ResourceKind::Rank, &name);
            rank.row = Some(row);
        }
        let crate::platform::Endpoint::Gpu { node, gpu } = rank.gpu else {
            unreachable!("ranks sit on GPUs")
        };
        world.spawn((
            Name::new(name),
            Rank {
                index: r as u32,
                node,
                gpu,
            },
        ));
    }
}

/// Where the job's effects go: the calendar and the network, the recorder, the NCCL plugin.
#[derive(bevy_ecs::system::SystemParam)]
struct Sinks<'w, 's> {
    reach: Reach<'w, 's>,
    rec: ResMut<'w, Recorder>,
    colls: ResMut<'w, Collectives>,
}

/// Message stages that ended: flows first, then timers (copies, pinning, control messages).
fn advance_messages(
    mut flows: ResMut<Inbox<FlowEnd>>,
    mut timers: ResMut<Inbox<MsgTimer>>,
    mut mpi: ResMut<Mpi>,
    mut sinks: Sinks,
) {
    let now = sinks.reach.now();
    for FlowEnd { msg, stage } in flows.drain() {
        mpi.job.stage_done(msg, stage, now);
    }
    for MsgTimer { msg, stage } in timers.drain() {
        mpi.job.stage_done(msg, stage, now);
    }
    mpi.apply_effects(&mut sinks);
}

fn wake_computed_ranks(
    mut inbox: ResMut<Inbox<RankWake>>,
    mut mpi: ResMut<Mpi>,
    clock: Res<Clock>,
) {
    for RankWake(r) in inbox.drain() {
        // The start signal: every rank is already ready.
        if r != u32::MAX {
            mpi.job.wake(r, clock.now);
        }
    }
}

fn finish_nccl_calls(mut inbox: ResMut<Inbox<NcclDone>>, mut mpi: ResMut<Mpi>, mut sinks: Sinks) {
    let now = sinks.reach.now();
    for NcclDone(k) in inbox.drain() {
        let name = mpi
            .nccl_comm
            .and_then(|c| sinks.colls.name(c, k))
            .unwrap_or_else(|| "nccl".to_string());
        mpi.job.end_nccl(k, &name, now);
    }
    mpi.apply_effects(&mut sinks);
}

fn run_ready_ranks(mut mpi: ResMut<Mpi>, mut sinks: Sinks) {
    mpi.job.run_ready(sinks.reach.now());
    mpi.apply_effects(&mut sinks);
}

impl Mpi {
    /// Carries out what the job asked, in the order it asked.
    fn apply_effects(&mut self, sinks: &mut Sinks) {
        let Sinks { reach, rec, colls } = sinks;
        let now = reach.now();
        for fx in self.job.take_effects() {
            match fx {
                Effect::Timer { at, msg, stage } => reach.cal.schedule(at, MsgTimer { msg, stage }),
                Effect::Wake { at, rank } => reach.cal.schedule(at, RankWake(rank)),
                Effect::Control {
                    msg,
                    serial,
                    stage,
                    from,
                    to,
                    bytes,
                } => match reach.control_due(from, to, bytes) {
                    Ok(at) => reach.cal.schedule(at, MsgTimer { msg, stage }),
                    Err(e) => reach.fail(format!("mpi: message {serial}: {e}")),
                },
                Effect::Flow {
                    msg,
                    serial,
                    stage,
                    from,
                    to,
                    bytes,
                    src_row,
                    dst_row,
                } => {
                    let spec = FlowSpec {
                        id: format!("m{serial}.{}", stage.name()),
                        src_row,
                        dst_row,
                        bytes,
                        start: Start::At(now),
                        cap: None,
                        zero_latency: false,
                    };
                    if let Err(e) = reach.flow(from, to, spec, FlowEnd { msg, stage }) {
                        reach.fail(format!("mpi: message {serial}: {e}"));
                    }
                }
                Effect::Interval {
                    row,
                    state,
                    label,
                    start,
                    end,
                } => record_interval(rec, row, state, label, (start, end)),
                Effect::Nccl { k, call } => match self.nccl_comm {
                    None => reach.fail("mpi: NCCL call without a communicator".into()),
                    Some(c) => {
                        if let Err(e) = colls.arrive(c, k, &[call], reach) {
                            reach.fail(format!("workload.Mpi: {e}"));
                        }
                    }
                },
            }
        }
    }
}

/// A period of a rank's timeline row, handed to the recorder.
fn record_interval(
    rec: &mut Recorder,
    row: ResId,
    state: &str,
    label: Option<String>,
    (start, end): (SimTime, SimTime),
) {
    let label = label.map(|l| rec.name_id(&l));
    let state = rec.name_id(state);
    rec.interval(Interval {
        resource: row,
        state,
        label,
        start,
        end,
    });
}

/// Publishes the totals once the run is over (the output crate reads [`MpiReport`]).
pub fn publish_report(world: &mut World) {
    if world.get_resource::<MpiConfig>().is_none() {
        return;
    }
    let job = &world.resource::<Mpi>().job;
    let report = MpiReport {
        ranks: job.totals(),
        messages: job.msgs.messages,
        bytes: job.msgs.bytes,
    };
    world.insert_resource(report);
}

/// Ranks that have not finished when no event is left: what each waits for.
fn stuck_ranks(world: &mut World) -> Vec<String> {
    let Some(mpi) = world.get_resource::<Mpi>() else {
        return Vec::new();
    };
    let colls = world.get_resource::<Collectives>();
    let arrived = |k: u32| match (mpi.nccl_comm, colls) {
        (Some(c), Some(colls)) => colls.arrived(c, k),
        _ => 0,
    };
    mpi.job.stuck(arrived)
}
