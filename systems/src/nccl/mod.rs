//! The NCCL plugin: communicators (rings and double binary trees over the platform's GPUs,
//! channels, protocols) and the one lifecycle of their collectives, whoever calls them.
//!
//! A service: it imports neither of the models that call it (the CUDA streams, MPI rank
//! programs); whichever has a workload enables it ([`enable`]). A caller registers a communicator
//! with the event it wants back ([`Collectives::register`]); each member then *arrives* at
//! its k-th call ([`Collectives::arrive`], a synchronous hand-over, so the last arrival starts
//! the collective in the same step). The plugin plans it ([`plan`]), waits NCCL's latency,
//! launches one flow per edge, counts their ends, waits the pipeline fill and sends the
//! owner's event: the owner releases its members.
//!
//! A collective is planned as NCCL runs it: per channel, a ring (GPUs of a node in a row,
//! rotated per channel so that channels leave a node through different GPUs and so different
//! NICs; nodes one after another) or a tree (a chain inside each node, a binary tree of nodes,
//! channels alternating between the tree and its mirror image: the double binary tree).
//! The steps of a channel are pipelined through NCCL's FIFO of slices, so in steady state every
//! edge of the ring or tree streams its whole share at once; each edge therefore becomes one
//! flow carrying all the bytes it carries over the collective, sharing links with everything
//! else on the platform. On top: NCCL's own latency for (algorithm, protocol) from
//! [`tuning`], and the pipeline fill of chains (a broadcast chain's last hop starts once the
//! first slice has crossed the others).
//!
//! Protocols change the bytes on the wire (LL: half the bytes are flags; LL128: 8 of 128) and
//! cap what one channel moves (NCCL's per-channel maxima); links carry what NCCL's SM copies
//! reach of their line rate (`nvlink_efficiency`, `net_efficiency`).
//! A collective of count 0 returns at once, as NCCL's `taskAppend` drops it ([`plan::Plan`]
//! is then `skipped`), and so does one over a single rank (NCCL's local copy, left free); a
//! point-to-point call of 0 bytes still meets its peer.
//!
//! Beyond rings and trees ([`algos`]): NVLS where the NVSwitch multicasts (the switch reads,
//! reduces and writes: S + S/n through each GPU's port each way; across nodes with CollNet,
//! whose switches reduce the nodes' shares), NVLSTree across such nodes
//! (NVLS inside, a double binary tree of each rail's GPUs across), PAT at one GPU per node,
//! and CollNet where enabled. With PXN (on, as in NCCL) a transfer to a GPU on another rail
//! goes over NVLink to the local GPU on that rail first ([`Topology::rail_relay`]).
//!
//! Simplified: reduction arithmetic is free (it hides behind the copies on real GPUs), the
//! ring orders GPUs by index rather than searching NVLink paths, the tree's root sits on the
//! first (or last) node, the members of a count-0 collective are released when the last
//! arrives (NCCL would not hold them), and [`algos`] lists what its transfers leave out.
//!
//! [`Topology::rail_relay`]: crate::platform::Topology::rail_relay

mod algos;
pub mod plan;
mod record;
pub mod tuning;

use bevy_app::{App, Plugin};
use bevy_ecs::prelude::*;
use std::sync::Arc;

use hetsim_engine::{Calendar, Clock, Inbox, RawEvent, SimAppExt, SimEvent, SimSet, SimStep};
use hetsim_schema::SimTime;
use hetsim_schema::cuda::NcclCall;

use crate::network::{FlowSpec, Reach, Start};
pub use plan::{Comm, Edge, Plan};
pub use record::{CollectiveRecord, group_name};

pub struct NcclPlugin;

impl Plugin for NcclPlugin {
    fn build(&self, app: &mut App) {
        app.add_sim_event::<EdgeEnd>()
            .describe_model("nccl", include_str!("summary.txt"))
            .init_resource::<Collectives>();
    }
}

/// The marker of an app whose step runs NCCL's system.
#[derive(Resource)]
struct Enabled;

/// Adds NCCL's step system (the edges' ends) to the app, once, whichever model calls NCCL
/// (MPI's nccl_* actions, CUDA's collectives): their plugins call it from `finish` when their
/// workload is there. `SimSet::Collectives` holds this one system, so the step's order is the
/// same whoever enables it.
pub fn enable(app: &mut App) {
    if app.world().contains_resource::<Enabled>() {
        return;
    }
    app.insert_resource(Enabled);
    app.add_systems(SimStep, finish_edges.in_set(SimSet::Collectives));
}

/// An edge of collective `k` of communicator `comm` has delivered its bytes.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
struct EdgeEnd {
    comm: u32,
    k: u32,
}

impl SimEvent for EdgeEnd {
    const NAME: &'static str = "nccl.edge_end";
    fn pack(&self) -> (Entity, u64) {
        (
            Entity::PLACEHOLDER,
            ((self.comm as u64) << 32) | self.k as u64,
        )
    }
    fn unpack(_: Entity, arg: u64) -> Self {
        EdgeEnd {
            comm: (arg >> 32) as u32,
            k: arg as u32,
        }
    }
}

/// The owner's event for "collective k is over".
type DoneEvent = Arc<dyn Fn(&Calendar, u32) -> RawEvent + Send + Sync>;

/// One collective: the calls it runs, who arrived, and its plan once started (owners read
/// it through [`Collectives::name`], [`Collectives::arrived`] and [`Collectives::record`]).
#[derive(Debug, Clone)]
struct Collective {
    calls: Vec<NcclCall>,
    arrived: u32,
    flows_left: u32,
    /// When the last member arrived.
    start: SimTime,
    plan: Option<Arc<Plan>>,
}

struct CommRt {
    comm: Comm,
    /// Timeline rows of the members (flows are drawn between them).
    rows: Vec<Arc<str>>,
    done: DoneEvent,
    colls: Vec<Collective>,
    /// The last plan and the calls it is for: a collective repeating them reuses it (plans
    /// are plain data of the calls and the communicator).
    last: Option<(Vec<NcclCall>, Arc<Plan>)>,
}

/// Aggregation trees the switches hold for CollNet (SHARP): at most two aggregation flows
/// per switch. Simplified: every communicator's tree is counted at the fabric's top, so the
/// first two communicators with CollNet get it, the others fall back.
const SHARP_TREES: u32 = 2;

/// Every communicator and its collectives.
#[derive(Resource, Default)]
pub struct Collectives {
    comms: Vec<CommRt>,
    /// CollNet aggregation trees given out.
    sharp_trees: u32,
}

impl Collectives {
    /// Adds a communicator whose members are drawn on `rows`; `done(k)` is the event the
    /// owner gets when its collective `k` is over. Returns the communicator's number.
    pub fn register<E: SimEvent>(
        &mut self,
        mut comm: Comm,
        rows: Vec<String>,
        done: impl Fn(u32) -> E + Send + Sync + 'static,
    ) -> u32 {
        if comm.wants_collnet() {
            if self.sharp_trees < SHARP_TREES {
                self.sharp_trees += 1;
            } else {
                comm.refuse_collnet();
            }
        }
        self.comms.push(CommRt {
            comm,
            rows: rows.into_iter().map(Arc::from).collect(),
            done: Arc::new(move |cal: &Calendar, k| cal.pack(&done(k))),
            colls: Vec::new(),
            last: None,
        });
        self.comms.len() as u32 - 1
    }

    /// Collective `k` of communicator `c`, once a member has reached it.
    fn collective(&self, c: u32, k: u32) -> Option<&Collective> {
        self.comms[c as usize].colls.get(k as usize)
    }

    /// The name of collective `k` of `c` (its calls' names joined by `+`), once a member
    /// has reached it.
    pub fn name(&self, c: u32, k: u32) -> Option<String> {
        self.collective(c, k).map(|coll| group_name(&coll.calls))
    }

    /// How many members have reached collective `k` of `c`.
    pub fn arrived(&self, c: u32, k: u32) -> u32 {
        self.collective(c, k).map_or(0, |coll| coll.arrived)
    }

    /// What collective `k` of `c` did, for reports: it has ended at `now`.
    pub fn record(&self, c: u32, k: u32, now: SimTime) -> CollectiveRecord {
        let rt = &self.comms[c as usize];
        let coll = &rt.colls[k as usize];
        let plan = coll
            .plan
            .as_ref()
            .expect("a collective ends after its plan");
        CollectiveRecord {
            op: group_name(&coll.calls),
            bytes: coll.calls.iter().map(|c| c.bytes.0).sum(),
            algo: if plan.skipped { "-" } else { plan.algo.name() }.into(),
            proto: if plan.skipped { "-" } else { plan.proto.name() }.into(),
            channels: rt.comm.tune.channels,
            ranks: rt.comm.tune.ranks,
            bus_factor: match coll.calls.as_slice() {
                [one] => Some(one.op.bus_factor(rt.comm.tune.ranks)),
                _ => None,
            },
            start_s: coll.start.as_secs_f64(),
            end_s: now.as_secs_f64(),
            predicted_us: plan.predicted_us,
        }
    }

    /// A member reaches its k-th call (`calls`: one, or a group); the last to arrive starts
    /// the collective. Errors are the plan's or the routes'.
    pub fn arrive(
        &mut self,
        c: u32,
        k: u32,
        calls: &[NcclCall],
        reach: &mut Reach,
    ) -> Result<(), String> {
        let rt = &mut self.comms[c as usize];
        if rt.colls.len() <= k as usize {
            rt.colls.push(Collective {
                calls: calls.to_vec(),
                arrived: 0,
                flows_left: 0,
                start: SimTime::ZERO,
                plan: None,
            });
        }
        let coll = &mut rt.colls[k as usize];
        coll.arrived += 1;
        if coll.arrived == rt.comm.size() {
            self.start(c, k, reach)?;
        }
        Ok(())
    }

    /// One ncclSend from member `from` to member `to` of `c` whose receive is posted: after
    /// NCCL's point-to-point latency, one flow; `done` is sent when its last byte arrives (at
    /// once after the latency for a send to oneself). Errors are the plan's or the route's.
    pub fn send<E: SimEvent>(
        &self,
        c: u32,
        (from, to): (u32, u32),
        bytes: f64,
        reach: &mut Reach,
        done: E,
    ) -> Result<(), String> {
        let rt = &self.comms[c as usize];
        let plan = rt.comm.plan_send(from, to, bytes)?;
        let start = reach.now().saturating_add(secs(plan.latency_s));
        let Some(edge) = plan.edges.first() else {
            reach.cal.schedule(start, done);
            return Ok(());
        };
        rt.edge_flow(reach, edge, ("nccl.send".into(), Start::At(start)), done)
    }

    /// Every member is there: plan, then after NCCL's latency one flow per edge.
    fn start(&mut self, c: u32, k: u32, reach: &mut Reach) -> Result<(), String> {
        let now = reach.now();
        let rt = &mut self.comms[c as usize];
        let calls = &rt.colls[k as usize].calls;
        let plan = match &rt.last {
            Some((last, plan)) if last == calls => plan.clone(),
            _ => {
                let plan = Arc::new(rt.comm.plan_group(calls)?);
                rt.last = Some((calls.clone(), plan.clone()));
                plan
            }
        };
        let start = now.saturating_add(secs(plan.latency_s));
        let label = format!("nccl{k}");
        for edge in &plan.edges {
            let id = (label.clone(), Start::Ahead(start));
            rt.edge_flow(reach, edge, id, EdgeEnd { comm: c, k })?;
        }
        let coll = &mut rt.colls[k as usize];
        coll.start = now;
        coll.flows_left = plan.edges.len() as u32;
        if plan.edges.is_empty() {
            let done = (rt.done)(&reach.cal, k);
            reach
                .cal
                .schedule_raw(start.saturating_add(secs(plan.fill_s)), done);
        }
        coll.plan = Some(plan);
        Ok(())
    }
}

/// Counts the edges' ends; the last one, after the pipeline fill, ends the collective.
fn finish_edges(
    mut inbox: ResMut<Inbox<EdgeEnd>>,
    mut colls: ResMut<Collectives>,
    mut cal: ResMut<Calendar>,
    clock: Res<Clock>,
) {
    for EdgeEnd { comm, k } in inbox.drain() {
        let rt = &mut colls.comms[comm as usize];
        let coll = &mut rt.colls[k as usize];
        coll.flows_left -= 1;
        if coll.flows_left == 0 {
            let fill = coll.plan.as_ref().map_or(0.0, |p| p.fill_s);
            let done = (rt.done)(&cal, k);
            cal.schedule_raw(clock.now.saturating_add(secs(fill)), done);
        }
    }
}

impl CommRt {
    /// Starts `edge` as the flow `id` from `start` on, drawn between its members' rows; with
    /// PXN it goes first to the peer on the receiver's rail. NCCL's latency term already holds
    /// the hops' latencies, so the route's is left out. `done` comes when its last byte has
    /// arrived.
    fn edge_flow<E: SimEvent>(
        &self,
        reach: &mut Reach,
        edge: &Edge,
        (id, start): (String, Start),
        done: E,
    ) -> Result<(), String> {
        let (from, to) = (edge.from as usize, edge.to as usize);
        let spec = FlowSpec {
            id: id.into(),
            src_row: self.rows[from].clone(),
            dst_row: self.rows[to].clone(),
            bytes: edge.wire_bytes,
            start,
            cap: edge.cap.is_finite().then_some(edge.cap),
            zero_latency: true,
        };
        let (a, b) = (self.comm.members[from], self.comm.members[to]);
        let via = self
            .comm
            .pxn()
            .then(|| reach.topo.rail_relay(a, b))
            .flatten();
        reach
            .flow_via(a, via, b, spec, done)
            .map(|_| ())
            .map_err(|e| format!("NCCL: {e}"))
    }
}

fn secs(s: f64) -> SimTime {
    SimTime::from_secs_saturating(s)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::platform::Endpoint;
    use crate::platform::build::topology;
    use hetsim_schema::cuda::{Algo, NcclSpec};
    use hetsim_schema::load::from_ron;
    use hetsim_schema::scenario::PlatformSpec;

    /// A communicator over 2 nodes of 2 GPUs with CollNet enabled and forced.
    fn collnet_comm() -> Comm {
        let platform: PlatformSpec = from_ron(
            r#"Cluster(nodes: 2, node: NodeSpec(gpus: 2, nvlink: Switch(bandwidth: "100GB/s"), nics: 2),
               network: Star(bandwidth: "12.5GB/s"))"#,
            "test",
            "platform",
        )
        .unwrap();
        let mut topo = topology(&platform).unwrap();
        let members = (0..2)
            .flat_map(|node| (0..2).map(move |gpu| Endpoint::Gpu { node, gpu }))
            .collect();
        let spec = NcclSpec {
            collnet: true,
            algo: Some(Algo::CollNetDirect),
            ..NcclSpec::default()
        };
        Comm::new(members, &spec, &mut topo, "H100").unwrap()
    }

    #[test]
    fn the_switches_give_collnet_to_two_communicators_and_the_third_falls_back() {
        let mut colls = Collectives::default();
        let call: NcclCall = from_ron("(op: AllReduce, bytes: 1048576)", "test", "call").unwrap();
        for want_collnet in [true, true, false] {
            let c = colls.register(collnet_comm(), vec![String::new(); 4], |k| EdgeEnd {
                comm: 0,
                k,
            });
            let comm = &colls.comms[c as usize].comm;
            assert_eq!(comm.wants_collnet(), want_collnet);
            let plan = comm.plan(&call);
            if want_collnet {
                assert_eq!(plan.unwrap().algo, Algo::CollNetDirect);
            } else {
                let e = plan.unwrap_err();
                assert!(e.contains("two CollNet aggregation trees"), "{e}");
            }
        }
    }
}
