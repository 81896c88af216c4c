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
//! two ranks never overtake); the data then takes its protocol's time. Eager messages (up to
//! `eager_limit`, switch `eager_protocol`) go at once and wait at the receiver if unmatched;
//! rendezvous sends a control message (RTS), the receiver answers (CTS) once matched, then the
//! data moves. Control messages go between the two hosts and pay latency plus size over the
//! bottleneck, without sharing bandwidth.
//!
//! Intra-node GPU-to-GPU transfers use at most `copy_queues` at once per node (TraceR's
//! node_copy_queues, 4); each MPI call may cost `call_overhead` first.
//!
//! Simplified: a send completes when its data is delivered (no local buffering), one
//! communicator, no probe/test/cancel, HostCopy copies are not limited by copy engines.

pub mod collectives;
pub mod generators;
mod nccl_calls;
pub mod program;

use bevy_app::{App, Plugin};
use bevy_ecs::prelude::*;
use std::collections::VecDeque;
use std::sync::Arc;

use hetsim_components::SimTime;
use hetsim_components::entities::Gpu;
use hetsim_components::mpi::{CopyAt, MpiSpec, Placement, ProgramSpec};
use hetsim_engine::record::{Interval, Recorder, ResId, ResourceKind};
use hetsim_engine::{
    Calendar, Clock, Inbox, SimAppExt, SimErrors, SimEvent, SimSet, SimStartup, SimStep,
    StartupSet, Switches,
};

use crate::nccl::Collectives;
use crate::network::{FlowRequest, Launch, Start};
use crate::platform::topology::Layout;
use crate::platform::{Endpoint, Topology};
use program::{ANY, Loc, Op, Program};

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

/// A message's entity: who sends what to whom, and how.
#[derive(Component, Debug, Clone)]
pub struct Message {
    pub src: u32,
    pub dst: u32,
    pub tag: i64,
    pub bytes: f64,
    pub path: Path,
    pub rendezvous: bool,
}

/// How a message's data travels.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Path {
    Nvlink,
    GpuDirect,
    HostCopy,
    Host,
}

impl Path {
    pub const ALL: [Path; 4] = [Path::Nvlink, Path::GpuDirect, Path::HostCopy, Path::Host];
    pub fn name(self) -> &'static str {
        match self {
            Path::Nvlink => "nvlink",
            Path::GpuDirect => "gpudirect",
            Path::HostCopy => "hostcopy",
            Path::Host => "host",
        }
    }
}

/// Which step of a message a flow or timer carries.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[repr(u8)]
enum Stage {
    Rts = 0,
    Cts = 1,
    Data = 2,
    /// Device-to-host copy at the sender (timer or flow).
    CopyOut = 3,
    /// Host-to-device copy at the receiver.
    CopyIn = 4,
    /// GPUDirect pinning done.
    Pinned = 5,
    /// The copy's fixed delay is paid; its flow starts (switch `pcie_copy_contention`).
    CopyOutFlow = 6,
    CopyInFlow = 7,
}

impl Stage {
    fn from_u8(v: u8) -> Stage {
        [
            Stage::Rts,
            Stage::Cts,
            Stage::Data,
            Stage::CopyOut,
            Stage::CopyIn,
            Stage::Pinned,
            Stage::CopyOutFlow,
            Stage::CopyInFlow,
        ][v as usize]
    }
}

/// The flow of a stage of a message has delivered its bytes.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
struct FlowEnd {
    msg: u32,
    stage: Stage,
}

impl SimEvent for FlowEnd {
    const NAME: &'static str = "mpi.flow_end";
    fn pack(&self) -> (Entity, u64) {
        (
            Entity::PLACEHOLDER,
            ((self.msg as u64) << 8) | self.stage as u64,
        )
    }
    fn unpack(_: Entity, arg: u64) -> Self {
        FlowEnd {
            msg: (arg >> 8) as u32,
            stage: Stage::from_u8((arg & 0xff) as u8),
        }
    }
}

/// A protocol step due after a delay (copies, pinning).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
struct MsgTimer {
    msg: u32,
    stage: Stage,
}

impl SimEvent for MsgTimer {
    const NAME: &'static str = "mpi.msg_timer";
    fn pack(&self) -> (Entity, u64) {
        (
            Entity::PLACEHOLDER,
            ((self.msg as u64) << 8) | self.stage as u64,
        )
    }
    fn unpack(_: Entity, arg: u64) -> Self {
        MsgTimer {
            msg: (arg >> 8) as u32,
            stage: Stage::from_u8((arg & 0xff) as u8),
        }
    }
}

/// A rank's computation is over.
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

/// An MPI request of a rank.
#[derive(Debug, Clone)]
struct Request {
    done: bool,
    /// For stall reports: `send to 3 tag 0 (4096 B)`.
    what: String,
    matched: bool,
}

/// A receive waiting for its message.
#[derive(Debug, Clone, Copy)]
struct Posted {
    src: i64,
    tag: i64,
    req: u32,
    loc: Loc,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum RankState {
    Ready,
    Computing,
    Blocked,
    Done,
}

/// What keeps a rank busy without waiting for a message.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Busy {
    Compute,
    Sleep,
    /// The software overhead of an MPI call (counted as communication time).
    Overhead,
}

impl Busy {
    fn state(self) -> &'static str {
        match self {
            Busy::Compute => "compute",
            Busy::Sleep => "sleep",
            Busy::Overhead => "mpi",
        }
    }
}

/// A rank's runtime state.
#[derive(Debug)]
struct RankRt {
    program: Arc<Program>,
    pc: usize,
    /// Passes through the program done so far.
    pass: u32,
    /// Expanded collective steps to run before the next program step.
    pending: VecDeque<Op>,
    coll_seq: u64,
    /// NCCL calls made so far, and the one the rank is blocked in.
    nccl_seq: u32,
    in_nccl: Option<u32>,
    state: RankState,
    /// What the current busy period is.
    busy: Busy,
    /// The MPI call overhead of the next operation is paid.
    overhead_paid: bool,
    reqs: Vec<Request>,
    outstanding: Vec<u32>,
    waiting: Vec<u32>,
    since: SimTime,
    posted: Vec<Posted>,
    /// Messages sent to this rank, not yet matched, in send order.
    unexpected: VecDeque<u32>,
    comm_s: f64,
    compute_s: f64,
    end: SimTime,
    speed: f64,
    gpu: Endpoint,
    host: Endpoint,
    node: u32,
    row: Option<ResId>,
    /// The step the rank is at (`usize::MAX`: its end), for stall reports.
    at_step: usize,
}

/// A message's runtime state.
#[derive(Debug, Clone)]
struct MsgRt {
    src: u32,
    dst: u32,
    tag: i64,
    bytes: f64,
    path: Path,
    rendezvous: bool,
    src_loc: Loc,
    dst_loc: Loc,
    send_req: u32,
    recv_req: Option<u32>,
    data_arrived: bool,
    rts_arrived: bool,
}

/// Totals of a run, for the summary and `ranks.csv`.
#[derive(Debug, Clone, Default)]
pub struct RankTotals {
    pub rank: u32,
    pub node: u32,
    pub gpu: u32,
    pub comm_s: f64,
    pub compute_s: f64,
    pub end_s: f64,
}

/// What the MPI layer reports after a run.
#[derive(Resource, Debug, Clone, Default)]
pub struct MpiReport {
    pub ranks: Vec<RankTotals>,
    /// Messages and bytes per path, in [`Path::ALL`] order.
    pub messages: [u64; 4],
    pub bytes: [f64; 4],
}

/// The MPI layer's state.
#[derive(Resource, Default)]
pub struct Mpi {
    ranks: Vec<RankRt>,
    msgs: Vec<MsgRt>,
    ready: Vec<u32>,
    protocol: hetsim_components::mpi::ProtocolSpec,
    policy: collectives::Policy,
    report: MpiReport,
    /// Per node: NVLink transfers in flight, and messages waiting for a copy queue.
    nv_active: Vec<u32>,
    nv_waiting: Vec<VecDeque<u32>>,
    /// The ranks' NCCL communicator in the NCCL plugin, if their programs call NCCL.
    nccl_comm: Option<u32>,
}

pub struct MpiPlugin;

impl Plugin for MpiPlugin {
    fn build(&self, app: &mut App) {
        app.add_sim_event::<MsgTimer>()
            .add_sim_event::<FlowEnd>()
            .add_sim_event::<RankWake>()
            .add_sim_event::<nccl_calls::NcclDone>()
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
                "pcie_copy_contention",
                false,
                "HostCopy copies are flows on the PCIe links after their fixed delay; off: fixed delay + bytes x per-byte cost",
            )
            .describe_model(
                "mpi",
                "ranks on GPUs run traced programs; p2p matching with an unexpected queue, eager and rendezvous (RTS/CTS control messages: latency + size, unshared), NVLink, GPUDirect and HostCopy paths; collectives expanded into p2p steps (dissemination barrier, binomial bcast/reduce, recursive-doubling or ring allreduce, ring allgather/reduce_scatter, pairwise alltoall); nccl_* actions run NCCL collectives over the ranks' GPUs. Simplified: sends complete on delivery, one communicator, HostCopy copies not limited by copy engines",
            )
            .init_resource::<Mpi>()
            .add_systems(SimStartup, spawn_ranks.in_set(StartupSet::Workload))
            .add_systems(
                SimStep,
                (
                    advance_messages_on_flows,
                    advance_messages_on_timers,
                    wake_computed_ranks,
                    nccl_calls::finish_nccl_calls,
                    run_ready_ranks,
                )
                    .chain()
                    .in_set(SimSet::Protocol)
                    .run_if(resource_exists::<MpiConfig>),
            )
            .add_systems(hetsim_engine::SimFinish, publish_report)
            .add_stall_check(stuck_ranks);
    }
}

/// Places the ranks, reads their programs, spawns their entities and readies them.
fn spawn_ranks(world: &mut World) {
    let Some(cfg) = world.get_resource::<MpiConfig>().map(|c| c.0.clone()) else {
        return;
    };
    match setup(world, &cfg) {
        Ok(()) => {}
        Err(e) => world.resource_mut::<SimErrors>().0.push(e),
    }
}

fn setup(world: &mut World, cfg: &MpiSpec) -> Result<(), String> {
    if cfg.ranks == 0 {
        return Err("workload.Mpi.ranks: expected at least one rank".into());
    }
    let topo = world
        .get_resource::<Topology>()
        .ok_or("workload.Mpi: the platform did not build")?;
    let Layout::Cluster(layout) = &topo.layout else {
        return Err("workload.Mpi: MPI ranks need a Cluster platform (nodes with GPUs)".into());
    };
    let placed = place(cfg, layout.nodes, layout.gpus)?;
    let nodes = layout.nodes as usize;
    let programs = match &cfg.program {
        ProgramSpec::TraceText(texts) => program::parse_traces(texts, cfg.ranks)
            .map_err(|e| format!("workload.Mpi.program: {e}"))?,
        ProgramSpec::Generator(g) => generators::generate(g, cfg.ranks),
        ProgramSpec::Trace(_) => {
            return Err("workload.Mpi.program: trace files were not read by the loader".into());
        }
    };
    let mut speeds = std::collections::HashMap::new();
    let mut q = world.query::<&Gpu>();
    for g in q.iter(world) {
        speeds.insert((g.node, g.index), g.speed);
    }
    let on = world.resource::<Recorder>().is_on();
    let mut ranks = Vec::with_capacity(placed.len());
    for (r, (&(node, gpu), program)) in placed.iter().zip(programs).enumerate() {
        let name = format!("node[{node}].rank[{r}]");
        let row = on.then(|| {
            world
                .resource_mut::<Recorder>()
                .resource(ResourceKind::Rank, &name)
        });
        world.spawn((
            Name::new(name),
            Rank {
                index: r as u32,
                node,
                gpu,
            },
        ));
        ranks.push(RankRt {
            program: Arc::new(program),
            pc: 0,
            pass: 0,
            pending: VecDeque::new(),
            coll_seq: 0,
            nccl_seq: 0,
            in_nccl: None,
            state: RankState::Ready,
            busy: Busy::Compute,
            overhead_paid: false,
            reqs: Vec::new(),
            outstanding: Vec::new(),
            waiting: Vec::new(),
            since: SimTime::ZERO,
            posted: Vec::new(),
            unexpected: VecDeque::new(),
            comm_s: 0.0,
            compute_s: 0.0,
            end: SimTime::ZERO,
            speed: speeds.get(&(node, gpu)).copied().unwrap_or(1e12),
            gpu: Endpoint::Gpu { node, gpu },
            host: Endpoint::Host { node },
            node,
            row,
            at_step: 0,
        });
    }
    let uses_nccl = ranks.iter().any(|r| {
        r.program
            .steps
            .iter()
            .any(|s| matches!(s.op, Op::Nccl { .. }))
    });
    let nccl_comm = if uses_nccl {
        let gpus: Vec<Endpoint> = ranks.iter().map(|r| r.gpu).collect();
        let model = world
            .query::<&Gpu>()
            .iter(world)
            .next()
            .map(|g| g.model.clone())
            .unwrap_or_default();
        let mut topo = world.resource_mut::<Topology>();
        let comm = nccl_calls::communicator(gpus, &cfg.nccl, &mut topo, &model)?;
        let rows = ranks
            .iter()
            .enumerate()
            .map(|(r, rank)| format!("node[{}].rank[{r}]", rank.node))
            .collect();
        Some(
            world
                .resource_mut::<Collectives>()
                .register(comm, rows, nccl_calls::NcclDone),
        )
    } else {
        None
    };
    let policy = policy_of(&cfg.collectives)?;
    if cfg.protocol.copy_queues == 0 {
        return Err("workload.Mpi.protocol.copy_queues: expected at least 1".into());
    }
    let mut mpi = world.resource_mut::<Mpi>();
    mpi.policy = policy;
    mpi.nv_active = vec![0; nodes];
    mpi.nv_waiting = vec![VecDeque::new(); nodes];
    mpi.ready = (0..ranks.len() as u32).collect();
    mpi.ranks = ranks;
    mpi.protocol = cfg.protocol.clone();
    mpi.nccl_comm = nccl_comm;
    // Run the ranks at time 0.
    world
        .resource_mut::<Calendar>()
        .schedule(SimTime::ZERO, RankWake(u32::MAX));
    Ok(())
}

/// The collective policy of the scenario; unknown names are errors with their field.
fn policy_of(spec: &hetsim_components::mpi::CollectiveSpec) -> Result<collectives::Policy, String> {
    let force = spec
        .force
        .iter()
        .map(|(coll, algo)| {
            collectives::Algo::parse(coll, algo)
                .map(|a| (coll.clone(), a))
                .map_err(|e| format!("workload.Mpi.collectives.force.{coll}: {e}"))
        })
        .collect::<Result<_, _>>()?;
    Ok(collectives::Policy {
        select: spec.select,
        force,
        reduce_cost: spec.reduce_cost.0,
    })
}

/// (node, gpu) of each rank.
fn place(cfg: &MpiSpec, nodes: u32, gpus: u32) -> Result<Vec<(u32, u32)>, String> {
    let per_node = cfg.gpus_per_node.unwrap_or(gpus);
    if per_node == 0 || per_node > gpus {
        return Err(format!(
            "workload.Mpi.gpus_per_node: expected 1 to {gpus} (the GPUs of a node), got {per_node}"
        ));
    }
    let n = cfg.ranks;
    let used_nodes = n.div_ceil(per_node);
    if used_nodes > nodes && !matches!(cfg.placement, Placement::Explicit(_)) {
        return Err(format!(
            "workload.Mpi.ranks: {n} ranks at {per_node} per node need {used_nodes} nodes; the platform has {nodes}"
        ));
    }
    match &cfg.placement {
        Placement::Linear => Ok((0..n).map(|r| (r / per_node, r % per_node)).collect()),
        Placement::RoundRobin => Ok((0..n).map(|r| (r % used_nodes, r / used_nodes)).collect()),
        Placement::Explicit(names) => {
            if names.len() != n as usize {
                return Err(format!(
                    "workload.Mpi.placement: {} GPUs listed for {n} ranks",
                    names.len()
                ));
            }
            let mut seen = std::collections::HashSet::new();
            names
                .iter()
                .enumerate()
                .map(|(i, name)| {
                    let bad = || {
                        format!(
                            "workload.Mpi.placement[{i}]: expected node[N].gpu[G] on the platform, got `{name}`"
                        )
                    };
                    let (node, gpu) = parse_gpu(name).ok_or_else(bad)?;
                    if node >= nodes || gpu >= gpus {
                        return Err(bad());
                    }
                    if !seen.insert((node, gpu)) {
                        return Err(format!(
                            "workload.Mpi.placement[{i}]: `{name}` already holds a rank (a rank owns its GPU)"
                        ));
                    }
                    Ok((node, gpu))
                })
                .collect()
        }
    }
}

fn parse_gpu(name: &str) -> Option<(u32, u32)> {
    let rest = name.strip_prefix("node[")?;
    let (node, rest) = rest.split_once("].gpu[")?;
    let gpu = rest.strip_suffix(']')?;
    Some((node.parse().ok()?, gpu.parse().ok()?))
}

/// Everything a system needs to move messages.
#[derive(bevy_ecs::system::SystemParam)]
struct Net<'w, 's> {
    cal: ResMut<'w, Calendar>,
    clock: Res<'w, Clock>,
    topo: ResMut<'w, Topology>,
    switches: Res<'w, Switches>,
    rec: ResMut<'w, Recorder>,
    errors: ResMut<'w, SimErrors>,
    colls: ResMut<'w, Collectives>,
    launch: Launch<'w, 's>,
}

fn advance_messages_on_flows(
    mut inbox: ResMut<Inbox<FlowEnd>>,
    mut mpi: ResMut<Mpi>,
    mut net: Net,
) {
    for FlowEnd { msg, stage } in inbox.drain() {
        mpi.on_stage_done(msg, stage, &mut net);
    }
}

fn advance_messages_on_timers(
    mut inbox: ResMut<Inbox<MsgTimer>>,
    mut mpi: ResMut<Mpi>,
    mut net: Net,
) {
    for t in inbox.drain() {
        mpi.on_stage_done(t.msg, t.stage, &mut net);
    }
}

fn wake_computed_ranks(mut inbox: ResMut<Inbox<RankWake>>, mut mpi: ResMut<Mpi>, net: Net) {
    let now = net.clock.now;
    for RankWake(r) in inbox.drain() {
        if r == u32::MAX {
            continue; // the start signal: every rank is already ready
        }
        let rank = &mut mpi.ranks[r as usize];
        let busy = now.saturating_sub(rank.since).as_secs_f64();
        match rank.busy {
            Busy::Compute => rank.compute_s += busy,
            Busy::Overhead => rank.comm_s += busy,
            Busy::Sleep => {}
        }
        rank.state = RankState::Ready;
        mpi.ready.push(r);
    }
}

fn run_ready_ranks(mut mpi: ResMut<Mpi>, mut net: Net) {
    // Ranks readied while running (a send completing at once) run in the same pass.
    while !mpi.ready.is_empty() {
        let mut ready = std::mem::take(&mut mpi.ready);
        ready.sort_unstable();
        ready.dedup();
        for r in ready {
            mpi.run_rank(r, &mut net);
        }
    }
}

impl Mpi {
    /// Runs rank `r` until it blocks, computes or ends.
    fn run_rank(&mut self, r: u32, net: &mut Net) {
        let now = net.clock.now;
        let p = self.ranks.len() as u32;
        loop {
            let rank = &mut self.ranks[r as usize];
            if rank.state != RankState::Ready {
                return;
            }
            let op = if let Some(op) = rank.pending.pop_front() {
                op
            } else if rank.pc < rank.program.steps.len() {
                let op = rank.program.steps[rank.pc].op;
                rank.at_step = rank.pc;
                rank.pc += 1;
                op
            } else if rank.pass + 1 < rank.program.repeat {
                rank.pass += 1;
                rank.pc = 0;
                continue;
            } else {
                // MPI_Finalize: wait for what is still outstanding, then end.
                if !rank.outstanding.is_empty() {
                    let all = std::mem::take(&mut rank.outstanding);
                    rank.at_step = usize::MAX;
                    if self.block_on(r, all, now) {
                        return;
                    }
                    continue;
                }
                rank.state = RankState::Done;
                rank.end = now;
                return;
            };
            // Each MPI call first costs the protocol's call overhead (collectives pay it per
            // point-to-point step they expand into).
            let is_call = !matches!(
                op,
                Op::Compute { .. } | Op::ComputeFor { .. } | Op::Sleep { .. } | Op::Coll(_)
            );
            let overhead = self.protocol.call_overhead.0;
            if is_call && overhead > SimTime::ZERO {
                let rank = &mut self.ranks[r as usize];
                if !rank.overhead_paid {
                    rank.overhead_paid = true;
                    rank.pending.push_front(op);
                    self.busy(r, overhead.as_secs_f64(), Busy::Overhead, now, net);
                    return;
                }
                rank.overhead_paid = false;
            }
            match op {
                Op::Compute { flops } => {
                    let secs = flops / self.ranks[r as usize].speed;
                    self.busy(r, secs, Busy::Compute, now, net);
                    return;
                }
                Op::ComputeFor { secs } => {
                    self.busy(r, secs, Busy::Compute, now, net);
                    return;
                }
                Op::Sleep { secs } => {
                    self.busy(r, secs, Busy::Sleep, now, net);
                    return;
                }
                Op::Isend {
                    dst,
                    tag,
                    bytes,
                    loc,
                } => {
                    let req = self.isend(r, dst, tag, bytes, loc, net);
                    self.ranks[r as usize].outstanding.push(req);
                }
                Op::Irecv {
                    src,
                    tag,
                    bytes,
                    loc,
                } => {
                    let req = self.irecv(r, src, tag, bytes, loc, net);
                    self.ranks[r as usize].outstanding.push(req);
                }
                Op::Send {
                    dst,
                    tag,
                    bytes,
                    loc,
                } => {
                    let req = self.isend(r, dst, tag, bytes, loc, net);
                    if self.block_on(r, vec![req], now) {
                        return;
                    }
                }
                Op::Recv {
                    src,
                    tag,
                    bytes,
                    loc,
                } => {
                    let req = self.irecv(r, src, tag, bytes, loc, net);
                    if self.block_on(r, vec![req], now) {
                        return;
                    }
                }
                Op::Sendrecv {
                    dst,
                    sbytes,
                    src,
                    rbytes,
                    loc,
                } => {
                    let a = self.isend(r, dst, 0, sbytes, loc, net);
                    let b = self.irecv(r, src, 0, rbytes, loc, net);
                    if self.block_on(r, vec![a, b], now) {
                        return;
                    }
                }
                Op::Wait => {
                    let last = self.ranks[r as usize].outstanding.pop();
                    if let Some(req) = last
                        && self.block_on(r, vec![req], now)
                    {
                        return;
                    }
                }
                Op::Waitall => {
                    let all = std::mem::take(&mut self.ranks[r as usize].outstanding);
                    if self.block_on(r, all, now) {
                        return;
                    }
                }
                Op::Nccl { op, bytes, root } => {
                    self.nccl_call(r, nccl_calls::call_of(op, bytes, root), net);
                    return;
                }
                Op::Coll(c) => {
                    let rank = &mut self.ranks[r as usize];
                    let seq = rank.coll_seq;
                    rank.coll_seq += 1;
                    let ops = collectives::expand(c, r, p, seq, &self.policy);
                    for op in ops.into_iter().rev() {
                        rank.pending.push_front(op);
                    }
                }
            }
        }
    }

    /// Keeps rank `r` busy for `secs`.
    fn busy(&mut self, r: u32, secs: f64, busy: Busy, now: SimTime, net: &mut Net) {
        let rank = &mut self.ranks[r as usize];
        rank.state = RankState::Computing;
        rank.busy = busy;
        rank.since = now;
        let end = now.saturating_add(SimTime::from_secs_saturating(secs));
        if let Some(row) = rank.row {
            let state = net.rec.name_id(busy.state());
            net.rec.interval(Interval {
                resource: row,
                state,
                label: None,
                start: now,
                end,
            });
        }
        net.cal.schedule(end, RankWake(r));
    }

    /// Blocks rank `r` until `reqs` are done; false if they already are.
    fn block_on(&mut self, r: u32, reqs: Vec<u32>, now: SimTime) -> bool {
        let rank = &mut self.ranks[r as usize];
        let pending: Vec<u32> = reqs
            .into_iter()
            .filter(|&q| !rank.reqs[q as usize].done)
            .collect();
        if pending.is_empty() {
            return false;
        }
        rank.waiting = pending;
        rank.state = RankState::Blocked;
        rank.since = now;
        true
    }

    fn new_request(&mut self, r: u32, what: String) -> u32 {
        let rank = &mut self.ranks[r as usize];
        rank.reqs.push(Request {
            done: false,
            what,
            matched: false,
        });
        rank.reqs.len() as u32 - 1
    }

    /// Marks a request done; wakes its rank when it was the last one it waited for.
    fn complete(&mut self, r: u32, req: u32, net: &mut Net) {
        let now = net.clock.now;
        let rank = &mut self.ranks[r as usize];
        rank.reqs[req as usize].done = true;
        if rank.state == RankState::Blocked {
            rank.waiting.retain(|&q| q != req);
            if rank.waiting.is_empty() {
                rank.comm_s += now.saturating_sub(rank.since).as_secs_f64();
                if let Some(row) = rank.row {
                    let state = net.rec.name_id("wait");
                    net.rec.interval(Interval {
                        resource: row,
                        state,
                        label: None,
                        start: rank.since,
                        end: now,
                    });
                }
                rank.state = RankState::Ready;
                self.ready.push(r);
            }
        }
    }

    fn isend(&mut self, r: u32, dst: u32, tag: i64, bytes: f64, loc: Loc, net: &mut Net) -> u32 {
        let req = self.new_request(r, format!("send to {dst} tag {tag} ({bytes} B)"));
        let (src_rank, dst_rank) = (&self.ranks[r as usize], &self.ranks[dst as usize]);
        let same_node = src_rank.node == dst_rank.node;
        let path = match (loc, same_node) {
            (Loc::Device, true) => Path::Nvlink,
            (Loc::Device, false) if net.switches.is_on("gpudirect") => Path::GpuDirect,
            (Loc::Device, false) => Path::HostCopy,
            (Loc::Host, _) => Path::Host,
        };
        let rendezvous = path == Path::GpuDirect
            || bytes > self.protocol.eager_limit.0
            || !net.switches.is_on("eager_protocol");
        let m = self.msgs.len() as u32;
        self.msgs.push(MsgRt {
            src: r,
            dst,
            tag,
            bytes,
            path,
            rendezvous,
            src_loc: loc,
            dst_loc: loc,
            send_req: req,
            recv_req: None,
            data_arrived: false,
            rts_arrived: false,
        });
        let k = Path::ALL.iter().position(|&p| p == path).unwrap_or(0);
        self.report.messages[k] += 1;
        self.report.bytes[k] += bytes;
        net.launch.commands().spawn(Message {
            src: r,
            dst,
            tag,
            bytes,
            path,
            rendezvous,
        });
        // The envelope reaches the receiver's queues in send order.
        self.match_envelope(m, net);
        if rendezvous {
            let (a, b) = (self.ranks[r as usize].host, self.ranks[dst as usize].host);
            self.control(m, Stage::Rts, a, b, net);
        } else {
            self.begin_data(m, net);
        }
        req
    }

    fn irecv(&mut self, r: u32, src: i64, tag: i64, bytes: f64, loc: Loc, net: &mut Net) -> u32 {
        let from = if src == ANY {
            "any source".to_string()
        } else {
            src.to_string()
        };
        let req = self.new_request(r, format!("recv from {from} tag {tag} ({bytes} B)"));
        let rank = &mut self.ranks[r as usize];
        let found = rank.unexpected.iter().position(|&m| {
            let msg = &self.msgs[m as usize];
            envelope_matches(src, tag, msg.src, msg.tag)
        });
        match found {
            Some(i) => {
                let m = rank.unexpected.remove(i).expect("found above");
                self.matched(m, r, req, loc, net);
            }
            None => rank.posted.push(Posted { src, tag, req, loc }),
        }
        req
    }

    /// Matches a new envelope against the receiver's posted receives, or queues it.
    fn match_envelope(&mut self, m: u32, net: &mut Net) {
        let msg = &self.msgs[m as usize];
        let (dst, src, tag) = (msg.dst, msg.src, msg.tag);
        let rank = &mut self.ranks[dst as usize];
        match rank
            .posted
            .iter()
            .position(|p| envelope_matches(p.src, p.tag, src, tag))
        {
            Some(i) => {
                let p = rank.posted.remove(i);
                self.matched(m, dst, p.req, p.loc, net);
            }
            None => rank.unexpected.push_back(m),
        }
    }

    fn matched(&mut self, m: u32, r: u32, req: u32, loc: Loc, net: &mut Net) {
        self.ranks[r as usize].reqs[req as usize].matched = true;
        let send_req = self.msgs[m as usize].send_req;
        let src = self.msgs[m as usize].src;
        self.ranks[src as usize].reqs[send_req as usize].matched = true;
        let msg = &mut self.msgs[m as usize];
        msg.recv_req = Some(req);
        msg.dst_loc = loc;
        if msg.rendezvous {
            if msg.rts_arrived {
                self.send_cts(m, net);
            }
        } else if msg.data_arrived {
            self.deliver(m, net);
        }
    }

    fn send_cts(&mut self, m: u32, net: &mut Net) {
        let msg = &self.msgs[m as usize];
        let (a, b) = (
            self.ranks[msg.dst as usize].host,
            self.ranks[msg.src as usize].host,
        );
        self.control(m, Stage::Cts, a, b, net);
    }

    /// The data phase: copies or pinning first, then the data flow.
    fn begin_data(&mut self, m: u32, net: &mut Net) {
        let msg = &self.msgs[m as usize];
        match msg.path {
            Path::GpuDirect => {
                let delay = self.protocol.gpudirect_delay.0;
                net.cal.schedule(
                    net.clock.now.saturating_add(delay),
                    MsgTimer {
                        msg: m,
                        stage: Stage::Pinned,
                    },
                );
            }
            Path::HostCopy if msg.src_loc == Loc::Device => self.copy(m, Stage::CopyOut, net),
            _ => self.data_flow(m, net),
        }
    }

    /// A device<->host copy: fixed delay plus a per-byte cost, or the delay then a PCIe flow.
    fn copy(&mut self, m: u32, stage: Stage, net: &mut Net) {
        let bytes = self.msgs[m as usize].bytes;
        let delay = self.protocol.gpu_copy_delay.0;
        let now = net.clock.now;
        if net.switches.is_on("pcie_copy_contention") {
            let then = if stage == Stage::CopyOut {
                Stage::CopyOutFlow
            } else {
                Stage::CopyInFlow
            };
            net.cal.schedule(
                now.saturating_add(delay),
                MsgTimer {
                    msg: m,
                    stage: then,
                },
            );
        } else {
            let per_byte = SimTime::from_secs_saturating(bytes * self.protocol.gpu_copy_per_byte.0);
            net.cal.schedule(
                now.saturating_add(delay).saturating_add(per_byte),
                MsgTimer { msg: m, stage },
            );
        }
    }

    fn data_flow(&mut self, m: u32, net: &mut Net) {
        let msg = &self.msgs[m as usize];
        if msg.path == Path::Nvlink {
            // A bounded number of copy queues per node.
            let node = self.ranks[msg.src as usize].node as usize;
            if self.nv_active[node] >= self.protocol.copy_queues {
                self.nv_waiting[node].push_back(m);
                return;
            }
            self.nv_active[node] += 1;
        }
        let (s, d) = (&self.ranks[msg.src as usize], &self.ranks[msg.dst as usize]);
        let (a, b) = match msg.path {
            Path::Nvlink | Path::GpuDirect => (s.gpu, d.gpu),
            Path::HostCopy | Path::Host => (s.host, d.host),
        };
        self.start_flow(m, Stage::Data, a, b, msg.bytes, net);
    }

    /// The data is at the receiver: a copy to the device if HostCopy asks, then completion.
    fn deliver(&mut self, m: u32, net: &mut Net) {
        let msg = &self.msgs[m as usize];
        let copy_in = msg.path == Path::HostCopy
            && msg.dst_loc == Loc::Device
            && self.protocol.copy_at == CopyAt::Both;
        if copy_in {
            self.copy(m, Stage::CopyIn, net);
        } else {
            self.finish_recv(m, net);
        }
    }

    fn finish_recv(&mut self, m: u32, net: &mut Net) {
        let msg = &self.msgs[m as usize];
        let (dst, req) = (
            msg.dst,
            msg.recv_req.expect("a delivered message is matched"),
        );
        self.complete(dst, req, net);
    }

    fn on_stage_done(&mut self, m: u32, stage: Stage, net: &mut Net) {
        match stage {
            Stage::Rts => {
                self.msgs[m as usize].rts_arrived = true;
                if self.msgs[m as usize].recv_req.is_some() {
                    self.send_cts(m, net);
                }
            }
            Stage::Cts => self.begin_data(m, net),
            Stage::Pinned => self.data_flow(m, net),
            Stage::CopyOut => self.data_flow(m, net),
            Stage::CopyOutFlow => {
                let msg = &self.msgs[m as usize];
                let s = &self.ranks[msg.src as usize];
                let (a, b, bytes) = (s.gpu, s.host, msg.bytes);
                self.start_flow(m, Stage::CopyOut, a, b, bytes, net);
            }
            Stage::CopyInFlow => {
                let msg = &self.msgs[m as usize];
                let d = &self.ranks[msg.dst as usize];
                let (a, b, bytes) = (d.host, d.gpu, msg.bytes);
                self.start_flow(m, Stage::CopyIn, a, b, bytes, net);
            }
            Stage::Data => {
                if self.msgs[m as usize].path == Path::Nvlink {
                    let node = self.ranks[self.msgs[m as usize].src as usize].node as usize;
                    self.nv_active[node] -= 1;
                    if let Some(next) = self.nv_waiting[node].pop_front() {
                        self.data_flow(next, net);
                    }
                }
                let msg = &mut self.msgs[m as usize];
                msg.data_arrived = true;
                let (src, req, matched) = (msg.src, msg.send_req, msg.recv_req.is_some());
                self.complete(src, req, net);
                if matched {
                    self.deliver(m, net);
                }
            }
            Stage::CopyIn => self.finish_recv(m, net),
        }
    }

    /// A control message (RTS, CTS): the route's latency plus its size over the route's
    /// bottleneck bandwidth. Control messages do not take part in bandwidth sharing: a few
    /// bytes would not change anyone's share, but as flows each would re-share every link of
    /// its route twice (on arrival and departure) for nothing.
    fn control(&mut self, m: u32, stage: Stage, a: Endpoint, b: Endpoint, net: &mut Net) {
        let route = match net.topo.route(a, b) {
            Ok(r) => r,
            Err(e) => {
                net.errors.0.push(format!("mpi: message {m}: {e}"));
                return;
            }
        };
        let bottleneck = net.topo.bottleneck(&route);
        let transfer = if bottleneck.is_finite() {
            SimTime::from_secs_saturating(self.protocol.control_size.0 / bottleneck)
        } else {
            SimTime::ZERO
        };
        let at = net
            .clock
            .now
            .saturating_add(route.latency)
            .saturating_add(transfer);
        net.cal.schedule(at, MsgTimer { msg: m, stage });
    }

    /// Starts a flow for a stage of message `m` between two endpoints.
    fn start_flow(
        &mut self,
        m: u32,
        stage: Stage,
        a: Endpoint,
        b: Endpoint,
        bytes: f64,
        net: &mut Net,
    ) {
        let route = match net.topo.route(a, b) {
            Ok(r) => r,
            Err(e) => {
                net.errors.0.push(format!("mpi: message {m}: {e}"));
                return;
            }
        };
        let msg = &self.msgs[m as usize];
        let now = net.clock.now;
        let req = FlowRequest {
            id: format!("m{m}.{}", stage_name(stage)),
            // The ranks' timeline rows, so that traces link rank to rank.
            src: format!(
                "node[{}].rank[{}]",
                self.ranks[msg.src as usize].node, msg.src
            ),
            dst: format!(
                "node[{}].rank[{}]",
                self.ranks[msg.dst as usize].node, msg.dst
            ),
            route,
            bytes,
            start: Start::At(now),
            cap: None,
        };
        net.launch
            .start_for(&mut net.cal, req, FlowEnd { msg: m, stage });
    }

    /// Per-rank totals and per-path counts.
    fn totals(&self) -> MpiReport {
        let mut report = self.report.clone();
        report.ranks = self
            .ranks
            .iter()
            .enumerate()
            .map(|(i, r)| RankTotals {
                rank: i as u32,
                node: r.node,
                gpu: match r.gpu {
                    Endpoint::Gpu { gpu, .. } => gpu,
                    _ => 0,
                },
                comm_s: r.comm_s,
                compute_s: r.compute_s,
                end_s: r.end.as_secs_f64(),
            })
            .collect();
        report
    }
}

fn stage_name(s: Stage) -> &'static str {
    match s {
        Stage::Rts => "rts",
        Stage::Cts => "cts",
        Stage::Data => "data",
        Stage::CopyOut => "d2h",
        Stage::CopyIn => "h2d",
        Stage::Pinned => "pin",
        Stage::CopyOutFlow => "d2h",
        Stage::CopyInFlow => "h2d",
    }
}

/// Whether a receive for (`want_src`, `want_tag`) takes a message from `src` with `tag`.
/// Any-tag receives never take collective traffic (negative tags).
fn envelope_matches(want_src: i64, want_tag: i64, src: u32, tag: i64) -> bool {
    (want_src == ANY || want_src == src as i64)
        && (want_tag == tag || (want_tag == ANY && tag >= 0))
}

/// Publishes the totals once the run is over (the output crate reads [`MpiReport`]).
pub fn publish_report(world: &mut World) {
    if world.get_resource::<MpiConfig>().is_none() {
        return;
    }
    let report = world.resource::<Mpi>().totals();
    world.insert_resource(report);
}

/// Ranks that have not finished when no event is left: what each waits for.
fn stuck_ranks(world: &mut World) -> Vec<String> {
    let Some(mpi) = world.get_resource::<Mpi>() else {
        return Vec::new();
    };
    let mut out = Vec::new();
    for (i, r) in mpi.ranks.iter().enumerate() {
        if r.state == RankState::Done {
            continue;
        }
        let waits: Vec<String> = r
            .waiting
            .iter()
            .map(|&q| {
                let req = &r.reqs[q as usize];
                format!(
                    "{}{}",
                    req.what,
                    if req.matched { "" } else { " [never matched]" }
                )
            })
            .collect();
        if let Some(k) = r.in_nccl {
            let arrived = mpi
                .nccl_comm
                .and_then(|c| world.get_resource::<Collectives>()?.collective(c, k))
                .map_or(0, |coll| coll.arrived);
            out.push(format!(
                "rank {i} waits in NCCL call {k} for the other ranks ({arrived} of {} arrived)",
                mpi.ranks.len()
            ));
            continue;
        }
        let at = if r.at_step == usize::MAX {
            "the end of its program (outstanding requests)".to_string()
        } else {
            r.program.at(r.at_step)
        };
        out.push(format!(
            "rank {i} waits at {at}{} for: {}",
            if r.program.repeat > 1 {
                format!(" in pass {} of {}", r.pass + 1, r.program.repeat)
            } else {
                String::new()
            },
            if waits.is_empty() {
                "nothing (a model error)".to_string()
            } else {
                waits.join("; ")
            }
        ));
    }
    out
}
