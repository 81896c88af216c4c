//! Exact max-min fair rates (progressive filling), re-solved incrementally.
//!
//! Progressive filling raises every unfrozen flow's rate together (the *level*); when a
//! constraint fills, the flows still growing through it freeze at that level. The solution
//! gives each flow a rate and a *bottleneck* constraint, and each constraint the level at
//! which it filled (its saturation level, infinite if it never filled).
//!
//! Re-solving from scratch at every flow start and end costs the whole connected component,
//! and random routes tie everything into one. This solver instead replays progressive filling
//! only where the answer can differ. A *clean* constraint (no flow on it changed) fills at its
//! old level and freezes the same flows at the same rates, so it needs no work at all. Only
//! *dirty* constraints (a flow on it was added, removed, or changed rate) are tracked, in a
//! heap keyed by the level at which they would fill. A flow nobody has touched is assumed to
//! freeze at its old rate; that assumption fails only when (a) a dirty constraint fills below
//! its old rate, freezing it lower, or (b) its old bottleneck is dirty and its old level passes
//! without filling (an *expiry* event), after which the flow keeps growing. Either way the
//! flow becomes touched and its constraints dirty. The work per re-solve is thus the changed
//! region, not the component. The result is the same allocation a full progressive filling
//! computes (checked by property tests against a from-scratch solve).
//!
//! Each tracked constraint keeps running totals (rate of its frozen flows, count of its
//! growing ones) that every change updates in O(1), and a compacted list of its untouched
//! flows above the level. A flow that froze can only delay a fill, so such changes mark the
//! key stale (a lower bound, recomputed when it reaches the top of the heap); a flow that
//! grows can advance a fill, so that key is recomputed at once when the list is short, and
//! otherwise replaced by an O(1) lower bound (the listed flows counted as growing), stale
//! in its turn.
//!
//! Most dirty constraints are not saturated (on the halo-exchange runs, 93 % of them) and
//! never fill. Those are tracked *lazily*: by totals alone, with every untouched member
//! counted at its old rate (each constraint keeps the running sum of its members' rates), so
//! `(capacity - frozen) / growing` is a lower bound on the fill level at O(1) per change. Only
//! when the solve's level reaches that bound are the members scanned.
//!
//! Levels within a relative 1e-12 of a flow's old rate count as equal, so floating-point noise
//! does not start cascades of no-op changes.
//!
//! Flows that share a bottleneck share a rate, so the solver's unit is a *group*: the flows
//! with one bottleneck and one rate to the bit (see `groups.rs`). Everything above is done per
//! group, each crossing a constraint with a weight (the times its flows' routes list it): a
//! constraint lists groups, and a re-solve touches, notifies, scans and re-rates groups; it
//! lists the groups whose rate changed and the flows that moved between groups, so that the
//! caller too can keep time per group (`network/clocks.rs`). A group whose flows do not all
//! cross a constraint that fills parts there; the groups that froze on one bottleneck at one
//! rate merge after the solve, once each has been re-rated in a few solves (a new flow starts
//! alone, and most of a collective's or a trace's short flows end before they would merge).
//! On halo3d at 480 ranks a solve touches 12 groups where it touched 168 flows.

use smallvec::SmallVec;

mod events;
mod groups;

use events::{Events, Kind};

/// Index of a constraint (a link, or one direction of a split-duplex link).
pub type ConsId = u32;
/// Index of a flow in the solver.
pub type FlowId = u32;
/// Index of a group: flows with one bottleneck and one rate, solved as one (an id is reused
/// once its group is gone).
pub type GroupId = u32;

const NONE: u32 = u32::MAX;
const REL_TOL: f64 = 1e-12;
/// A scanned constraint that a growing flow may fill sooner is re-keyed exactly if it lists
/// at most this many untouched flows, else by [`MaxMin::listed_bound`], made exact only if
/// it reaches the top of the heap: an exact fill level costs a pass over the list (often two
/// or three), and most re-keys are overtaken by the next change before they come due. At 16
/// (against none), 30,000 flows over 600 links ran 52.7 s against 101.7 s (130 M exact
/// re-keys against 44 M; see ARCHITECTURE.md); at 4, case_n10000_t0 runs 8.7 % faster than
/// at 16 (3.4 % faster than at 8, slower at 2 and 0), the other benches within 0.3 %.
const EXACT_REKEY_MAX: u32 = 4;
/// Relative share of a capacity a lazy bound leaves aside for rounding in running loads.
const LOAD_MARGIN: f64 = 1e-9;

/// A solve's number, modulo 2^16 (when it wraps, every stamp is reset: an O(flows +
/// constraints) pass every 65,535 solves, which keeps [`Hot`] in one cache line).
type Epoch = u16;

/// An untouched flow not yet below the level, with its weight on the constraint and its old
/// rate (arena entries: copies, so that re-keys read one contiguous array).
#[derive(Debug, Clone, Copy)]
struct Member {
    flow: GroupId,
    weight: u32,
    rate: f64,
}

/// A group's hot state, in one 64-byte record (a cache line): every member scan reads it,
/// and a group that changes reads its route right after, so the solution, the per-solve
/// state and the route share a line.
#[derive(Debug, Clone)]
#[repr(align(64))]
struct Hot {
    /// Solve in which the group was last touched (`scratch` is valid while it matches).
    epoch: Epoch,
    /// Some weight is not 1 (more than one flow, or a route listing a constraint twice): the
    /// weights are in its `GroupSlot` (read only then, so that lone flows cost no lookup).
    weighted: bool,
    /// Solves a new flow's group is still to be re-rated in before it may merge
    /// ([`groups::FRESH_SOLVES`]), so that flows that end after a few rates (a collective's,
    /// a trace's short messages) do not pay for merging.
    fresh: u8,
    bottleneck: ConsId,
    /// Rate in the current solution.
    rate: f64,
    /// The per-solve [`Scratch`], packed so that `lone` fits the line: `scratch_cons` is
    /// `NONE` while growing, and `scratch_level` negative when kept (see [`Hot::scratch`]).
    scratch_level: f64,
    scratch_cons: ConsId,
    /// The group's flow while it has exactly one (else `NONE`), so that a lone group's
    /// change is listed without reading its `GroupSlot`.
    lone: FlowId,
    /// The constraints the group's flows cross (each once; see `weighted`).
    cons: SmallVec<[ConsId; 6]>,
}

const _: () = assert!(std::mem::size_of::<Hot>() == 64, "one cache line per flow");

impl Default for Hot {
    fn default() -> Self {
        Hot {
            epoch: 0,
            weighted: false,
            fresh: 0,
            bottleneck: NONE,
            rate: 0.0,
            scratch_level: 0.0,
            scratch_cons: NONE,
            lone: NONE,
            cons: SmallVec::new(),
        }
    }
}

impl Hot {
    fn scratch(&self) -> Scratch {
        match self.scratch_cons {
            NONE => Scratch::Growing,
            c if self.scratch_level < 0.0 => Scratch::Kept(c),
            c => Scratch::Frozen(self.scratch_level, c),
        }
    }

    fn set_scratch(&mut self, s: Scratch) {
        (self.scratch_level, self.scratch_cons) = match s {
            Scratch::Growing => (0.0, NONE),
            Scratch::Frozen(level, c) => {
                debug_assert!(level >= 0.0 && c != NONE, "a level, on a constraint");
                (level, c)
            }
            Scratch::Kept(c) => (-1.0, c),
        };
    }
}

/// A group on a constraint's member list, with its weight there (the times its flows' routes
/// list the constraint).
#[derive(Debug, Clone, Copy)]
struct Entry {
    group: GroupId,
    weight: u32,
    /// Where this constraint is in the group's `Hot::cons` (so that an entry moved within
    /// the list finds its way back in O(1)).
    back: u32,
}

/// A constraint's member list (read by scans only).
#[derive(Debug, Clone)]
struct Constraint {
    members: Vec<Entry>,
    /// A flow's private bound (fat-pipe links), released with its flow.
    private: bool,
}

/// A constraint's hot state, in one 64-byte record (a cache line): every change a flow
/// makes reads or writes it for each constraint on its route.
#[derive(Debug, Clone, Copy)]
#[repr(align(64))]
struct ConsState {
    capacity: f64,
    /// Sum of the members' weighted rates in the current solution, kept up to date by every
    /// rate change (so a lower bound on the fill level costs no scan).
    load: f64,
    /// Saturation level in the current solution.
    level: f64,
    track: Track,
}

const _: () = assert!(
    std::mem::size_of::<ConsState>() == 64,
    "one cache line per constraint"
);

/// Per-solve state of a tracked constraint (valid while `epoch` matches the solve's).
#[derive(Debug, Clone, Copy, Default)]
struct Track {
    epoch: Epoch,
    /// Tracked by totals alone (an unsaturated constraint whose members were not scanned):
    /// `frozen` then counts every untouched member at its old rate, and the fill key is
    /// only a lower bound until the members are scanned.
    lazy: bool,
    filled: bool,
    stale: bool,
    /// Waiting in `rekey_queue` for an eager re-key at the end of the current event.
    queued: bool,
    fill_level: f64,
    /// Sum of the weighted rates of flows known frozen (touched, or untouched below the
    /// level).
    frozen: f64,
    /// Sum of the weights of touched flows still growing.
    growing: u32,
    /// Untouched flows not yet below the level: `arena[start..start + len]`.
    start: u32,
    len: u32,
    /// Sum of the weights of those flows (touched ones included until compacted).
    listed: u32,
}

/// Per-solve state of a touched flow.
#[derive(Debug, Clone, Copy, PartialEq)]
enum Scratch {
    Growing,
    /// Frozen at a new rate on this constraint (its constraints were told).
    Frozen(f64, ConsId),
    /// Frozen at exactly its old rate on this constraint: nobody needs telling, and it
    /// counts as untouched everywhere.
    Kept(ConsId),
}

/// How a touched flow changed, as the constraints it crosses must account for it.
#[derive(Debug, Clone, Copy, PartialEq)]
enum Change {
    /// Was assumed to freeze at its old rate; froze at this lower level instead.
    FrozeBelow(f64),
    /// Was growing; froze at this level.
    FrozeGrowing(f64),
    /// Was assumed to freeze at its old rate; keeps growing past it.
    Grows,
    /// Newly added (growing from zero), or removed from a seed constraint.
    Added,
    /// Froze at exactly its old rate (no one is told).
    Kept,
    /// A flow on it was removed: no member changed, but it must be tracked.
    Seed,
}

/// A group's flows and where it sits on each constraint it crosses (parallel to its
/// `Hot::cons`), in one 64-byte record (a cache line): a removal that swap-removes a
/// constraint's member fixes up the moved member's position here, in a random group, so the
/// positions share a line with nothing they would push out. Weights and counts are kept
/// apart, and only for groups that need them: a lone flow over each constraint once (most
/// groups of collectives' short flows) has weight 1 and count 1 everywhere.
#[derive(Debug, Clone, Default)]
#[repr(align(64))]
struct GroupSlot {
    /// Its position in each constraint's `members`.
    pos: SmallVec<[u32; 6]>,
    flows: SmallVec<[FlowId; 2]>,
    /// Its weight and count on each constraint; `None` while every weight and count is 1.
    #[allow(clippy::box_collection)] // boxed so that the record keeps to one cache line
    shares: Option<Box<Vec<Share>>>,
}

const _: () = assert!(
    std::mem::size_of::<GroupSlot>() == 64,
    "one cache line per group"
);

impl GroupSlot {
    /// Times its flows' routes list its `k`-th constraint.
    fn weight(&self, k: usize) -> u32 {
        self.shares.as_ref().map_or(1, |s| s[k].weight)
    }

    /// Some weight is not 1.
    fn any_weighted(&self) -> bool {
        self.shares
            .as_ref()
            .is_some_and(|s| s.iter().any(|s| s.weight != 1))
    }

    /// Its weights and counts, written out as 1 each where they were implicit.
    fn shares_mut(&mut self) -> &mut Vec<Share> {
        debug_assert!(
            self.shares.is_some() || self.flows.len() <= 1,
            "only a group of one flow leaves its weights and counts implicit"
        );
        let n = self.pos.len();
        self.shares
            .get_or_insert_with(|| Box::new(vec![Share::ONE; n]))
    }
}

/// A group on one of its constraints.
#[derive(Debug, Clone, Copy, Default)]
struct Share {
    /// Times its flows' routes list the constraint.
    weight: u32,
    /// How many of its flows cross it.
    count: u32,
}

impl Share {
    /// One flow that lists the constraint once: what a group without written-out shares has
    /// on each of its constraints.
    const ONE: Share = Share {
        weight: 1,
        count: 1,
    };
}

/// A flow: its group, and its own route once it shares a group. A flow alone in the group it
/// was added in lends its route to the group (its route is the group's `Hot::cons`, in order,
/// and its weights the group's) until the group merges: a lone flow, most of them, keeps
/// 24 bytes here.
#[derive(Debug, Clone, Default)]
struct FlowSlot {
    group: GroupId,
    /// Where the flow is in its group's `GroupSlot::flows`.
    at: u32,
    own: Option<Box<OwnRoute>>,
    /// A bit per constraint on its own route ([`route_bit`]; read only with `own`), so that
    /// a group parting on a constraint rules out most of its other flows without reading
    /// their routes (it fits the record's padding).
    mask: u32,
    alive: bool,
}

const _: () = assert!(
    std::mem::size_of::<FlowSlot>() == 24,
    "a flow's record stays small"
);

/// Bit `c mod 32`: a constraint's bit in a [`FlowSlot`]'s mask.
fn route_bit(c: ConsId) -> u32 {
    1 << (c % 32)
}

/// A flow's own route: each constraint once, with the times it is listed if not once each.
#[derive(Debug, Clone)]
struct OwnRoute {
    cons: SmallVec<[ConsId; 6]>,
    weights: Option<Box<[u32]>>,
}

impl FlowSlot {
    /// The flow's own route (empty while it lends its route to its group).
    fn cons(&self) -> &[ConsId] {
        self.own.as_ref().map_or(&[], |r| &r.cons)
    }

    /// Its own route crosses `c`.
    fn crosses(&self, c: ConsId) -> bool {
        self.mask & route_bit(c) != 0 && self.cons().contains(&c)
    }

    /// Times the flow's own route lists its `i`-th constraint.
    fn weight(&self, i: usize) -> u32 {
        let weights = self.own.as_ref().and_then(|r| r.weights.as_ref());
        weights.map_or(1, |w| w[i])
    }
}

/// Work done by the solver, for profiling and the benchmarks' notes.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct SolveStats {
    pub solves: u64,
    /// Constraints tracked (dirty), summed over solves.
    pub dirty: u64,
    /// Fill-level computations.
    pub rekeys: u64,
    /// ... of which stale keys popped from the heap.
    pub stale_rekeys: u64,
    /// Heap entries popped (fills and expiries, current or outdated).
    pub pops: u64,
    /// Flows touched (re-frozen or re-grown), summed over solves.
    pub touched: u64,
    /// Flows whose rate changed, summed over solves.
    pub changed: u64,
    /// ... of which flows that had a rate before, by relative size of the change between
    /// [`CHANGE_SIZE_BOUNDS`]: below 1e-9, 1e-9 to 1e-6, 1e-6 to 1e-3, and 1e-3 or more.
    /// (Completion times exact to 1e-9 cannot skip any but the first.)
    pub changed_by_size: [u64; 4],
    /// ... of which flows that had a rate before and kept their bottleneck: they changed
    /// with the level of the constraint that limits them (what a solver over groups of flows
    /// with one bottleneck would re-rate once per group).
    pub same_bottleneck: u64,
    /// Constraints tracked by totals alone (unsaturated, not scanned), summed over solves.
    pub lazy: u64,
    /// ... of which had to be scanned after all (their fill bound was reached).
    pub materialized: u64,
}

/// The max-min solver: constraints, flows over them, and their current fair rates.
#[derive(Debug, Clone, Default)]
pub struct MaxMin {
    pub stats: SolveStats,
    cons: Vec<Constraint>,
    state: Vec<ConsState>,
    free_private: Vec<ConsId>,
    flows: Vec<FlowSlot>,
    free_flows: Vec<FlowId>,
    groups: Vec<GroupSlot>,
    /// Per-group rate, bottleneck and per-solve state, by group id.
    hot: Vec<Hot>,
    free_groups: Vec<GroupId>,
    /// Touched groups still growing in the current solve.
    growing: u32,
    /// Constraints and groups changed since the last solve.
    dirty_seed: Vec<ConsId>,
    added: Vec<GroupId>,
    /// Scratch of [`MaxMin::merge_groups`], by constraint: the first group of the solve that
    /// froze on it (`NONE` between solves).
    first: Vec<GroupId>,
    /// Scratch of [`MaxMin::absorb`], by constraint: where it is in the absorbing group's
    /// `Hot::cons`, plus one (0: not there; all 0 between calls).
    index: Vec<u32>,
    epoch: Epoch,
    // Per-solve scratch, kept to reuse allocations.
    heap: Events,
    arena: Vec<Member>,
    /// Dirty constraints that were scanned (their level is written at the end; a lazy one
    /// stays unsaturated unless it is scanned).
    scanned: Vec<ConsId>,
    touched: Vec<GroupId>,
    /// Touched groups past their first solves, which may merge after this one.
    merging: Vec<GroupId>,
    moved: Vec<(GroupId, Change)>,
    /// Constraints whose fill may have come sooner: re-keyed once the event's changes are in.
    rekey_queue: Vec<ConsId>,
    /// The route of the flow being propagated (see [`MaxMin::propagate`]).
    route: Vec<ConsId>,
    /// Groups whose rate changed at the last solve (new ones included).
    changed: Vec<GroupId>,
    /// Flows that moved to another group in the last solve, with the group, in the order
    /// they moved.
    moves: Vec<(FlowId, GroupId)>,
}

impl MaxMin {
    pub fn new() -> Self {
        Self::default()
    }

    /// Adds a shared capacity (bytes per second).
    pub fn add_constraint(&mut self, capacity: f64) -> ConsId {
        debug_assert!(capacity > 0.0 && capacity.is_finite());
        self.cons.push(Constraint {
            members: Vec::new(),
            private: false,
        });
        self.state.push(ConsState {
            capacity,
            load: 0.0,
            level: f64::INFINITY,
            track: Track::default(),
        });
        (self.cons.len() - 1) as ConsId
    }

    pub fn constraint_count(&self) -> usize {
        self.cons.len()
    }

    /// Adds a flow over `cons` with an optional private rate bound (the smallest fat-pipe
    /// bandwidth on its route). A constraint listed `k` times carries the flow `k` times, as
    /// in SimGrid (tools/simgrid/duplicate-link.cpp). A flow needs at least one limit.
    pub fn add_flow(&mut self, cons: &[ConsId], bound: Option<f64>) -> FlowId {
        let id = self.free_flows.pop().unwrap_or_else(|| {
            self.flows.push(FlowSlot::default());
            (self.flows.len() - 1) as FlowId
        });
        assert!(
            !cons.is_empty() || bound.is_some(),
            "a flow needs at least one constraint"
        );
        let private = bound.map(|b| self.private_constraint(b));
        let listed_twice = (1..cons.len()).any(|i| cons[..i].contains(&cons[i]));
        let g = match listed_twice {
            false => self.group_of_one(id, cons, private, None),
            true => {
                // Room for routes across a fat-tree and back (longer ones spill to the heap).
                let mut list: SmallVec<[ConsId; 16]> = SmallVec::new();
                let mut weights: SmallVec<[u32; 16]> = SmallVec::new();
                for &c in cons.iter().chain(&private) {
                    match list.iter().position(|&x| x == c) {
                        Some(k) => weights[k] += 1,
                        None => {
                            list.push(c);
                            weights.push(1);
                        }
                    }
                }
                self.group_of_one(id, &list, None, Some(&weights))
            }
        };
        self.added.push(g);
        id
    }

    fn private_constraint(&mut self, capacity: f64) -> ConsId {
        match self.free_private.pop() {
            Some(c) => {
                let k = &mut self.state[c as usize];
                k.capacity = capacity;
                k.load = 0.0;
                k.level = f64::INFINITY;
                c
            }
            None => {
                let c = self.add_constraint(capacity);
                self.cons[c as usize].private = true;
                c
            }
        }
    }

    /// Removes a flow; the rates of the others change at the next [`MaxMin::solve`].
    pub fn remove_flow(&mut self, id: FlowId) {
        debug_assert!(self.flows[id as usize].alive, "flow {id} removed twice");
        let g = self.flows[id as usize].group;
        let rate = self.hot[g as usize].rate;
        let alone = self.hot[g as usize].lone == id;
        if alone {
            // The group goes with its flow: it leaves each constraint as the load drops.
            let cons = std::mem::take(&mut self.hot[g as usize].cons);
            let slot = std::mem::take(&mut self.groups[g as usize]);
            for (k, (&c, &p)) in cons.iter().zip(&slot.pos).enumerate() {
                self.remove_entry(c, p);
                self.release(c, slot.weight(k) as f64 * rate);
            }
        } else {
            debug_assert!(
                self.flows[id as usize].own.is_some(),
                "a flow that shares its group has its own route"
            );
            for i in 0..self.flows[id as usize].cons().len() {
                let flow = &self.flows[id as usize];
                let (c, w) = (flow.cons()[i], flow.weight(i));
                self.release(c, w as f64 * rate);
            }
            self.detach(id);
        }
        let flow = &mut self.flows[id as usize];
        flow.alive = false;
        flow.group = NONE;
        flow.own = None;
        if alone {
            self.added.retain(|&x| x != g);
            self.free_groups.push(g);
        }
        self.free_flows.push(id);
    }

    /// A flow that loaded constraint `c` with `load` left it: a private bound is freed, a
    /// shared constraint is re-solved.
    #[inline]
    fn release(&mut self, c: ConsId, load: f64) {
        self.state[c as usize].load -= load;
        if self.cons[c as usize].private {
            self.state[c as usize].level = f64::INFINITY;
            self.free_private.push(c);
        } else {
            self.dirty_seed.push(c);
        }
    }

    /// The constraints flow `id` crosses (its own, or lent to its group).
    fn route(&self, id: FlowId) -> &[ConsId] {
        let flow = &self.flows[id as usize];
        match &flow.own {
            None => &self.hot[flow.group as usize].cons,
            Some(route) => &route.cons,
        }
    }

    pub fn rate(&self, id: FlowId) -> f64 {
        self.hot[self.flows[id as usize].group as usize].rate
    }

    /// The group of live flow `id`: the flows that share its rate.
    pub fn group_of(&self, id: FlowId) -> GroupId {
        self.flows[id as usize].group
    }

    /// The rate of each of group `g`'s flows.
    pub fn group_rate(&self, g: GroupId) -> f64 {
        self.hot[g as usize].rate
    }

    /// Live flows.
    pub fn flow_ids(&self) -> impl Iterator<Item = FlowId> + '_ {
        self.flows
            .iter()
            .enumerate()
            .filter(|(_, f)| f.alive)
            .map(|(i, _)| i as FlowId)
    }

    /// The groups whose rate changed at the last solve (new ones included), in no set order.
    /// A group's flows are those it has now: flows that moved in the solve are listed by
    /// [`MaxMin::moves`], and a listed group may have lost all its flows (to a merge).
    pub fn changed_groups(&self) -> &[GroupId] {
        &self.changed
    }

    /// The flows that moved to another group in the last solve (parted from their group, or
    /// merged into another), with the group they moved to, in the order they moved: a flow
    /// that moved twice is listed twice. A group's rate is the one its flows had before
    /// they moved, unless [`MaxMin::changed_groups`] lists it.
    pub fn moves(&self) -> &[(FlowId, GroupId)] {
        &self.moves
    }

    /// Re-solves after adds and removes; see [`MaxMin::changed_groups`] and
    /// [`MaxMin::moves`] for what changed.
    pub fn solve(&mut self) {
        self.changed.clear();
        self.moves.clear();
        if self.dirty_seed.is_empty() && self.added.is_empty() {
            return;
        }
        self.epoch = self.epoch.wrapping_add(1);
        if self.epoch == 0 {
            self.state.iter_mut().for_each(|s| s.track.epoch = 0);
            self.hot.iter_mut().for_each(|h| h.epoch = 0);
            self.epoch = 1;
        }
        self.heap.reserve(self.cons.len());
        let added = std::mem::take(&mut self.added);
        for &f in &added {
            self.touch(f, Scratch::Growing);
        }
        let seeds = std::mem::take(&mut self.dirty_seed);
        for &c in &seeds {
            self.notify(c, 0.0, Change::Seed, 0.0, 0);
        }
        for &f in &added {
            self.propagate(f, 0.0, Change::Added);
        }
        self.flush_rekeys(0.0);
        self.fill();
        self.stats.solves += 1;
        self.stats.touched += self.touched.len() as u64;
        self.commit();
        self.added = added;
        self.added.clear();
        self.dirty_seed = seeds;
        self.dirty_seed.clear();
    }

    /// Processes fill and expiry events in level order until none is left.
    fn fill(&mut self) {
        loop {
            if self.growing == 0 {
                self.heap.drop_bounds();
            }
            let Some((c, kind, level)) = self.heap.pop() else {
                break;
            };
            self.stats.pops += 1;
            let t = self.state[c as usize].track;
            match kind {
                Kind::Fill if t.stale => self.rekey(c, level),
                Kind::Fill => self.on_fill(c, level),
                Kind::Expire if !t.filled => self.on_expire(c, level),
                Kind::Expire => {}
            }
        }
    }

    /// A dirty constraint fills at `level`: every flow still growing through it freezes there.
    fn on_fill(&mut self, c: ConsId, level: f64) {
        let t = &mut self.state[c as usize].track;
        t.filled = true;
        t.fill_level = level;
        self.heap.clear(c, Kind::Expire);
        let mut moved = std::mem::take(&mut self.moved);
        for e in &self.cons[c as usize].members {
            let g = e.group;
            let h = &self.hot[g as usize];
            if h.epoch == self.epoch {
                if h.scratch() == Scratch::Growing {
                    moved.push((g, Change::FrozeGrowing(level)));
                }
            } else if same_level(h.rate, level) {
                // Freezes here at its old rate: nothing downstream changes.
                moved.push((g, Change::Kept));
            } else if h.rate > level {
                moved.push((g, Change::FrozeBelow(level)));
            }
        }
        for &(g, change) in &moved {
            let (g, change) = match self.part_on(g, c) {
                None => (g, change),
                // Only some of the group's flows cross `c`: they part from the others, and a
                // part that kept its rate freezes at the level like the rest (a group has one
                // rate to the bit; the two differ by at most the tolerance).
                Some(part) if change == Change::Kept => (part, Change::FrozeBelow(level)),
                Some(part) => (part, change),
            };
            match change {
                Change::Kept => self.touch(g, Scratch::Kept(c)),
                Change::FrozeBelow(rate) | Change::FrozeGrowing(rate) => {
                    self.touch(g, Scratch::Frozen(rate, c));
                    self.propagate(g, level, change);
                }
                Change::Grows | Change::Added | Change::Seed => {
                    unreachable!("fills only freeze")
                }
            }
        }
        moved.clear();
        self.moved = moved;
        self.flush_rekeys(level);
    }

    /// A dirty constraint's old level passes without it filling: the untouched flows it used
    /// to bottleneck keep growing.
    fn on_expire(&mut self, c: ConsId, level: f64) {
        let mut moved = std::mem::take(&mut self.moved);
        for e in &self.cons[c as usize].members {
            let g = e.group;
            let h = &self.hot[g as usize];
            if h.epoch != self.epoch && h.bottleneck == c {
                moved.push((g, Change::Grows));
            }
        }
        for &(g, _) in &moved {
            self.touch(g, Scratch::Growing);
            self.propagate(g, level, Change::Grows);
        }
        moved.clear();
        self.moved = moved;
        self.flush_rekeys(level);
    }

    fn touch(&mut self, g: GroupId, s: Scratch) {
        let h = &mut self.hot[g as usize];
        let was_growing = h.epoch == self.epoch && h.scratch() == Scratch::Growing;
        if h.epoch != self.epoch {
            h.epoch = self.epoch;
            self.touched.push(g);
        }
        self.growing = self.growing + (s == Scratch::Growing) as u32 - was_growing as u32;
        h.set_scratch(s);
    }

    /// Group `g` changed at `level`: every constraint it crosses must account for it.
    fn propagate(&mut self, g: GroupId, level: f64, change: Change) {
        let h = &self.hot[g as usize];
        let (old, weighted) = (h.rate, h.weighted);
        // The route is copied out once: read through `self` it would be looked up again for
        // every constraint (`notify` may change the solver).
        let mut route = std::mem::take(&mut self.route);
        route.extend_from_slice(&h.cons);
        if weighted {
            for (k, &c) in route.iter().enumerate() {
                let weight = self.groups[g as usize].weight(k);
                self.notify(c, level, change, old, weight);
            }
        } else {
            for &c in &route {
                self.notify(c, level, change, old, 1);
            }
        }
        route.clear();
        self.route = route;
    }

    /// Tells a constraint that one of its flows (whose rate was `old`, and which it carries
    /// `weight` times) changed at `level`; starts tracking it if needed, updates its totals,
    /// and re-keys it (lazily when the change can only delay it).
    ///
    /// Inlined into its callers, with the first notice out of line: most notices find the
    /// constraint tracked already and only update its totals.
    #[inline(always)]
    fn notify(&mut self, c: ConsId, level: f64, change: Change, old: f64, weight: u32) {
        let t = &self.state[c as usize].track;
        if t.epoch != self.epoch {
            if self.first_notice(c, level) {
                return;
            }
        } else if t.filled {
            return;
        }
        let t = &mut self.state[c as usize].track;
        // What `frozen` already counts for a flow that was untouched: its old rate when lazy;
        // nothing when scanned (it sat in the arena, above the level).
        let counted = if t.lazy { old } else { 0.0 };
        let w = weight as f64;
        match change {
            Change::FrozeBelow(x) => t.frozen += w * (x - counted),
            Change::FrozeGrowing(x) => {
                t.frozen += w * x;
                t.growing -= weight;
            }
            Change::Grows => {
                t.frozen -= w * counted;
                t.growing += weight;
            }
            // New flows were counted by the first scan of a scanned constraint (adds all
            // happen before tracking starts); a lazy one counts them here.
            Change::Added if t.lazy => t.growing += weight,
            Change::Added | Change::Kept | Change::Seed => return,
        }
        if matches!(change, Change::FrozeBelow(_) | Change::FrozeGrowing(_)) {
            // Also right when no fill is pending: a freeze cannot make it fill.
            t.stale = true;
            return;
        }
        self.queue_rekey(c);
    }

    /// Starts tracking constraint `c` at its first notice in this solve: by its members if it
    /// is saturated (its fill and expiry need them; the scan accounts for the change, so this
    /// returns true), else lazily by its totals (false: the change is still to be counted).
    #[inline(never)]
    fn first_notice(&mut self, c: ConsId, level: f64) -> bool {
        if self.state[c as usize].level.is_finite() {
            self.start_tracking(c, level);
            if !self.state[c as usize].track.filled {
                self.queue_rekey(c);
            }
            return true;
        }
        self.start_lazy(c);
        false
    }

    fn queue_rekey(&mut self, c: ConsId) {
        let t = &mut self.state[c as usize].track;
        if !t.queued {
            t.queued = true;
            self.rekey_queue.push(c);
        }
    }

    /// Re-keys the constraints queued by the changes of one event, once each.
    fn flush_rekeys(&mut self, level: f64) {
        let mut queue = std::mem::take(&mut self.rekey_queue);
        for &c in &queue {
            self.state[c as usize].track.queued = false;
            if !self.state[c as usize].track.filled {
                self.push_fill(c, level);
            }
        }
        queue.clear();
        self.rekey_queue = queue;
    }

    /// Recomputes a constraint's fill level and pushes it (a lower bound, for a lazy one).
    fn push_fill(&mut self, c: ConsId, level: f64) {
        if self.state[c as usize].track.lazy {
            self.state[c as usize].track.stale = true;
            let bound = self.lazy_bound(c, level);
            self.heap.set_bound(c, bound);
            return;
        }
        if self.state[c as usize].track.len > EXACT_REKEY_MAX {
            self.state[c as usize].track.stale = true;
            let bound = self.listed_bound(c, level);
            self.heap.set_fill(c, bound);
            return;
        }
        let fill = self.fill_level_of(c, level).max(level);
        self.state[c as usize].track.stale = false;
        self.heap.set_fill(c, fill);
    }

    /// A lower bound on a scanned constraint's fill level (at least `level`), in O(1): its
    /// listed flows are counted as growing, though each stops at its old rate (and the
    /// touched ones among them are counted twice), so the load at level L is at most
    /// `frozen + (growing + listed) * L` and reaches the capacity no sooner than the bound.
    /// Only called with flows listed, so the slope is positive.
    fn listed_bound(&self, c: ConsId, level: f64) -> f64 {
        let s = &self.state[c as usize];
        let slope = s.track.growing + s.track.listed;
        debug_assert!(slope > 0, "a long list has weight");
        ((s.capacity - s.track.frozen) / slope as f64).max(level)
    }

    /// First change on an unsaturated constraint: track it by totals, without a scan.
    fn start_lazy(&mut self, c: ConsId) {
        self.stats.lazy += 1;
        self.stats.dirty += 1;
        self.state[c as usize].track = Track {
            epoch: self.epoch,
            lazy: true,
            frozen: self.state[c as usize].load,
            ..Track::default()
        };
    }

    /// A lower bound on a lazy constraint's fill level (at least `level`), infinite if it
    /// cannot fill. Untouched flows keep at most their old rates and growing flows all run
    /// at the level, so the (weighted) load at level L is at most `frozen + growing * L`.
    /// The capacity is shaded by [`LOAD_MARGIN`] because `load` is a running sum.
    fn lazy_bound(&self, c: ConsId, level: f64) -> f64 {
        let t = &self.state[c as usize].track;
        let room = self.state[c as usize].capacity * (1.0 - LOAD_MARGIN) - t.frozen;
        if t.growing == 0 {
            return if room > 0.0 { f64::INFINITY } else { level };
        }
        (room / t.growing as f64).max(level)
    }

    /// Turns a lazy constraint into a scanned one at `level`.
    fn materialize(&mut self, c: ConsId, level: f64) {
        self.stats.materialized += 1;
        self.scanned.push(c);
        let mut t = self.scan_members(c, level);
        let old = self.state[c as usize].track;
        t.queued = old.queued;
        t.stale = old.stale;
        self.state[c as usize].track = t;
    }

    /// First change on a saturated constraint in this solve: totals from its members'
    /// current states, and an expiry at its old level.
    fn start_tracking(&mut self, c: ConsId, level: f64) {
        let old = self.state[c as usize].level;
        debug_assert!(
            old.is_finite(),
            "unsaturated constraints are tracked lazily"
        );
        self.stats.dirty += 1;
        self.scanned.push(c);
        if old < level && !same_level(old, level) {
            // Clean until now and already full below `level`: it filled as before.
            self.state[c as usize].track = Track {
                epoch: self.epoch,
                filled: true,
                fill_level: old,
                ..Track::default()
            };
            return;
        }
        self.heap.set(c, Kind::Expire, old);
        self.state[c as usize].track = self.scan_members(c, level);
    }

    /// A tracked constraint's totals at `level` from its members' current states; untouched
    /// members not below the level go to the arena. Also re-sums the constraint's load, so
    /// that rounding in the running sum does not build up.
    fn scan_members(&mut self, c: ConsId, level: f64) -> Track {
        let mut t = Track {
            epoch: self.epoch,
            start: self.arena.len() as u32,
            ..Track::default()
        };
        let k = &self.cons[c as usize];
        let mut load = 0.0;
        for e in &k.members {
            let (g, weight) = (e.group, e.weight);
            let h = &self.hot[g as usize];
            let w = weight as f64;
            load += w * h.rate;
            match self.untouched_rate(h) {
                Some(r) if r < level && !same_level(r, level) => t.frozen += w * r,
                Some(rate) => {
                    t.listed += weight;
                    self.arena.push(Member {
                        flow: g,
                        weight,
                        rate,
                    })
                }
                None => match h.scratch() {
                    Scratch::Growing => t.growing += weight,
                    Scratch::Frozen(x, _) => t.frozen += w * x,
                    Scratch::Kept(_) => unreachable!("kept flows count as untouched"),
                },
            }
        }
        self.state[c as usize].load = load;
        t.len = self.arena.len() as u32 - t.start;
        t
    }

    /// The rate a member is assumed to freeze at, if it behaves as untouched (never touched,
    /// or touched but frozen at exactly its old rate, which changes nothing downstream).
    fn untouched_rate(&self, h: &Hot) -> Option<f64> {
        if h.epoch != self.epoch || matches!(h.scratch(), Scratch::Kept(_)) {
            Some(h.rate)
        } else {
            None
        }
    }

    /// A stale key reached the top: recompute it, and fill now if it still is the lowest.
    fn rekey(&mut self, c: ConsId, level: f64) {
        self.stats.stale_rekeys += 1;
        if self.state[c as usize].track.lazy {
            let bound = self.lazy_bound(c, level);
            if bound > level && !same_level(bound, level) {
                // Still cannot fill here: no scan yet.
                self.heap.set_bound(c, bound);
                return;
            }
            self.materialize(c, level);
        }
        let raw = self.fill_level_of(c, level);
        debug_assert!(
            raw >= level * (1.0 - 1e-9),
            "a stale key is a lower bound: {raw} < {level}"
        );
        let fill = raw.max(level);
        self.state[c as usize].track.stale = false;
        if same_level(fill, level) {
            self.on_fill(c, fill);
        } else {
            self.heap.set_fill(c, fill);
        }
    }

    /// The level at which a tracked constraint fills if untouched flows freeze at their old
    /// rates and growing flows keep growing; infinite if it never fills. Compacts the list of
    /// untouched flows on the way: touched ones are already in the totals, and those below
    /// the level are frozen for good.
    fn fill_level_of(&mut self, c: ConsId, level: f64) -> f64 {
        self.stats.rekeys += 1;
        let mut t = self.state[c as usize].track;
        let (start, end) = (t.start as usize, (t.start + t.len) as usize);
        let mut write = start;
        // Weight of the untouched flows kept: each grows with the level until it freezes.
        let mut weights = 0;
        for i in start..end {
            let m = self.arena[i];
            match self.untouched_rate(&self.hot[m.flow as usize]) {
                Some(r) if r < level && !same_level(r, level) => t.frozen += m.weight as f64 * r,
                Some(_) => {
                    self.arena[write] = m;
                    write += 1;
                    weights += m.weight as usize;
                }
                None => {}
            }
        }
        t.len = (write - start) as u32;
        t.listed = weights as u32;
        self.state[c as usize].track = t;
        // Raise the candidate level, freezing every untouched flow below it, until none is.
        let future = &self.arena[start..write];
        let capacity = self.state[c as usize].capacity;
        let (mut frozen, mut slope) = (t.frozen, t.growing as usize + weights);
        let mut below = f64::NEG_INFINITY;
        loop {
            if slope == 0 {
                return f64::INFINITY;
            }
            let fill = (capacity - frozen) / slope as f64;
            let mut absorbed = false;
            for m in future.iter().filter(|m| m.rate >= below && m.rate < fill) {
                frozen += m.weight as f64 * m.rate;
                slope -= m.weight as usize;
                absorbed = true;
            }
            if !absorbed {
                return fill;
            }
            below = fill;
        }
    }

    /// Writes the new rates, bottlenecks and levels; lists the flows whose rate changed.
    fn commit(&mut self) {
        debug_assert_eq!(self.growing, 0, "every touched flow froze");
        for i in 0..self.touched.len() {
            let g = self.touched[i];
            let h = &mut self.hot[g as usize];
            let old = h.rate;
            let (rate, b) = match h.scratch() {
                Scratch::Frozen(rate, b) => (rate, b),
                Scratch::Kept(b) => (old, b),
                Scratch::Growing => {
                    unreachable!("every touched flow freezes: each crosses a finite constraint")
                }
            };
            let changed = rate != old || h.bottleneck == NONE;
            let same = h.bottleneck == b;
            h.rate = rate;
            h.bottleneck = b;
            // Merging waits out a group's first solves (counted here, where its line is read).
            match h.fresh {
                0 => self.merging.push(g),
                _ => h.fresh -= 1,
            }
            if changed {
                self.changed.push(g);
                // A lone flow (most groups of collectives' short flows) is counted without
                // reading its group's `GroupSlot`.
                let n = match h.lone {
                    NONE => self.groups[g as usize].flows.len() as u64,
                    _ => 1,
                };
                self.stats.changed += n;
                if old > 0.0 {
                    self.stats.changed_by_size[size_class((rate - old) / old)] += n;
                    self.stats.same_bottleneck += n * u64::from(same);
                }
                let h = &self.hot[g as usize];
                let slot = h.weighted.then(|| &self.groups[g as usize]);
                for (k, &c) in h.cons.iter().enumerate() {
                    let w = slot.map_or(1, |slot| slot.weight(k));
                    self.state[c as usize].load += w as f64 * (rate - old);
                }
            }
        }
        self.merge_groups();
        for &c in &self.scanned {
            let t = &self.state[c as usize].track;
            self.state[c as usize].level = if t.filled {
                t.fill_level
            } else {
                f64::INFINITY
            };
        }
        self.touched.clear();
        self.scanned.clear();
        self.arena.clear();
    }

    /// Checks feasibility and the max-min bottleneck property (for tests and debug builds):
    /// no constraint over capacity, and every flow crosses a full constraint on which no
    /// flow has a larger rate.
    pub fn check(&self, rel_tol: f64) -> Result<(), String> {
        let rate = |g: GroupId| self.hot[g as usize].rate;
        let load = |c: ConsId| {
            self.cons[c as usize]
                .members
                .iter()
                .map(|e| e.weight as f64 * rate(e.group))
                .sum::<f64>()
        };
        for (i, c) in self.state.iter().enumerate() {
            let l = load(i as ConsId);
            if (c.load - l).abs() > 1e-12 * c.capacity.max(l) {
                return Err(format!("constraint {i}: running load {} != {l}", c.load));
            }
            if l > c.capacity * (1.0 + rel_tol) {
                return Err(format!(
                    "constraint {i} over capacity: {l} > {}",
                    c.capacity
                ));
            }
        }
        for g in self.flow_ids() {
            let r = self.rate(g);
            let ok = self.route(g).iter().any(|&c| {
                let k = &self.cons[c as usize];
                load(c) >= self.state[c as usize].capacity * (1.0 - rel_tol)
                    && k.members
                        .iter()
                        .all(|m| rate(m.group) <= r * (1.0 + rel_tol))
            });
            if !ok {
                return Err(format!("flow {g} (rate {r}) has no bottleneck"));
            }
        }
        Ok(())
    }
}

/// Where the buckets of [`SolveStats::changed_by_size`] split, in relative rate change.
pub const CHANGE_SIZE_BOUNDS: [f64; 3] = [1e-9, 1e-6, 1e-3];

/// The [`SolveStats::changed_by_size`] bucket of a relative rate change.
fn size_class(relative: f64) -> usize {
    let r = relative.abs();
    CHANGE_SIZE_BOUNDS.iter().filter(|&&b| r >= b).count()
}

/// Equal within the relative tolerance; an infinite level (never fills) equals nothing.
fn same_level(a: f64, b: f64) -> bool {
    a.is_finite() && b.is_finite() && (a - b).abs() <= REL_TOL * a.abs().max(b.abs())
}

#[cfg(test)]
mod tests {
    use super::*;

    impl MaxMin {
        /// The flows of the groups whose rate changed at the last solve, in id order (what
        /// changed when no group merged in the solve).
        fn changed_flows(&self) -> Vec<FlowId> {
            let mut flows: Vec<FlowId> = (self.changed.iter())
                .flat_map(|&g| self.groups[g as usize].flows.iter().copied())
                .collect();
            flows.sort_unstable();
            flows
        }
    }

    /// a on [l] and b on [l, m] share l's 1 GB/s (m has 0.6 GB/s): one bottleneck, one rate,
    /// so they merge once their groups have been re-rated past [`groups::FRESH_SOLVES`]
    /// (a third flow on l comes and goes), and the merge lists the moved flow. Then d joins
    /// on m: m fills at 0.3 GB/s for b and d, so b parts from a (listed as a move) while a
    /// takes the 0.7 GB/s left on l.
    #[test]
    fn merges_and_parts_list_the_flows_that_moved() {
        let mut m = MaxMin::new();
        let l = m.add_constraint(1e9);
        let wide = m.add_constraint(6e8);
        let a = m.add_flow(&[l], None);
        let b = m.add_flow(&[l, wide], None);
        m.solve();
        assert!(m.moves().is_empty());
        let mut merged = None;
        for _ in 0..=groups::FRESH_SOLVES {
            let c = m.add_flow(&[l], None);
            m.solve();
            m.remove_flow(c);
            m.solve();
            if !m.moves().is_empty() {
                merged = Some(m.moves().to_vec());
            }
        }
        let g = m.group_of(a);
        assert_eq!(m.group_of(b), g, "merged");
        let merged = merged.expect("the merge was listed");
        assert_eq!(merged.len(), 1);
        assert!(merged[0] == (a, g) || merged[0] == (b, g));
        assert_eq!(m.group_rate(g), 5e8);
        let d = m.add_flow(&[wide], None);
        m.solve();
        let part = m.group_of(b);
        assert_ne!(part, m.group_of(a));
        assert_eq!(m.moves(), &[(b, part)]);
        assert_eq!((m.rate(a), m.rate(b), m.rate(d)), (7e8, 3e8, 3e8));
        assert!(m.changed_groups().contains(&part));
        m.check(1e-12).unwrap();
    }

    #[test]
    fn two_flows_share_one_link() {
        let mut m = MaxMin::new();
        let l = m.add_constraint(1e9);
        let a = m.add_flow(&[l], None);
        let b = m.add_flow(&[l], None);
        m.solve();
        assert_eq!(m.changed_flows(), &[a, b]);
        assert_eq!((m.rate(a), m.rate(b)), (5e8, 5e8));
        m.remove_flow(a);
        m.solve();
        assert_eq!(m.changed_flows(), &[b]);
        assert_eq!(m.rate(b), 1e9);
    }

    /// The parking lot of the reference notes: links of 1, 3 and 2 GB/s, one long flow over
    /// all three, one short flow on l0, three on l1, one on l2. Progressive filling: l0 fills
    /// at 0.5 (long and s0 get 0.5 GB/s); then l1 has 2.5 GB/s left for s1a-c: 5/6 each; l2
    /// gives s2 the remaining 1.5 GB/s.
    #[test]
    fn parking_lot_rates_by_hand() {
        let mut m = MaxMin::new();
        let l: Vec<_> = [1e9, 3e9, 2e9]
            .iter()
            .map(|&c| m.add_constraint(c))
            .collect();
        let long = m.add_flow(&l, None);
        let s0 = m.add_flow(&[l[0]], None);
        let s1: Vec<_> = (0..3).map(|_| m.add_flow(&[l[1]], None)).collect();
        let s2 = m.add_flow(&[l[2]], None);
        m.solve();
        assert_eq!(m.rate(long), 5e8);
        assert_eq!(m.rate(s0), 5e8);
        for &s in &s1 {
            assert!((m.rate(s) - 2.5e9 / 3.0).abs() < 1e-3);
        }
        assert_eq!(m.rate(s2), 1.5e9);
        // s0 leaves: long is limited by l1 now, 3 GB/s over 4 flows. s1a-c (on l1) and s2
        // (on l2) change with their bottleneck's level; long changes bottleneck.
        assert_eq!(m.stats.same_bottleneck, 0, "new flows are not counted");
        m.remove_flow(s0);
        m.solve();
        assert_eq!(m.rate(long), 7.5e8);
        assert_eq!(m.rate(s2), 1.25e9);
        assert_eq!(m.changed_flows().len(), 5);
        assert_eq!(m.stats.same_bottleneck, 4);
        m.check(1e-12).unwrap();
    }

    /// Change sizes: a and b share a 1 GB/s link (5e8 each); b also crosses a 1 TB/s link
    /// where c takes the rest, 1e12 - 5e8. A third flow on the first link brings a and b to
    /// 1e9 / 3 (a change of 1/3) and c to 1e12 - 1e9 / 3 (a change of 1.67e-4).
    #[test]
    fn changes_are_counted_by_relative_size() {
        let mut m = MaxMin::new();
        let narrow = m.add_constraint(1e9);
        let wide = m.add_constraint(1e12);
        let a = m.add_flow(&[narrow], None);
        let b = m.add_flow(&[narrow, wide], None);
        let c = m.add_flow(&[wide], None);
        m.solve();
        assert_eq!(m.stats.changed_by_size, [0; 4], "new flows are not sized");
        assert_eq!(m.rate(c), 1e12 - 5e8);
        let d = m.add_flow(&[narrow], None);
        m.solve();
        assert_eq!(m.changed_flows(), &[a, b, c, d]);
        assert_eq!(m.stats.changed_by_size, [0, 0, 1, 2]);
    }

    /// SimGrid 3.32's answers (tools/simgrid/run.sh, CM02 with factors 1): at 1 GB/s, 1 GB
    /// alone on [L, L] or [L, M, L] takes 2 s (0.5 GB/s); next to a flow on [L], both take
    /// 3 s (the level x fills L at 2x + x = 1 GB/s).
    #[test]
    fn a_link_listed_twice_carries_the_flow_twice() {
        let mut m = MaxMin::new();
        let l = m.add_constraint(1e9);
        let wide = m.add_constraint(1e10);
        let a = m.add_flow(&[l, wide, l], None);
        m.solve();
        assert_eq!(m.rate(a), 5e8);
        let b = m.add_flow(&[l], None);
        m.solve();
        assert_eq!(m.changed_flows(), &[a, b]);
        assert!((m.rate(a) - 1e9 / 3.0).abs() < 1e-3);
        assert!((m.rate(b) - 1e9 / 3.0).abs() < 1e-3);
        m.check(1e-12).unwrap();
        // a leaves; b alone gets the link, and no weight is left behind.
        m.remove_flow(a);
        m.solve();
        assert_eq!(m.rate(b), 1e9);
        m.check(1e-12).unwrap();
    }

    /// The solve counter is 16 bits: past its wrap, stamps of old solves must not pass for
    /// current ones (every stamp is reset then).
    #[test]
    fn rates_stay_right_across_the_epoch_wrap() {
        let mut m = MaxMin::new();
        let l = m.add_constraint(1e9);
        let wide = m.add_constraint(4e9);
        let a = m.add_flow(&[l, l], None);
        let b = m.add_flow(&[wide], None);
        for i in 0..70_000u32 {
            let c = m.add_flow(&[l, wide], None);
            m.solve();
            // a (weight 2) and c share l at level x: 3x = 1e9; b takes the rest of wide.
            let x = 1e9 / 3.0;
            assert!((m.rate(a) - x).abs() < 1e-3, "solve {i}: {}", m.rate(a));
            assert!(
                (m.rate(b) - (4e9 - x)).abs() < 1e-3,
                "solve {i}: {}",
                m.rate(b)
            );
            m.remove_flow(c);
            m.solve();
            assert_eq!(m.rate(a), 5e8, "solve {i}");
            assert_eq!(m.rate(b), 4e9, "solve {i}");
        }
        assert!(m.stats.solves > u16::MAX as u64);
    }

    #[test]
    fn private_bounds_model_fat_pipes() {
        let mut m = MaxMin::new();
        let x = m.add_constraint(4e8);
        let a = m.add_flow(&[], Some(1e9));
        let b = m.add_flow(&[x], Some(1e9));
        m.solve();
        assert_eq!((m.rate(a), m.rate(b)), (1e9, 4e8));
        m.remove_flow(a);
        m.remove_flow(b);
        assert_eq!(m.constraint_count(), 3);
        let c = m.add_flow(&[], Some(2e9));
        assert_eq!(m.constraint_count(), 3, "private constraints are reused");
        m.solve();
        assert_eq!(m.rate(c), 2e9);
    }
}
