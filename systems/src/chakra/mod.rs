//! The Chakra plugin: execution traces (ASTRA-sim's workload format) run as ASTRA-sim's
//! workload layer runs them, one rank per GPU, on hetsim's platform and NCCL model.
//!
//! Each rank issues its nodes once their `data_deps` are done, lowest id first, when their
//! resource is free: one CPU operator and one GPU kernel at a time, the collectives of a
//! process group one at a time, sends, receives and copies at once ([`exec`]). Kernels take
//! their traced time divided by `compute_scale`; a collective is an NCCL call through
//! [`crate::nccl`] over its group's GPUs (the k-th call of every member is one collective);
//! a send is NCCL's point-to-point transfer, started at once, and a receive completes when its
//! message has arrived ([`p2p`]); MEM_LOAD/MEM_STORE nodes are copies between the GPU and its
//! node's host memory over the platform's links.
//! Simplified: kernels do not slow each other or communication (no SM sharing with NCCL's
//! kernels); a send does not wait for its receive to be posted (ASTRA-sim's semantics, which
//! the traces' send-before-receive rings need); CPU operators take their traced time whatever
//! the platform; GATHER and SCATTER collectives are refused.
//!
//! Layout: this file is the coordinator (events, systems, and the one place that touches the
//! calendar, the network, the NCCL plugin and the recorder); the leaves take plain data:
//! `graph.rs` (a trace's nodes as work and dependencies), `exec.rs` (a rank's issue rules),
//! `p2p.rs` (message matching), `busy.rs` (time accounting), `setup.rs` (files and groups).

mod busy;
mod exec;
pub mod graph;
mod p2p;
pub mod setup;

use bevy_app::{App, Plugin};
use bevy_ecs::prelude::*;
use std::sync::Arc;

use hetsim_engine::record::{Interval, Recorder, ResId, ResourceKind};
use hetsim_engine::{
    Calendar, Clock, Inbox, SimAppExt, SimErrors, SimEvent, SimSet, SimStartup, SimStep, StartupSet,
};
use hetsim_schema::SimTime;
use hetsim_schema::chakra::ChakraSpec;
use hetsim_schema::cuda::NcclCall;
use hetsim_schema::scenario::PlatformSpec;

use crate::nccl::{self, CollectiveRecord, Collectives};
use crate::network::{FlowSpec, Reach, Start};
use crate::platform::{Endpoint, PlatformConfig, Topology};
use exec::{Effect, Rank, Row};
use graph::{Peaks, Work};
use p2p::{InFlight, Mail, Message};

/// The Chakra workload to run (inserted by whoever assembles the app).
#[derive(Resource, Debug, Clone)]
pub struct ChakraConfig(pub ChakraSpec);

/// One rank's totals, in seconds.
#[derive(Debug, Clone, PartialEq)]
pub struct RankTotals {
    pub rank: u32,
    pub end_s: f64,
    pub kernel_s: f64,
    pub cpu_s: f64,
    pub comm_s: f64,
    /// Communication in flight while no kernel and no CPU operator ran.
    pub exposed_s: f64,
    pub nodes: u32,
}

/// Totals published at the end of a run (the output crate reads this).
#[derive(Resource, Debug, Clone, Default)]
pub struct ChakraReport {
    pub ranks: Vec<RankTotals>,
    /// Every collective in the order they ended, with its group's name.
    pub collectives: Vec<(String, CollectiveRecord)>,
    /// Nodes with nothing to run, by type, over all ranks.
    pub skipped: Vec<(String, u64)>,
    /// Attributes not read, by name: how many nodes carry each, over all ranks.
    pub ignored: Vec<(String, u64)>,
    pub messages: u64,
    pub message_bytes: f64,
}

/// A process group at run time: its members, its NCCL communicator, the node each member
/// has in its current collective and the first member's call (the others must match it).
struct Group {
    name: String,
    members: Vec<u32>,
    comm: u32,
    current: Vec<Option<u32>>,
    call: Option<(NcclCall, u32)>,
}

/// Every rank, group and message of the job.
#[derive(Resource, Default)]
pub struct Job {
    ranks: Vec<Rank>,
    gpus: Vec<Endpoint>,
    group_of: Vec<Arc<Vec<u32>>>,
    groups: Vec<Group>,
    world: Option<u32>,
    mail: Mail,
    flights: InFlight,
    /// Ranks to issue from in this step, and the batch being issued (kept for its memory).
    dirty: Vec<u32>,
    spare: Vec<u32>,
    rows: Vec<[ResId; 3]>,
    report: ChakraReport,
}

/// A kernel or CPU operator's time is up, or a copy has delivered its bytes.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
struct NodeEnd {
    rank: u32,
    node: u32,
}

impl SimEvent for NodeEnd {
    const NAME: &'static str = "chakra.node_end";
    fn pack(&self) -> (Entity, u64) {
        (
            Entity::PLACEHOLDER,
            ((self.rank as u64) << 32) | self.node as u64,
        )
    }
    fn unpack(_: Entity, arg: u64) -> Self {
        NodeEnd {
            rank: (arg >> 32) as u32,
            node: arg as u32,
        }
    }
}

/// Collective `k` of group `group` is over.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
struct CollEnd {
    group: u32,
    k: u32,
}

impl SimEvent for CollEnd {
    const NAME: &'static str = "chakra.collective_end";
    fn pack(&self) -> (Entity, u64) {
        (
            Entity::PLACEHOLDER,
            ((self.group as u64) << 32) | self.k as u64,
        )
    }
    fn unpack(_: Entity, arg: u64) -> Self {
        CollEnd {
            group: (arg >> 32) as u32,
            k: arg as u32,
        }
    }
}

/// The message in flight slot has arrived.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
struct SendEnd(u32);

impl SimEvent for SendEnd {
    const NAME: &'static str = "chakra.send_end";
    fn pack(&self) -> (Entity, u64) {
        (Entity::PLACEHOLDER, self.0 as u64)
    }
    fn unpack(_: Entity, arg: u64) -> Self {
        SendEnd(arg as u32)
    }
}

/// Time zero: every rank issues its first nodes (the step's systems run on any event).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
struct Begin;

impl SimEvent for Begin {
    const NAME: &'static str = "chakra.begin";
    fn pack(&self) -> (Entity, u64) {
        (Entity::PLACEHOLDER, 0)
    }
    fn unpack(_: Entity, _: u64) -> Self {
        Begin
    }
}

pub struct ChakraPlugin;

impl Plugin for ChakraPlugin {
    fn build(&self, app: &mut App) {
        app.add_sim_event::<NodeEnd>()
            .add_sim_event::<CollEnd>()
            .add_sim_event::<SendEnd>()
            .add_sim_event::<Begin>()
            .describe_model("chakra", include_str!("summary.txt"))
            .init_resource::<Job>()
            .add_systems(SimStartup, setup_job.in_set(StartupSet::Workload))
            .add_systems(hetsim_engine::SimFinish, publish_report)
            .add_stall_check(stuck_ranks);
    }

    /// The step systems, only for a scenario with a Chakra workload.
    fn finish(&self, app: &mut App) {
        if app.world().contains_resource::<ChakraConfig>() {
            nccl::enable(app);
            app.add_systems(
                SimStep,
                (
                    finish_nodes,
                    finish_collectives,
                    deliver_messages,
                    issue_ready_nodes,
                )
                    .chain()
                    .in_set(SimSet::Compute),
            );
            if app.world().resource::<Recorder>().is_on() {
                app.add_systems(SimStep, record_rank_intervals.in_set(SimSet::Record));
            }
        }
    }
}

fn setup_job(world: &mut World) {
    let Some(spec) = world.get_resource::<ChakraConfig>().map(|c| c.0.clone()) else {
        return;
    };
    if let Err(e) = setup(world, &spec) {
        world.resource_mut::<SimErrors>().0.push(e);
    }
}

fn rank_name(r: u32) -> String {
    format!("rank[{r}]")
}

fn setup(world: &mut World, spec: &ChakraSpec) -> Result<(), String> {
    let PlatformSpec::Cluster(cluster) = world.resource::<PlatformConfig>().0.clone() else {
        return Err("workload.Chakra: needs a Cluster platform (nodes of GPUs)".into());
    };
    let n = setup::ranks(spec, &cluster)?;
    let peaks = Peaks {
        flops: cluster.node.gpu.speed.0,
        mem_bw: cluster.node.gpu.memory_bandwidth.0,
    };
    let loaded = setup::load(spec, n, peaks)?;
    let per = cluster.node.gpus;
    let gpus: Vec<Endpoint> = (0..n)
        .map(|i| Endpoint::Gpu {
            node: i / per,
            gpu: i % per,
        })
        .collect();
    let model = &cluster.node.gpu.name;
    let groups = groups(world, &gpus, &loaded.groups, spec, model)?;
    let all: Vec<u32> = (0..n).collect();
    let world_comm = if loaded.p2p {
        Some(register(world, &gpus, &all, spec, model, u32::MAX)?)
    } else {
        None
    };
    let record = world.resource::<Recorder>().is_on();
    let rows = if record {
        rank_rows(world, n)
    } else {
        Vec::new()
    };
    let ranks: Vec<Rank> = loaded
        .graphs
        .into_iter()
        .map(|g| Rank::new(g, spec.compute_scale, record))
        .collect();
    let (skipped, ignored) = uncounted(&ranks);
    world.insert_resource(Job {
        gpus,
        group_of: loaded.group_of,
        groups,
        world: world_comm,
        dirty: (0..n).collect(),
        rows,
        report: ChakraReport {
            skipped,
            ignored,
            ..Default::default()
        },
        ranks,
        ..Default::default()
    });
    world
        .resource_mut::<Calendar>()
        .schedule(SimTime::ZERO, Begin);
    Ok(())
}

/// The process groups at run time, each with its NCCL communicator.
fn groups(
    world: &mut World,
    gpus: &[Endpoint],
    specs: &[setup::GroupSpec],
    spec: &ChakraSpec,
    model: &str,
) -> Result<Vec<Group>, String> {
    let mut groups = Vec::with_capacity(specs.len());
    for (g, gs) in specs.iter().enumerate() {
        groups.push(Group {
            // Collectives without a pg_name are over every rank.
            name: if gs.name.is_empty() {
                "all".into()
            } else {
                gs.name.clone()
            },
            comm: register(world, gpus, &gs.members, spec, model, g as u32)?,
            current: vec![None; gs.members.len()],
            members: gs.members.clone(),
            call: None,
        });
    }
    Ok(groups)
}

/// An NCCL communicator over `members` (ranks), registered with the NCCL plugin; its
/// collectives end with `CollEnd { group, k }`.
fn register(
    world: &mut World,
    gpus: &[Endpoint],
    members: &[u32],
    spec: &ChakraSpec,
    gpu_model: &str,
    group: u32,
) -> Result<u32, String> {
    let eps: Vec<Endpoint> = members.iter().map(|&r| gpus[r as usize]).collect();
    let mut topo = world.resource_mut::<Topology>();
    let comm = nccl::Comm::new(eps, &spec.nccl, &mut topo, gpu_model)
        .map_err(|e| format!("workload.Chakra.nccl: {e}"))?;
    let rows = members.iter().map(|&r| rank_name(r)).collect();
    Ok(world
        .resource_mut::<Collectives>()
        .register(comm, rows, move |k| CollEnd { group, k }))
}

/// Each rank's timeline rows: its CPU, its GPU, its communication.
fn rank_rows(world: &mut World, n: u32) -> Vec<[ResId; 3]> {
    let mut rec = world.resource_mut::<Recorder>();
    (0..n)
        .map(|r| {
            ["cpu", "gpu", "comm"]
                .map(|row| rec.resource(ResourceKind::Rank, &format!("{}.{row}", rank_name(r))))
        })
        .collect()
}

/// Counts by name.
type Counts = Vec<(String, u64)>;

/// Nodes with nothing to run by type, and attributes not read by name, over all ranks.
fn uncounted(ranks: &[Rank]) -> (Counts, Counts) {
    let mut skipped = std::collections::BTreeMap::<String, u64>::new();
    let mut ignored = std::collections::BTreeMap::<String, u64>::new();
    for r in ranks {
        for (k, v) in &r.graph.skipped {
            *skipped.entry(k.clone()).or_default() += v;
        }
        for (k, v) in &r.graph.ignored {
            *ignored.entry(k.clone()).or_default() += v;
        }
    }
    (skipped.into_iter().collect(), ignored.into_iter().collect())
}

/// Where the ranks' effects go: the calendar and the network, the NCCL plugin.
#[derive(bevy_ecs::system::SystemParam)]
struct Sinks<'w, 's> {
    reach: Reach<'w, 's>,
    colls: ResMut<'w, Collectives>,
}

fn finish_nodes(mut inbox: ResMut<Inbox<NodeEnd>>, mut job: ResMut<Job>, clock: Res<Clock>) {
    for NodeEnd { rank, node } in inbox.drain() {
        job.ranks[rank as usize].finish(node, clock.now);
        job.dirty.push(rank);
    }
}

fn finish_collectives(mut inbox: ResMut<Inbox<CollEnd>>, mut job: ResMut<Job>, sinks: Sinks) {
    let now = sinks.reach.now();
    for CollEnd { group, k } in inbox.drain() {
        let job = &mut *job;
        let g = &mut job.groups[group as usize];
        g.call = None;
        let record = sinks.colls.record(g.comm, k, now);
        job.report.collectives.push((g.name.clone(), record));
        for (m, &rank) in g.members.iter().enumerate() {
            let node = g.current[m]
                .take()
                .expect("every member is in the collective");
            job.ranks[rank as usize].finish(node, now);
            job.dirty.push(rank);
        }
    }
}

fn deliver_messages(mut inbox: ResMut<Inbox<SendEnd>>, mut job: ResMut<Job>, mut sinks: Sinks) {
    let now = sinks.reach.now();
    for SendEnd(slot) in inbox.drain() {
        let job = &mut *job;
        let Message { key, node, bytes } = job.flights.end(slot);
        let (src, dst, _) = key;
        job.ranks[src as usize].finish(node, now);
        job.dirty.push(src);
        match job.mail.arrive(key, bytes) {
            Ok(Some(recv)) => {
                job.ranks[dst as usize].finish(recv, now);
                job.dirty.push(dst);
            }
            Ok(None) => {}
            Err(e) => sinks.reach.fail(format!("workload.Chakra: {e}")),
        }
    }
}

fn issue_ready_nodes(mut job: ResMut<Job>, mut sinks: Sinks) {
    let now = sinks.reach.now();
    // Receives that complete at once leave ranks to issue from again: until none is left.
    let mut batch = std::mem::take(&mut job.spare);
    while !job.dirty.is_empty() {
        std::mem::swap(&mut batch, &mut job.dirty);
        batch.sort_unstable();
        batch.dedup();
        for &r in &batch {
            job.ranks[r as usize].issue(now);
            job.apply_effects(r, &mut sinks);
        }
        batch.clear();
    }
    job.spare = batch;
}

impl Job {
    /// Carries out what rank `r` asked, in the order it asked.
    fn apply_effects(&mut self, r: u32, sinks: &mut Sinks) {
        let now = sinks.reach.now();
        for fx in std::mem::take(&mut self.ranks[r as usize].fx) {
            let result = match fx {
                Effect::Timer { at, node } => {
                    sinks.reach.cal.schedule(at, NodeEnd { rank: r, node });
                    Ok(())
                }
                Effect::Coll { node, group, k } => self.arrive(r, node, group, k, sinks),
                Effect::Send {
                    node,
                    peer,
                    bytes,
                    tag,
                } => self.send(r, node, (peer, tag), bytes, sinks),
                Effect::Recv {
                    node,
                    peer,
                    bytes,
                    tag,
                } => self.mail.post((peer, r, tag), node, bytes).map(|arrived| {
                    if arrived {
                        self.ranks[r as usize].finish(node, now);
                        self.dirty.push(r);
                    }
                }),
                Effect::Copy {
                    node,
                    to_device,
                    bytes,
                } => self.copy(r, node, to_device, bytes, sinks),
            };
            if let Err(e) = result {
                sinks.reach.fail(format!("workload.Chakra: rank {r}: {e}"));
            }
        }
    }

    /// Rank `r` reaches its k-th collective of its graph group `local`.
    fn arrive(
        &mut self,
        r: u32,
        node: u32,
        local: u32,
        k: u32,
        sinks: &mut Sinks,
    ) -> Result<(), String> {
        let gi = self.group_of[r as usize][local as usize];
        let rank = &self.ranks[r as usize];
        let Work::Coll {
            op, bytes, root, ..
        } = rank.graph.work[node as usize]
        else {
            unreachable!("a collective effect is a collective node")
        };
        let g = &mut self.groups[gi as usize];
        let m = g.members.iter().position(|&x| x == r).ok_or_else(|| {
            format!(
                "node {:?} is a collective of process group {:?}, which does not hold rank {r}",
                rank.graph.names[node as usize], g.name
            )
        })?;
        let call = NcclCall {
            op,
            bytes: hetsim_schema::units::Bytes(bytes),
            stream: 0,
            root,
            peer: 1,
        };
        match &g.call {
            Some((first, who)) if (first.op, first.bytes.0, first.root) != (op, bytes, root) => {
                return Err(format!(
                    "collective {k} of process group {:?} is {} of {} B (root {}) here but {} of {} B (root {}) on rank {who}",
                    g.name,
                    op.name(),
                    bytes,
                    root,
                    first.op.name(),
                    first.bytes.0,
                    first.root
                ));
            }
            Some(_) => {}
            None => g.call = Some((call.clone(), r)),
        }
        g.current[m] = Some(node);
        sinks.colls.arrive(g.comm, k, &[call], &mut sinks.reach)
    }

    /// Rank `r`'s send to `peer`: its bytes leave now.
    fn send(
        &mut self,
        r: u32,
        node: u32,
        (peer, tag): (u32, i64),
        bytes: f64,
        sinks: &mut Sinks,
    ) -> Result<(), String> {
        let slot = self.flights.start(Message {
            key: (r, peer, tag),
            node,
            bytes,
        });
        self.report.messages += 1;
        self.report.message_bytes += bytes;
        let world = self.world.expect("a world communicator for sends");
        sinks
            .colls
            .send(world, (r, peer), bytes, &mut sinks.reach, SendEnd(slot))
    }

    /// A MEM_LOAD/MEM_STORE node: a copy between the GPU and its node's host memory.
    fn copy(
        &mut self,
        r: u32,
        node: u32,
        to_device: bool,
        bytes: f64,
        sinks: &mut Sinks,
    ) -> Result<(), String> {
        let gpu = self.gpus[r as usize];
        let Endpoint::Gpu { node: host, .. } = gpu else {
            unreachable!("ranks run on GPUs")
        };
        let host = Endpoint::Host { node: host };
        let (from, to) = if to_device { (host, gpu) } else { (gpu, host) };
        let name = rank_name(r);
        let row = |e: Endpoint| e.cluster_name().unwrap_or_else(|| name.clone());
        let spec = FlowSpec {
            id: format!("{name}.copy").into(),
            src_row: row(from).into(),
            dst_row: row(to).into(),
            bytes,
            start: Start::At(sinks.reach.now()),
            cap: None,
            zero_latency: false,
        };
        sinks
            .reach
            .flow(from, to, spec, NodeEnd { rank: r, node })
            .map(|_| ())
            .map_err(|e| format!("copy: {e}"))
    }
}

/// Hands what the ranks ran this step to the recorder.
fn record_rank_intervals(mut job: ResMut<Job>, mut rec: ResMut<Recorder>) {
    let job = &mut *job;
    for (r, rank) in job.ranks.iter_mut().enumerate() {
        let Some(ran) = rank.ran.as_mut() else {
            continue;
        };
        for (row, node, start, end) in ran.drain(..) {
            let (resource, state) = match row {
                Row::Cpu => (job.rows[r][0], "cpu op"),
                Row::Gpu => (job.rows[r][1], "kernel"),
                Row::Comm => (job.rows[r][2], "communication"),
            };
            let state = rec.name_id(state);
            let label = node.map(|n| rec.name_id(&rank.graph.names[n as usize]));
            rec.interval(Interval {
                resource,
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
    if world.get_resource::<ChakraConfig>().is_none() {
        return;
    }
    let job = world.resource::<Job>();
    let mut report = job.report.clone();
    let s = |t: SimTime| t.as_secs_f64();
    report.ranks = job
        .ranks
        .iter()
        .enumerate()
        .map(|(r, rank)| RankTotals {
            rank: r as u32,
            end_s: s(rank.end),
            kernel_s: s(rank.busy.kernel),
            cpu_s: s(rank.busy.cpu_op),
            comm_s: s(rank.busy.comm_time),
            exposed_s: s(rank.busy.exposed),
            nodes: rank.graph.len() as u32,
        })
        .collect();
    world.insert_resource(report);
}

/// Ranks that have not finished when no event is left, and receives still waiting.
fn stuck_ranks(world: &mut World) -> Vec<String> {
    let Some(job) = world.get_resource::<Job>() else {
        return Vec::new();
    };
    let mut out: Vec<String> = job
        .ranks
        .iter()
        .enumerate()
        .filter_map(|(r, rank)| {
            rank.stuck()
                .map(|why| format!("{}: {why}", rank_name(r as u32)))
        })
        .collect();
    for (dst, src, tag) in job.mail.waiting() {
        out.push(format!(
            "{} waits for a message from rank {src} with tag {tag} that no send delivers",
            rank_name(dst)
        ));
    }
    for g in &job.groups {
        if let Some((call, _)) = &g.call {
            let arrived = g.current.iter().filter(|c| c.is_some()).count();
            out.push(format!(
                "process group {:?}: {} waits for {} of {} members",
                g.name,
                call.op.name(),
                g.members.len() - arrived,
                g.members.len()
            ));
        }
    }
    out
}
