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
//! completion. Completions are kept per group of flows that share a rate ([`clocks`]): a rate
//! change re-times the group once, however many flows it carries. At the end the
//! network marks the entity with [`FlowDone`] and, for [`Launch::start_for`], sends the
//! owner's own event back at that instant, so several models can share one fabric and each
//! hears only of its own flows.
//!
//! Link sharing: `Shared` (one capacity for both directions), `SplitDuplex` (one per
//! direction), `FatPipe` (each flow alone gets the full bandwidth: a private bound). A route
//! that crosses the same capacity twice loads it twice, as SimGrid does (StarPU's bus files
//! route some GPU-GPU copies through `Host` twice).
//! Switch `contention` off: each flow gets its route's bottleneck bandwidth, ignoring others.

mod clocks;
mod launch;
pub mod maxmin;

use clocks::{Clocks, Ended, on_grid, regrown};
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

const NO_CONS: ConsId = ConsId::MAX;

/// A flow that is moving bytes (its rate and bytes left are its clock's business).
#[derive(Debug, Clone)]
struct Active {
    entity: Entity,
    route: Arc<Route>,
    size: f64,
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
    /// Completion times, per group of flows that share a rate (per flow when contention is
    /// off).
    clocks: Clocks,
    /// Scratch of [`complete_flows`]: the flows that end at this step.
    ended: Vec<Ended>,
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

    /// A flow over `hops` changed rate by `delta`.
    fn add_flow_rate(&mut self, cons: &[[ConsId; 2]], hops: &[Hop], delta: f64) {
        for h in hops {
            let (l, d) = stat_slot(cons, h);
            self.add_rate(l, d, delta);
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
        self.clocks.set_quantum(quantum);
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
        let (slot, clock, rate) = if contention {
            let (cons, bound) = net.constraints_of(&route.0, &topo);
            let bound = match (bound, cap) {
                (Some(b), Some(c)) => Some(b.min(c.0)),
                (b, c) => b.or(c.map(|c| c.0)),
            };
            let slot = net.solver.add_flow(&cons, bound);
            let group = net.solver.group_of(slot);
            (slot, group, net.solver.group_rate(group))
        } else {
            let slot = net.free.pop().unwrap_or(net.active.len() as u32);
            let alone = topo
                .bottleneck(&route.0)
                .min(cap.map_or(f64::INFINITY, |c| c.0));
            (slot, slot, alone)
        };
        net.clocks.join(slot, clock, flow.size, rate, now);
        let active = Active {
            entity: e,
            route: route.0.clone(),
            size: flow.size,
        };
        net.open(slot, active, rate, now);
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
    let net = &mut *net;
    // Flows that end together end in slot order, whichever clocks they were on.
    let mut ended = std::mem::take(&mut net.ended);
    while let Some(e) = net.clocks.pop_ended(now) {
        ended.push(e);
    }
    ended.sort_unstable_by_key(|e| e.slot);
    for e in ended.drain(..) {
        let active = net.close(e.slot, e.rate, now);
        if contention {
            net.solver.remove_flow(e.slot);
        } else {
            net.free.push(e.slot);
        }
        // With a quantum the flow held its share until now; without, now is its exact end
        // rounded to the femtosecond, and the exact end is reported.
        let end_s = if net.quantum == SimTime::ZERO {
            e.end_s
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
    net.ended = ended;
}

/// Re-solves the fair shares: flows that moved between groups take their bytes left to their
/// new group's clock, and each group whose rate changed re-times its clock (once, however
/// many flows it has).
fn reshare_bandwidth(mut net: ResMut<Network>, clock: Res<Clock>) {
    let now = clock.now;
    let Network {
        solver,
        clocks,
        active,
        log,
        cons,
        ..
    } = &mut *net;
    solver.solve();
    for &(slot, group) in solver.moves() {
        let old = clocks.move_to(slot, group, solver.group_rate(group), now);
        if let Some(log) = log.as_deref_mut() {
            let delta = clocks.rate_of(slot) - old;
            log.add_flow_rate(cons, &flow_route(active, slot).hops, delta);
        }
    }
    for &group in solver.changed_groups() {
        if clocks.is_empty(group) {
            // Merged into another: its flows moved.
            continue;
        }
        let rate = solver.group_rate(group);
        let old = clocks.set_rate(group, rate, now);
        if let Some(log) = log.as_deref_mut() {
            for slot in clocks.flows_of(group) {
                log.add_flow_rate(cons, &flow_route(active, slot).hops, rate - old);
            }
        }
    }
}

/// The route of active flow `slot`.
fn flow_route(active: &[Option<Active>], slot: u32) -> &Route {
    &active[slot as usize]
        .as_ref()
        .expect("solver flows are active")
        .route
}

/// The latency phase: a flow that begins at `start` joins the sharing once its route's
/// latency is paid, on the quantum's grid.
fn ready_at(start: SimTime, latency: SimTime, quantum: SimTime) -> SimTime {
    on_grid(start.saturating_add(latency), quantum)
}

/// Keeps the one calendar event of the network at its earliest completion.
fn schedule_next_completion(mut net: ResMut<Network>, mut cal: ResMut<Calendar>) {
    match net.clocks.settle_next() {
        Some(due) => cal.retime(due, NextCompletion),
        None => {
            cal.cancel(NextCompletion);
        }
    }
}

impl Network {
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

    fn open(&mut self, slot: u32, active: Active, rate: f64, now: SimTime) {
        for h in &active.route.hops {
            let (l, d) = stat_slot(&self.cons, h);
            let s = &mut self.stats[l];
            if s.active[d] == 0 {
                s.since[d] = now;
            }
            s.active[d] += 1;
            if let Some(log) = self.log.as_deref_mut()
                && rate != 0.0
            {
                log.add_rate(l, d, rate);
            }
        }
        if self.active.len() <= slot as usize {
            self.active.resize(slot as usize + 1, None);
        }
        self.active[slot as usize] = Some(active);
    }

    fn close(&mut self, slot: u32, rate: f64, now: SimTime) -> Active {
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
                log.add_rate(l, d, -rate);
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
    let now = world.resource::<Clock>().now;
    let stuck: Vec<(Entity, f64, f64)> = (net.active.iter().enumerate())
        .filter_map(|(slot, a)| a.as_ref().map(|a| (slot as u32, a)))
        .map(|(slot, a)| (a.entity, net.clocks.left(slot, now), a.size))
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
