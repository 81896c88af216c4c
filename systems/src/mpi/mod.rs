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
use std::sync::Arc;

use hetsim_components::{FlowName, Gpu};
use hetsim_engine::record::{Interval, Recorder, ResId, ResourceKind};
use hetsim_engine::{
    Calendar, Clock, Inbox, SimAppExt, SimEvent, SimSet, SimStartup, SimStep, StartupSet, Switches,
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

/// The MPI jobs to run (inserted by whoever assembles the app): the scenario's `Mpi`
/// workload, or each MPI job of its `jobs`.
#[derive(Resource, Debug, Clone)]
pub struct MpiConfig(pub Vec<MpiJob>);

/// One MPI job: its ranks, communicators, tags and matching are its own.
pub type MpiJob = crate::jobs::instance::Instance<MpiSpec>;

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
    /// Every rank, job after job.
    pub ranks: Vec<RankTotals>,
    /// Messages and bytes per path, in [`Path::ALL`] order.
    pub messages: [u64; 4],
    pub bytes: [f64; 4],
    /// Each job's share of the above, when the scenario has `jobs`.
    pub jobs: Vec<MpiJobReport>,
}

/// One job's totals.
#[derive(Debug, Clone, Default)]
pub struct MpiJobReport {
    pub name: String,
    pub start_s: f64,
    /// Its ranks, numbered within the job.
    pub ranks: Vec<RankTotals>,
    pub messages: [u64; 4],
    pub bytes: [f64; 4],
}

/// The MPI layer's state: its jobs.
#[derive(Resource, Default)]
pub struct Mpi {
    jobs: Vec<JobRt>,
}

/// One running job, its NCCL communicator in the NCCL plugin, and its flows' prefix.
#[derive(Default)]
struct JobRt {
    job: Job,
    nccl_comm: Option<u32>,
    prefix: String,
    /// `{prefix}m`, before the serial number in its messages' flow ids (`m42.data`).
    msg_prefix: Arc<str>,
    name: Option<String>,
    start: SimTime,
}

/// A protocol step of job `job` due after a delay (copies, pinning, control messages).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
struct MsgTimer {
    job: u16,
    msg: u32,
    stage: Stage,
}

/// The flow of a stage of a message of job `job` has delivered its bytes.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
struct FlowEnd {
    job: u16,
    msg: u32,
    stage: Stage,
}

fn pack_stage(job: u16, msg: u32, stage: Stage) -> u64 {
    ((job as u64) << 48) | ((msg as u64) << 8) | stage as u64
}

fn unpack_stage(arg: u64) -> (u16, u32, Stage) {
    (
        (arg >> 48) as u16,
        (arg >> 8) as u32,
        Stage::from_u8((arg & 0xff) as u8),
    )
}

impl SimEvent for MsgTimer {
    const NAME: &'static str = "mpi.msg_timer";
    fn pack(&self) -> (Entity, u64) {
        (
            Entity::PLACEHOLDER,
            pack_stage(self.job, self.msg, self.stage),
        )
    }
    fn unpack(_: Entity, arg: u64) -> Self {
        let (job, msg, stage) = unpack_stage(arg);
        MsgTimer { job, msg, stage }
    }
}

impl SimEvent for FlowEnd {
    const NAME: &'static str = "mpi.flow_end";
    fn pack(&self) -> (Entity, u64) {
        (
            Entity::PLACEHOLDER,
            pack_stage(self.job, self.msg, self.stage),
        )
    }
    fn unpack(_: Entity, arg: u64) -> Self {
        let (job, msg, stage) = unpack_stage(arg);
        FlowEnd { job, msg, stage }
    }
}

/// Rank `rank` of job `job` is done being busy (`u32::MAX`: the job's start signal).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
struct RankWake {
    job: u16,
    rank: u32,
}

impl SimEvent for RankWake {
    const NAME: &'static str = "mpi.rank_wake";
    fn pack(&self) -> (Entity, u64) {
        (
            Entity::PLACEHOLDER,
            ((self.job as u64) << 32) | self.rank as u64,
        )
    }
    fn unpack(_: Entity, arg: u64) -> Self {
        RankWake {
            job: (arg >> 32) as u16,
            rank: arg as u32,
        }
    }
}

/// NCCL call `k` of job `job` is over (its flows and its pipeline fill).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
struct NcclDone {
    job: u16,
    k: u32,
}

impl SimEvent for NcclDone {
    const NAME: &'static str = "mpi.nccl_done";
    fn pack(&self) -> (Entity, u64) {
        (
            Entity::PLACEHOLDER,
            ((self.job as u64) << 32) | self.k as u64,
        )
    }
    fn unpack(_: Entity, arg: u64) -> Self {
        NcclDone {
            job: (arg >> 32) as u16,
            k: arg as u32,
        }
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
    let jobs = crate::jobs::instance::set_up_each(world, &cfg, "MPI", setup);
    world.insert_resource(Mpi { jobs });
}

fn setup(world: &mut World, cfg: &MpiJob, j: u16) -> Result<JobRt, String> {
    let topo = world
        .get_resource::<Topology>()
        .ok_or("workload.Mpi: the platform did not build")?;
    let Layout::Cluster(layout) = &topo.layout else {
        return Err("workload.Mpi: MPI ranks need a Cluster platform (nodes with GPUs)".into());
    };
    let shape = (layout.nodes, layout.gpus);
    let (speeds, model) = gpu_speeds(world);
    let switches = protocol_switches(world.resource::<Switches>());
    let prefix = cfg.prefix();
    let on = setup::On {
        shape,
        nodes: cfg.nodes.as_deref(),
        prefix: &prefix,
    };
    let mut job = setup::build(&cfg.spec, on, &speeds, switches)?;
    // A rank's name is its timeline row, its entity's name and its row in NCCL's flows.
    let names: Vec<String> = job
        .ranks
        .iter()
        .enumerate()
        .map(|(r, rank)| on.rank_row(rank.node, r))
        .collect();
    spawn_rank_entities(world, &mut job, &names);
    let nccl_comm = if job.ranks.iter().any(|r| r.calls_nccl()) {
        let model = model.unwrap_or_default();
        Some(register_communicator(
            world,
            (&job, j),
            &cfg.spec,
            &model,
            names,
        )?)
    } else {
        None
    };
    // The ranks run from the job's start.
    if cfg.start > SimTime::ZERO {
        job.hold();
    }
    world.resource_mut::<Calendar>().schedule(
        cfg.start,
        RankWake {
            job: j,
            rank: u32::MAX,
        },
    );
    Ok(JobRt {
        job,
        nccl_comm,
        msg_prefix: format!("{prefix}m").into(),
        prefix,
        name: cfg.name.clone(),
        start: cfg.start,
    })
}

/// Each GPU's flop/s by (node, gpu), and the GPUs' model.
fn gpu_speeds(world: &mut World) -> (HashMap<(u32, u32), f64>, Option<String>) {
    let mut speeds = HashMap::new();
    let mut model = None;
    for g in world.query::<&Gpu>().iter(world) {
        speeds.insert((g.node, g.index), g.speed);
        model.get_or_insert_with(|| g.model.clone());
    }
    (speeds, model)
}

/// The protocol's switches as the scenario set them.
fn protocol_switches(sw: &Switches) -> protocol::Switches {
    protocol::Switches {
        gpudirect: sw.is_on("gpudirect"),
        eager: sw.is_on("eager_protocol"),
        copy_contention: sw.is_on("pcie_copy_contention"),
        handshake: sw.is_on("rendezvous_handshake"),
    }
}

/// The NCCL communicator of job `j`'s ranks (rows `names`) for its programs' NCCL calls.
fn register_communicator(
    world: &mut World,
    (job, j): (&Job, u16),
    spec: &MpiSpec,
    model: &str,
    names: Vec<String>,
) -> Result<u32, String> {
    let gpus = job.ranks.iter().map(|r| r.gpu).collect();
    let mut topo = world.resource_mut::<Topology>();
    let comm = nccl::Comm::new(gpus, &spec.nccl, &mut topo, model)
        .map_err(|e| format!("workload.Mpi.nccl: {e}"))?;
    let mut colls = world.resource_mut::<Collectives>();
    Ok(colls.register(comm, names, move |k| NcclDone { job: j, k }))
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

/// Where the jobs' effects go: the calendar and the network, the recorder, the NCCL plugin.
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
    for FlowEnd { job, msg, stage } in flows.drain() {
        mpi.jobs[job as usize].job.stage_done(msg, stage, now);
    }
    for MsgTimer { job, msg, stage } in timers.drain() {
        mpi.jobs[job as usize].job.stage_done(msg, stage, now);
    }
    mpi.apply_effects(&mut sinks);
}

fn wake_computed_ranks(
    mut inbox: ResMut<Inbox<RankWake>>,
    mut mpi: ResMut<Mpi>,
    clock: Res<Clock>,
) {
    for RankWake { job, rank } in inbox.drain() {
        let job = &mut mpi.jobs[job as usize].job;
        match rank {
            // The start signal of a job that started at once: its ranks are ready already.
            u32::MAX if clock.now == SimTime::ZERO => {}
            u32::MAX => job.start_all(),
            r => job.wake(r, clock.now),
        }
    }
}

fn finish_nccl_calls(mut inbox: ResMut<Inbox<NcclDone>>, mut mpi: ResMut<Mpi>, mut sinks: Sinks) {
    let now = sinks.reach.now();
    for NcclDone { job, k } in inbox.drain() {
        let rt = &mut mpi.jobs[job as usize];
        let name = rt
            .nccl_comm
            .and_then(|c| sinks.colls.name(c, k))
            .unwrap_or_else(|| "nccl".to_string());
        rt.job.end_nccl(k, &name, now);
    }
    mpi.apply_effects(&mut sinks);
}

fn run_ready_ranks(mut mpi: ResMut<Mpi>, mut sinks: Sinks) {
    let now = sinks.reach.now();
    for rt in &mut mpi.jobs {
        rt.job.run_ready(now);
    }
    mpi.apply_effects(&mut sinks);
}

impl Mpi {
    /// Carries out what each job asked, job after job, in the order it asked.
    fn apply_effects(&mut self, sinks: &mut Sinks) {
        for (j, rt) in self.jobs.iter_mut().enumerate() {
            rt.apply_effects(j as u16, sinks);
        }
    }
}

/// Starts the flow of a message stage (an `Effect::Flow`) of job `j`, its id numbered after
/// `msg_prefix` (`{prefix}m`).
fn start_flow((prefix, msg_prefix): (&str, &Arc<str>), j: u16, fx: Effect, reach: &mut Reach) {
    let Effect::Flow {
        msg,
        serial,
        stage,
        from,
        to,
        bytes,
        src_row,
        dst_row,
    } = fx
    else {
        return;
    };
    let spec = FlowSpec {
        id: FlowName::Numbered {
            prefix: msg_prefix.clone(),
            serial,
            suffix: stage.name(),
        },
        src_row,
        dst_row,
        bytes,
        start: Start::At(reach.now()),
        cap: None,
        zero_latency: false,
    };
    let done = FlowEnd { job: j, msg, stage };
    if let Err(e) = reach.flow(from, to, spec, done) {
        reach.fail(format!("mpi: {prefix}message {serial}: {e}"));
    }
}

impl JobRt {
    /// Carries out what the job (number `j`) asked, in the order it asked.
    fn apply_effects(&mut self, j: u16, sinks: &mut Sinks) {
        let Sinks { reach, rec, colls } = sinks;
        for fx in self.job.take_effects() {
            match fx {
                Effect::Timer { at, msg, stage } => {
                    reach.cal.schedule(at, MsgTimer { job: j, msg, stage })
                }
                Effect::Wake { at, rank } => reach.cal.schedule(at, RankWake { job: j, rank }),
                Effect::Control {
                    msg,
                    serial,
                    stage,
                    from,
                    to,
                    bytes,
                } => match reach.control_due(from, to, bytes) {
                    Ok(at) => reach.cal.schedule(at, MsgTimer { job: j, msg, stage }),
                    Err(e) => reach.fail(format!("mpi: {}message {serial}: {e}", self.prefix)),
                },
                fx @ Effect::Flow { .. } => {
                    start_flow((&self.prefix, &self.msg_prefix), j, fx, reach)
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
                            let job = self.name.as_ref().map(|n| format!("job `{n}`: "));
                            reach.fail(format!("{}workload.Mpi: {e}", job.unwrap_or_default()));
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
    let mut report = MpiReport::default();
    for rt in &world.resource::<Mpi>().jobs {
        let ranks = rt.job.totals();
        report.ranks.extend(ranks.iter().cloned());
        for k in 0..4 {
            report.messages[k] += rt.job.msgs.messages[k];
            report.bytes[k] += rt.job.msgs.bytes[k];
        }
        if let Some(name) = &rt.name {
            report.jobs.push(MpiJobReport {
                name: name.clone(),
                start_s: rt.start.as_secs_f64(),
                ranks,
                messages: rt.job.msgs.messages,
                bytes: rt.job.msgs.bytes,
            });
        }
    }
    world.insert_resource(report);
}

/// Ranks that have not finished when no event is left: what each waits for.
fn stuck_ranks(world: &mut World) -> Vec<String> {
    let Some(mpi) = world.get_resource::<Mpi>() else {
        return Vec::new();
    };
    let colls = world.get_resource::<Collectives>();
    let mut out = Vec::new();
    for rt in &mpi.jobs {
        let arrived = |k: u32| match (rt.nccl_comm, colls) {
            (Some(c), Some(colls)) => colls.arrived(c, k),
            _ => 0,
        };
        let job = rt.name.as_ref().map(|n| format!("job `{n}`: "));
        let job = job.unwrap_or_default();
        out.extend(
            rt.job
                .stuck(arrived)
                .into_iter()
                .map(|s| format!("{job}{s}")),
        );
    }
    out
}
