//! The network plugin: fluid flows sharing link bandwidth with max-min fairness, as in
//! SimGrid's CM02 model (TCP-gamma off, latency and bandwidth factors 1) with one
//! simplification: every flow weighs the same, where CM02 divides a link in inverse
//! proportion to each flow's route latency. The two agree whenever the flows that meet on a
//! link have routes of equal latency (tests/smpi_oracle.rs lists the fat-tree cases where
//! they do not).
//!
//! Every model moves bytes through one entry point, [`Launch::start`] (or
//! [`Launch::start_for`] when it waits for the end; the models reach it through [`Reach::flow`],
//! which routes first): the network spawns the flow's entity,
//! pays its route's latency without using bandwidth, joins it to the max-min solver
//! ([`maxmin`]), and moves its bytes at its fair rate, re-shared at every start and
//! completion. Only flows whose rate changed get their completion re-timed. At the end the
//! network marks the entity with [`FlowDone`] and, for [`Launch::start_for`], sends the
//! owner's own event back at that instant, so several models can share one fabric and each
//! hears only of its own flows.
//!
//! Link sharing: `Shared` (one capacity for both directions), `SplitDuplex` (one per
//! direction), `FatPipe` (each flow alone gets the full bandwidth: a private bound). A route
//! that crosses the same capacity twice loads it twice, as SimGrid does (StarPU's bus files
//! route some GPU-GPU copies through `Host` twice).
//! Switch `contention` off: each flow gets its route's bottleneck bandwidth, ignoring others.

mod launch;
pub mod maxmin;

use launch::DoneNotice;
pub use launch::{FlowRequest, FlowSpec, Launch, Reach, Start};

use bevy_app::{App, Plugin};
use bevy_ecs::prelude::*;
use std::sync::Arc;

use hetsim_components::{Flow, FlowDone, LinkUsage};
use hetsim_engine::record::{Interval, Recorder, ResId, ResourceKind, Sample, Transfer};
use hetsim_engine::{
    Calendar, Clock, Inbox, SimAppExt, SimEvent, SimFinish, SimSet, SimStartup, SimStep,
    StartupSet, Switches, Timeline,
};
use hetsim_schema::SimTime;
use hetsim_schema::scenario::Sharing;

use crate::platform::{Hop, LinkEntities, Route, Topology};
use maxmin::{ConsId, MaxMin};
use orx_priority_queue::{PriorityQueue, PriorityQueueDecKey, QuaternaryHeapOfIndices};

/// The route a flow takes, and the latency it pays first (the route's, or none for a model
/// whose own latency term holds the hops').
#[derive(Component, Debug, Clone)]
pub struct FlowRoute(pub Arc<Route>, pub SimTime);

hetsim_engine::entity_event!(
    /// A flow begins: it pays its route latency next.
    FlowStart,
    "network.flow_start"
);
hetsim_engine::entity_event!(
    /// A flow's latency is paid: it starts sharing bandwidth.
    FlowReady,
    "network.flow_ready"
);

/// A flow's own rate limit in bytes/s (a sender that cannot go faster, such as one NCCL
/// channel's thread block): a private bound in the max-min solve.
#[derive(Component, Debug, Clone, Copy)]
pub struct FlowCap(pub f64);

/// The earliest flow completion is due (one pending instance, re-timed after every solve).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct NextCompletion;

impl SimEvent for NextCompletion {
    const NAME: &'static str = "network.next_completion";
    fn pack(&self) -> (Entity, u64) {
        (Entity::PLACEHOLDER, 0)
    }
    fn unpack(_: Entity, _: u64) -> Self {
        NextCompletion
    }
}

/// Completion times of the flows in progress, by slot: a d-ary heap with a position array,
/// so that the hundreds of re-timings one solve may cause cost a sift each, not a hash.
/// Ties at equal times break by slot, deterministically.
///
/// A key may be *early*: a lower bound on its flow's completion. A rate that drops moves a
/// completion later, and that re-timing is left until the key reaches the top
/// ([`Network::settle_next`]), where it is corrected; most never get there before the rate
/// changes again. The top, once settled, is the exact earliest completion, so flows complete
/// in the same order as with exact keys.
struct Completions {
    /// Keyed by [`SimTime::key`] of the completion time and the slot (ties go by slot).
    heap: QuaternaryHeapOfIndices<usize, u128>,
}

impl Default for Completions {
    fn default() -> Self {
        Completions {
            heap: QuaternaryHeapOfIndices::with_index_bound(1024),
        }
    }
}

impl Completions {
    /// Keys `slot` at `due`, earlier than its key if it has one.
    fn lower(&mut self, slot: u32, due: SimTime) {
        if slot as usize >= self.heap.index_bound() {
            self.heap = regrown(&self.heap, (slot as usize + 1).next_power_of_two());
        }
        self.heap
            .decrease_key_or_push(&(slot as usize), due.key(slot as u64));
    }

    /// Switches `slot`'s flow to `rate` at `now` and re-keys it if its completion comes
    /// sooner than its key; a later one leaves the key early. Returns the old rate.
    fn retime(
        &mut self,
        slot: u32,
        active: &mut Active,
        rate: f64,
        now: SimTime,
        quantum: SimTime,
    ) -> f64 {
        let old = active.rate;
        active.set_rate(rate, now, quantum);
        if active.key.is_none_or(|key| active.due < key) {
            active.key = Some(active.due);
            self.lower(slot, active.due);
        }
        old
    }

    /// Moves `slot`'s key to exactly `due` (later than its early key).
    fn correct(&mut self, slot: u32, due: SimTime) {
        self.heap.update_key(&(slot as usize), due.key(slot as u64));
    }

    /// The slot with the earliest key (the flow keeps the key's exact time beside it).
    fn top(&self) -> Option<u32> {
        self.heap.peek().map(|(slot, _)| *slot as u32)
    }

    fn pop(&mut self) -> Option<u32> {
        self.heap.pop().map(|(slot, _)| slot as u32)
    }
}

/// A copy of an indexed heap with room for node indices below `bound` (at least its own).
pub(crate) fn regrown<K: PartialOrd + Clone>(
    heap: &QuaternaryHeapOfIndices<usize, K>,
    bound: usize,
) -> QuaternaryHeapOfIndices<usize, K> {
    QuaternaryHeapOfIndices::from_iter_with_index_bound(
        bound.max(heap.index_bound()),
        heap.as_slice().iter().cloned(),
    )
}

const NO_CONS: ConsId = ConsId::MAX;

/// A flow that is moving bytes.
#[derive(Debug, Clone)]
struct Active {
    entity: Entity,
    route: Arc<Route>,
    size: f64,
    /// Bytes left at `since`.
    remaining: f64,
    rate: f64,
    since: SimTime,
    /// Exact completion time in seconds at the current rate.
    end_s: f64,
    /// Its completion event's time: `end_s` rounded to the femtosecond, on the quantum's grid
    /// (exact; the heap's key may be early).
    due: SimTime,
    /// Its key in the heap of completions, once it has one.
    key: Option<SimTime>,
}

/// Per link and direction: bytes carried, busy time, flows in progress.
#[derive(Debug, Clone, Default)]
struct LinkStats {
    bytes: [f64; 2],
    busy: [f64; 2],
    active: [u32; 2],
    since: [SimTime; 2],
}

/// The network's state: the solver, its constraints per link, and flows in progress.
#[derive(Resource, Default)]
pub struct Network {
    solver: MaxMin,
    /// Constraint of each link direction (`NO_CONS` for fat pipes).
    cons: Vec<[ConsId; 2]>,
    /// Flows in progress, by slot (the solver's flow id when contention is on).
    active: Vec<Option<Active>>,
    free: Vec<u32>,
    completions: Completions,
    stats: Vec<LinkStats>,
    /// What the recorder is owed since the last step (`None` when nothing is recorded).
    log: Option<Box<LinkLog>>,
    /// Flows join and leave the sharing only at multiples of this (zero: at any time).
    quantum: SimTime,
}

/// Link activity waiting to be handed to the [`Recorder`] at the end of a step.
#[derive(Debug, Default)]
struct LinkLog {
    /// Busy periods that ended: (link, direction, start, end).
    busy: Vec<(u32, usize, SimTime, SimTime)>,
    /// Sum of the rates of the flows crossing each link direction, in bytes/s.
    rate: Vec<[f64; 2]>,
    /// Link directions whose rate changed this step.
    touched: Vec<(u32, usize)>,
    touched_mark: Vec<[bool; 2]>,
    /// The recorder's row of each link direction, once it has one (so that a step names
    /// the rows it samples without formatting and hashing their names again).
    rows: Vec<[Option<ResId>; 2]>,
    /// Flows that ended this step, with their exact end in seconds.
    done: Vec<(Entity, f64)>,
}

impl LinkLog {
    fn new(links: usize) -> Self {
        LinkLog {
            rate: vec![[0.0; 2]; links],
            touched_mark: vec![[false; 2]; links],
            rows: vec![[None; 2]; links],
            ..Default::default()
        }
    }

    fn add_rate(&mut self, link: usize, dir: usize, delta: f64) {
        self.rate[link][dir] += delta;
        if !self.touched_mark[link][dir] {
            self.touched_mark[link][dir] = true;
            self.touched.push((link as u32, dir));
        }
    }
}

impl Network {
    /// Re-shares at most once per `quantum` (see the scenario's `network_model.quantum`).
    pub fn set_quantum(&mut self, quantum: SimTime) {
        self.quantum = quantum;
    }

    /// The max-min solver's work counters.
    pub fn solver_stats(&self) -> maxmin::SolveStats {
        self.solver.stats
    }
}

pub struct NetworkPlugin;

impl Plugin for NetworkPlugin {
    fn build(&self, app: &mut App) {
        app.add_sim_event::<FlowStart>()
            .add_sim_event::<FlowReady>()
            .add_sim_event::<NextCompletion>()
            .register_switch(
                "contention",
                true,
                "max-min fair sharing of link bandwidth; off: every flow gets its route's bottleneck bandwidth alone",
            )
            .describe_model(
                "network",
                include_str!("summary.txt"),
            )
            .init_resource::<Network>()
            .add_systems(SimStartup, build_constraints.in_set(StartupSet::Models))
            .add_systems(
                SimStep,
                (
                    begin_latency,
                    admit_ready_flows,
                    complete_flows,
                    reshare_bandwidth,
                    schedule_next_completion,
                )
                    .chain()
                    .in_set(SimSet::Network)
                    .run_if(network_has_news),
            )
            .add_systems(SimFinish, publish_link_usage)
            .add_stall_check(stuck_flows);
    }

    /// The recording system, only when the run records a timeline (the `Recorder` is set
    /// before `App::finish`): a system costs every step even when it has nothing to do.
    fn finish(&self, app: &mut App) {
        if app.world().resource::<Recorder>().is_on() {
            app.add_systems(SimStep, record_link_activity.in_set(SimSet::Record));
        }
    }
}

/// One solver constraint per shared link, two per split-duplex link, none for fat pipes.
fn build_constraints(
    topo: Option<Res<Topology>>,
    mut net: ResMut<Network>,
    recorder: Res<Recorder>,
) {
    let Some(topo) = topo else { return };
    if recorder.is_on() {
        net.log = Some(Box::new(LinkLog::new(topo.links.len())));
    }
    net.cons = topo
        .links
        .iter()
        .map(|l| match l.sharing {
            Sharing::Shared => {
                let c = net.solver.add_constraint(l.bandwidth);
                [c, c]
            }
            Sharing::SplitDuplex => [
                net.solver.add_constraint(l.bandwidth),
                net.solver.add_constraint(l.bandwidth),
            ],
            Sharing::FatPipe => [NO_CONS, NO_CONS],
        })
        .collect();
    net.stats = vec![LinkStats::default(); topo.links.len()];
}

/// Whether a flow starts, joins the sharing or ends at this step: otherwise rates and the
/// next completion stand as they are (its calendar event keeps its place: events of one time
/// are delivered together, each kind to its own inbox).
fn network_has_news(
    starts: Res<Inbox<FlowStart>>,
    ready: Res<Inbox<FlowReady>>,
    ends: Res<Inbox<NextCompletion>>,
) -> bool {
    !(starts.is_empty() && ready.is_empty() && ends.is_empty())
}

fn begin_latency(
    mut inbox: ResMut<Inbox<FlowStart>>,
    mut time: Timeline,
    net: Res<Network>,
    routes: Query<&FlowRoute>,
) {
    for FlowStart(e) in inbox.drain() {
        let latency = routes.get(e).map_or(SimTime::ZERO, |r| r.1);
        let ready = ready_at(time.now(), latency, net.quantum);
        time.calendar.schedule(ready, FlowReady(e));
    }
}

fn admit_ready_flows(
    mut inbox: ResMut<Inbox<FlowReady>>,
    mut net: ResMut<Network>,
    mut time: Timeline,
    switches: Res<Switches>,
    topo: Res<Topology>,
    flows: Query<(&Flow, &FlowRoute, Option<&DoneNotice>, Option<&FlowCap>)>,
    mut commands: Commands,
) {
    let contention = switches.is_on("contention");
    let now = time.now();
    for FlowReady(e) in inbox.drain() {
        debug_assert_eq!(on_grid(now, net.quantum), now, "flows join on the grid");
        let Ok((flow, route, notify, cap)) = flows.get(e) else {
            continue;
        };
        if route.0.hops.is_empty() || flow.size <= 0.0 {
            // Nothing to share: done as soon as the latency is paid.
            commands.entity(e).insert(FlowDone {
                end_s: now.as_secs_f64(),
            });
            if let Some(log) = &mut net.log {
                log.done.push((e, now.as_secs_f64()));
            }
            if let Some(DoneNotice(notice)) = notify {
                time.calendar.schedule_raw(now, *notice);
            }
            continue;
        }
        let slot = if contention {
            let (cons, bound) = net.constraints_of(&route.0, &topo);
            let bound = match (bound, cap) {
                (Some(b), Some(c)) => Some(b.min(c.0)),
                (b, c) => b.or(c.map(|c| c.0)),
            };
            net.solver.add_flow(&cons, bound)
        } else {
            net.free.pop().unwrap_or(net.active.len() as u32)
        };
        let mut active = Active {
            entity: e,
            route: route.0.clone(),
            size: flow.size,
            remaining: flow.size,
            rate: 0.0,
            since: now,
            end_s: f64::INFINITY,
            due: SimTime::MAX,
            key: None,
        };
        if !contention {
            let alone = topo
                .bottleneck(&route.0)
                .min(cap.map_or(f64::INFINITY, |c| c.0));
            let quantum = net.quantum;
            net.completions
                .retime(slot, &mut active, alone, now, quantum);
        }
        net.open(slot, active, now);
    }
}

fn complete_flows(
    mut inbox: ResMut<Inbox<NextCompletion>>,
    mut net: ResMut<Network>,
    clock: Res<Clock>,
    switches: Res<Switches>,
    notify: Query<&DoneNotice>,
    mut cal: ResMut<Calendar>,
    mut commands: Commands,
) {
    if inbox.drain().count() == 0 {
        return;
    }
    let contention = switches.is_on("contention");
    let now = clock.now;
    while let Some(due) = net.settle_next()
        && due <= now
    {
        let slot = net
            .completions
            .pop()
            .expect("a settled completion is pending");
        let active = net.close(slot, now);
        // The end is a time in f64 seconds: late in a long run its last bit is worth more
        // than a femtosecond, and that much time at the flow's rate is rounding, not loss.
        debug_assert!(
            active.remaining - active.rate * (active.end_s - active.since.as_secs_f64())
                <= 1e-6 * active.size.max(1.0)
                    + active.rate * (4.0 * f64::EPSILON * active.end_s + 1e-15),
            "bytes are conserved"
        );
        if contention {
            net.solver.remove_flow(slot);
        } else {
            net.free.push(slot);
        }
        // With a quantum the flow held its share until now; without, now is its exact end
        // rounded to the femtosecond, and the exact end is reported.
        let end_s = if net.quantum == SimTime::ZERO {
            active.end_s
        } else {
            now.as_secs_f64()
        };
        commands.entity(active.entity).insert(FlowDone { end_s });
        if let Some(log) = &mut net.log {
            log.done.push((active.entity, end_s));
        }
        if let Ok(DoneNotice(notice)) = notify.get(active.entity) {
            cal.schedule_raw(now, *notice);
        }
    }
}

/// Re-solves the fair shares and re-times the completions of the flows whose rate changed.
fn reshare_bandwidth(mut net: ResMut<Network>, clock: Res<Clock>) {
    let now = clock.now;
    let net = &mut *net;
    net.solver.solve();
    for &slot in net.solver.changed() {
        let rate = net.solver.rate(slot);
        let active = net.active[slot as usize]
            .as_mut()
            .expect("solver flows are active");
        let old = net.completions.retime(slot, active, rate, now, net.quantum);
        if let Some(log) = net.log.as_deref_mut() {
            for h in &active.route.hops {
                let (l, d) = stat_slot(&net.cons, h);
                log.add_rate(l, d, rate - old);
            }
        }
    }
}

/// The latency phase: a flow that begins at `start` joins the sharing once its route's
/// latency is paid, on the quantum's grid.
fn ready_at(start: SimTime, latency: SimTime, quantum: SimTime) -> SimTime {
    on_grid(start.saturating_add(latency), quantum)
}

/// The first multiple of `quantum` not before `t` (`t` itself if the quantum is zero).
fn on_grid(t: SimTime, quantum: SimTime) -> SimTime {
    match quantum.0 {
        0 => t,
        q => SimTime(t.0.div_ceil(q).saturating_mul(q)),
    }
}

/// Keeps the one calendar event of the network at its earliest completion.
fn schedule_next_completion(mut net: ResMut<Network>, mut cal: ResMut<Calendar>) {
    match net.settle_next() {
        Some(due) => cal.retime(due, NextCompletion),
        None => {
            cal.cancel(NextCompletion);
        }
    }
}

impl Active {
    /// Brings the byte count up to `now` at the old rate, then switches to `rate` and
    /// re-times the completion (the exact end rounded to the femtosecond, never before now,
    /// on the `quantum`'s grid).
    fn set_rate(&mut self, rate: f64, now: SimTime, quantum: SimTime) {
        let elapsed = now.saturating_sub(self.since).as_secs_f64();
        self.remaining = (self.remaining - self.rate * elapsed).max(0.0);
        self.rate = rate;
        self.since = now;
        self.end_s = now.as_secs_f64() + self.remaining / rate;
        self.due = on_grid(SimTime::from_secs_saturating(self.end_s).max(now), quantum);
    }
}

impl Network {
    /// The earliest completion, exactly: early keys that reach the top of the heap are
    /// moved to their flow's completion until the top's key is its own.
    fn settle_next(&mut self) -> Option<SimTime> {
        loop {
            let slot = self.completions.top()?;
            let active = self.active[slot as usize]
                .as_mut()
                .expect("pending completions are of active flows");
            let key = active.key.expect("a pending completion has a key");
            debug_assert!(key <= active.due, "a key is never late");
            if key == active.due {
                return Some(key);
            }
            active.key = Some(active.due);
            self.completions.correct(slot, active.due);
        }
    }

    fn constraints_of(&self, route: &Route, topo: &Topology) -> (Vec<ConsId>, Option<f64>) {
        let mut cons = Vec::with_capacity(route.hops.len());
        let mut bound: Option<f64> = None;
        for h in &route.hops {
            match self.cons[h.link as usize][h.dir.index()] {
                NO_CONS => {
                    let bw = topo.links[h.link as usize].bandwidth;
                    bound = Some(bound.map_or(bw, |b| b.min(bw)));
                }
                c => cons.push(c),
            }
        }
        (cons, bound)
    }

    fn open(&mut self, slot: u32, active: Active, now: SimTime) {
        for h in &active.route.hops {
            let (l, d) = stat_slot(&self.cons, h);
            let s = &mut self.stats[l];
            if s.active[d] == 0 {
                s.since[d] = now;
            }
            s.active[d] += 1;
            if let Some(log) = self.log.as_deref_mut()
                && active.rate != 0.0
            {
                log.add_rate(l, d, active.rate);
            }
        }
        if self.active.len() <= slot as usize {
            self.active.resize(slot as usize + 1, None);
        }
        self.active[slot as usize] = Some(active);
    }

    fn close(&mut self, slot: u32, now: SimTime) -> Active {
        let active = self.active[slot as usize]
            .take()
            .expect("a completing flow is active");
        for h in &active.route.hops {
            let (l, d) = stat_slot(&self.cons, h);
            let s = &mut self.stats[l];
            s.bytes[d] += active.size;
            s.active[d] -= 1;
            if s.active[d] == 0 {
                s.busy[d] += now.saturating_sub(s.since[d]).as_secs_f64();
            }
            if let Some(log) = self.log.as_deref_mut() {
                log.add_rate(l, d, -active.rate);
                if s.active[d] == 0 {
                    log.busy.push((l as u32, d, s.since[d], now));
                }
            }
        }
        active
    }
}

/// Where a hop's traffic is counted: its link, and its direction (always 0 on links whose one
/// capacity serves both directions).
fn stat_slot(cons: &[[ConsId; 2]], hop: &Hop) -> (usize, usize) {
    let [a, b] = cons
        .get(hop.link as usize)
        .copied()
        .unwrap_or([NO_CONS, NO_CONS]);
    let shared = a == b && a != NO_CONS;
    (hop.link as usize, if shared { 0 } else { hop.dir.index() })
}

/// The recorder's row of link `link` in direction `dir` (kept in `rows`), registered on first
/// use.
fn link_row_id(
    rows: &mut [[Option<ResId>; 2]],
    rec: &mut Recorder,
    topo: &Topology,
    link: usize,
    dir: usize,
) -> ResId {
    *rows[link][dir]
        .get_or_insert_with(|| rec.resource(ResourceKind::Link, &link_row(topo, link, dir)))
}

/// The timeline row of a link direction: the link's name, with `:up` or `:down` when each
/// direction has its own capacity.
fn link_row(topo: &Topology, link: usize, dir: usize) -> String {
    let info = &topo.links[link];
    match info.sharing {
        Sharing::Shared => info.name.clone(),
        _ => format!("{}:{}", info.name, ["up", "down"][dir]),
    }
}

/// The kind of an endpoint row, from its name.
fn endpoint_kind(name: &str) -> ResourceKind {
    if name.contains(".gpu[") {
        ResourceKind::Gpu
    } else if name.ends_with(".host") {
        ResourceKind::Host
    } else if name.contains(".nic[") {
        ResourceKind::Nic
    } else if name.contains(".cpu[") {
        ResourceKind::CpuCore
    } else if name.contains(".rank[") {
        ResourceKind::Rank
    } else {
        ResourceKind::Other
    }
}

/// Hands the step's link activity to the recorder: ended busy periods (state `busy`), link
/// utilisation samples (counter `utilisation`, % of bandwidth), and finished flows as transfers
/// from their source to their destination.
fn record_link_activity(
    mut net: ResMut<Network>,
    mut rec: ResMut<Recorder>,
    clock: Res<Clock>,
    topo: Option<Res<Topology>>,
    flows: Query<&Flow>,
) {
    let (Some(log), Some(topo)) = (net.log.as_deref_mut(), topo) else {
        return;
    };
    let busy = rec.name_id("busy");
    for (l, d, start, end) in log.busy.drain(..) {
        let resource = link_row_id(&mut log.rows, &mut rec, &topo, l as usize, d);
        rec.interval(Interval {
            resource,
            state: busy,
            label: None,
            start,
            end,
        });
    }
    let utilisation = rec.counter_id("utilisation", "%");
    for (l, d) in log.touched.drain(..) {
        let (l, d) = (l as usize, d);
        log.touched_mark[l][d] = false;
        let bandwidth = topo.links[l].bandwidth;
        let mut rate = log.rate[l][d];
        // Sums of rates drift by rounding; an idle link is exactly idle.
        if rate.abs() <= 1e-9 * bandwidth {
            rate = 0.0;
            log.rate[l][d] = 0.0;
        }
        let resource = link_row_id(&mut log.rows, &mut rec, &topo, l, d);
        rec.sample(Sample {
            resource,
            counter: utilisation,
            at: clock.now,
            value: 100.0 * rate / bandwidth,
        });
    }
    for (e, end_s) in log.done.drain(..) {
        let Ok(flow) = flows.get(e) else { continue };
        let from = rec.resource(endpoint_kind(&flow.src), &flow.src);
        let to = rec.resource(endpoint_kind(&flow.dst), &flow.dst);
        let label = rec.name_id(&flow.id.as_text());
        rec.transfer(Transfer {
            from,
            to,
            label,
            bytes: flow.size,
            start: flow.start,
            end: SimTime::from_secs_saturating(end_s).max(flow.start),
        });
    }
}

fn publish_link_usage(
    net: Res<Network>,
    links: Option<Res<LinkEntities>>,
    mut usage: Query<&mut LinkUsage>,
) {
    let Some(links) = links else { return };
    for (i, &e) in links.0.iter().enumerate() {
        if let (Ok(mut u), Some(s)) = (usage.get_mut(e), net.stats.get(i)) {
            u.bytes = s.bytes;
            u.busy = s.busy;
        }
    }
}

/// Flows still moving bytes when no event is left (a model error: every active flow has a
/// pending completion).
fn stuck_flows(world: &mut World) -> Vec<String> {
    let net = world.resource::<Network>();
    let stuck: Vec<(Entity, f64, f64)> = net
        .active
        .iter()
        .flatten()
        .map(|a| (a.entity, a.remaining, a.size))
        .collect();
    stuck
        .into_iter()
        .map(|(e, left, size)| {
            let name = world.get::<Flow>(e).map_or_else(
                || format!("{e:?}"),
                |f| format!("{} ({} -> {})", f.id, f.src, f.dst),
            );
            format!("flow {name}: {left} of {size} bytes never delivered")
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn flow(bytes: f64) -> Active {
        Active {
            entity: Entity::PLACEHOLDER,
            route: Arc::new(Route::default()),
            size: bytes,
            remaining: bytes,
            rate: 0.0,
            since: SimTime::ZERO,
            end_s: f64::INFINITY,
            due: SimTime::MAX,
            key: None,
        }
    }

    fn secs(s: f64) -> SimTime {
        SimTime::from_secs_saturating(s)
    }

    /// Keys `bytes` at `rate` from t = 0 into slot `slot`.
    fn start(net: &mut Network, slot: u32, bytes: f64, rate: f64) {
        net.active
            .resize(net.active.len().max(slot as usize + 1), None);
        let mut a = flow(bytes);
        net.completions
            .retime(slot, &mut a, rate, SimTime::ZERO, SimTime::ZERO);
        net.active[slot as usize] = Some(a);
    }

    fn retime(net: &mut Network, slot: u32, rate: f64, now: SimTime) {
        let a = net.active[slot as usize].as_mut().unwrap();
        net.completions.retime(slot, a, rate, now, SimTime::ZERO);
    }

    /// 1 GB at 1 GB/s ends at 1 s, 1 GB at 0.5 GB/s at 2 s. The first drops to 0.25 GB/s
    /// at once (its end moves to 4 s): its key stays at 1 s until it reaches the top, and
    /// the earliest completion is then the second's, at 2 s.
    #[test]
    fn a_later_completion_keeps_its_early_key_until_it_tops_the_heap() {
        let mut net = Network::default();
        start(&mut net, 0, 1e9, 1e9);
        start(&mut net, 1, 1e9, 5e8);
        retime(&mut net, 0, 2.5e8, SimTime::ZERO);
        assert_eq!(net.completions.top(), Some(0));
        assert_eq!(
            net.active[0].as_ref().unwrap().key,
            Some(secs(1.0)),
            "early key kept"
        );
        assert_eq!(net.settle_next(), Some(secs(2.0)));
        assert_eq!(net.completions.top(), Some(1));
        assert_eq!(net.active[0].as_ref().unwrap().key, Some(secs(4.0)));
    }

    /// A completion that comes sooner is re-keyed at once; at equal times the lower slot
    /// completes first, as with exact keys.
    #[test]
    fn a_sooner_completion_is_rekeyed_and_ties_go_by_slot() {
        let mut net = Network::default();
        start(&mut net, 0, 1e9, 2.5e8);
        start(&mut net, 1, 1e9, 5e8);
        // At 1 s flow 0 has 0.75 GB left; at 0.75 GB/s it ends at 2 s, with flow 1.
        retime(&mut net, 0, 7.5e8, secs(1.0));
        assert_eq!(net.settle_next(), Some(secs(2.0)));
        assert_eq!(net.completions.pop(), Some(0));
        assert_eq!(net.settle_next(), Some(secs(2.0)));
        assert_eq!(net.completions.pop(), Some(1));
        assert_eq!(net.settle_next(), None);
    }
}
