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
//! Levels within a relative 1e-12 of a flow's old rate count as equal, so floating-point noise
//! does not start cascades of no-op changes.

use smallvec::SmallVec;
use std::cmp::Ordering;
use std::collections::BinaryHeap;

/// Index of a constraint (a link, or one direction of a split-duplex link).
pub type ConsId = u32;
/// Index of a flow in the solver.
pub type FlowId = u32;

const NONE: u32 = u32::MAX;
const REL_TOL: f64 = 1e-12;

#[derive(Debug, Clone)]
struct Constraint {
    capacity: f64,
    /// Flows crossing it (unordered).
    flows: Vec<FlowId>,
    /// Saturation level in the current solution.
    level: f64,
    /// A flow's private bound (fat-pipe links), released with its flow.
    private: bool,
    // Scratch of the current re-solve, valid while `epoch` matches.
    epoch: u32,
    version: u32,
    filled: bool,
    fill_level: f64,
    /// Its key is a lower bound: flows froze on it since it was computed.
    stale: bool,
}

#[derive(Debug, Clone, Copy, PartialEq)]
enum Scratch {
    Growing,
    Frozen(f64, ConsId),
}

#[derive(Debug, Clone, Default)]
struct FlowSlot {
    cons: SmallVec<[ConsId; 6]>,
    /// Position of this flow in each constraint's `flows`, parallel to `cons`.
    pos: SmallVec<[u32; 6]>,
    rate: f64,
    bottleneck: ConsId,
    alive: bool,
    epoch: u32,
    scratch: Option<Scratch>,
}

/// How a flow's change moves the fill level of the constraints it crosses.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Change {
    /// It froze (at or below what was assumed): fills can only come later.
    Froze,
    /// It keeps growing past what was assumed: fills may come sooner.
    Grows,
}

#[derive(Debug, Clone, Copy, PartialEq)]
enum Kind {
    Fill,
    Expire,
}

#[derive(Debug, Clone, Copy, PartialEq)]
struct Pending {
    level: f64,
    kind: Kind,
    cons: ConsId,
    version: u32,
}

impl Eq for Pending {}

impl Ord for Pending {
    fn cmp(&self, other: &Self) -> Ordering {
        // Min-heap on level; at equal levels fills before expiries, then by constraint index
        // so that the order (and thus the floating-point result) is deterministic.
        let key = |p: &Pending| (p.kind == Kind::Expire, p.cons);
        other
            .level
            .total_cmp(&self.level)
            .then_with(|| key(other).cmp(&key(self)))
    }
}

impl PartialOrd for Pending {
    fn partial_cmp(&self, other: &Self) -> Option<Ordering> {
        Some(self.cmp(other))
    }
}

/// Work done by the solver, for profiling and the benchmarks' notes.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct SolveStats {
    pub solves: u64,
    /// Constraints tracked (dirty), summed over solves.
    pub dirty: u64,
    /// Fill-level computations (each costs the constraint's flow count).
    pub rekeys: u64,
    /// Flow visits made by those computations.
    pub rekey_flows: u64,
    /// Flows touched (re-frozen or re-grown), summed over solves.
    pub touched: u64,
    /// Flows whose rate changed, summed over solves.
    pub changed: u64,
}

/// The max-min solver: constraints, flows over them, and their current fair rates.
#[derive(Debug, Clone, Default)]
pub struct MaxMin {
    pub stats: SolveStats,
    cons: Vec<Constraint>,
    free_private: Vec<ConsId>,
    flows: Vec<FlowSlot>,
    free_flows: Vec<FlowId>,
    /// Constraints and flows changed since the last solve.
    dirty_seed: Vec<ConsId>,
    added: Vec<FlowId>,
    epoch: u32,
    // Per-solve scratch, kept to reuse allocations.
    heap: BinaryHeap<Pending>,
    dirty: Vec<ConsId>,
    touched: Vec<FlowId>,
    future: Vec<f64>,
    moved: Vec<(FlowId, f64)>,
    changed: Vec<FlowId>,
}

impl MaxMin {
    pub fn new() -> Self {
        Self::default()
    }

    /// Adds a shared capacity (bytes per second).
    pub fn add_constraint(&mut self, capacity: f64) -> ConsId {
        debug_assert!(capacity > 0.0 && capacity.is_finite());
        self.cons.push(Constraint {
            capacity,
            flows: Vec::new(),
            level: f64::INFINITY,
            private: false,
            epoch: 0,
            version: 0,
            filled: false,
            fill_level: 0.0,
            stale: false,
        });
        (self.cons.len() - 1) as ConsId
    }

    pub fn constraint_count(&self) -> usize {
        self.cons.len()
    }

    /// Adds a flow over `cons` (duplicates count once) with an optional private rate bound
    /// (the smallest fat-pipe bandwidth on its route). A flow needs at least one limit.
    pub fn add_flow(&mut self, cons: &[ConsId], bound: Option<f64>) -> FlowId {
        let id = self.free_flows.pop().unwrap_or_else(|| {
            self.flows.push(FlowSlot::default());
            (self.flows.len() - 1) as FlowId
        });
        let mut list: SmallVec<[ConsId; 6]> = SmallVec::new();
        for &c in cons {
            if !list.contains(&c) {
                list.push(c);
            }
        }
        if let Some(b) = bound {
            list.push(self.private_constraint(b));
        }
        assert!(!list.is_empty(), "a flow needs at least one constraint");
        let mut pos = SmallVec::new();
        for &c in &list {
            let members = &mut self.cons[c as usize].flows;
            pos.push(members.len() as u32);
            members.push(id);
        }
        self.flows[id as usize] = FlowSlot {
            cons: list,
            pos,
            rate: 0.0,
            bottleneck: NONE,
            alive: true,
            epoch: 0,
            scratch: None,
        };
        self.added.push(id);
        id
    }

    fn private_constraint(&mut self, capacity: f64) -> ConsId {
        match self.free_private.pop() {
            Some(c) => {
                let k = &mut self.cons[c as usize];
                k.capacity = capacity;
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
        let slot = std::mem::take(&mut self.flows[id as usize]);
        debug_assert!(slot.alive, "flow {id} removed twice");
        for (&c, &p) in slot.cons.iter().zip(&slot.pos) {
            let members = &mut self.cons[c as usize].flows;
            members.swap_remove(p as usize);
            if let Some(&moved) = members.get(p as usize) {
                let m = &mut self.flows[moved as usize];
                let k = m
                    .cons
                    .iter()
                    .position(|&x| x == c)
                    .expect("member lists agree");
                m.pos[k] = p;
            }
            if self.cons[c as usize].private {
                self.cons[c as usize].level = f64::INFINITY;
                self.free_private.push(c);
            } else {
                self.dirty_seed.push(c);
            }
        }
        self.added.retain(|&f| f != id);
        self.free_flows.push(id);
    }

    pub fn rate(&self, id: FlowId) -> f64 {
        self.flows[id as usize].rate
    }

    /// The constraints a flow crosses (including a private bound, if any).
    pub fn route(&self, id: FlowId) -> &[ConsId] {
        &self.flows[id as usize].cons
    }

    pub fn capacity(&self, c: ConsId) -> f64 {
        self.cons[c as usize].capacity
    }

    /// The flows currently crossing a constraint.
    pub fn members(&self, c: ConsId) -> &[FlowId] {
        &self.cons[c as usize].flows
    }

    /// Live flows.
    pub fn flow_ids(&self) -> impl Iterator<Item = FlowId> + '_ {
        self.flows
            .iter()
            .enumerate()
            .filter(|(_, f)| f.alive)
            .map(|(i, _)| i as FlowId)
    }

    /// The flows whose rate changed at the last solve (new flows included), in id order.
    pub fn changed(&self) -> &[FlowId] {
        &self.changed
    }

    /// Re-solves after adds and removes; see [`MaxMin::changed`] for what moved.
    pub fn solve(&mut self) {
        self.changed.clear();
        if self.dirty_seed.is_empty() && self.added.is_empty() {
            return;
        }
        self.epoch = self.epoch.wrapping_add(1);
        if self.epoch == 0 {
            self.reset_epochs();
        }
        let added = std::mem::take(&mut self.added);
        for &f in &added {
            self.touch(f, Scratch::Growing);
        }
        let seeds = std::mem::take(&mut self.dirty_seed);
        for &c in &seeds {
            self.make_dirty(c, 0.0, Change::Grows);
        }
        for &f in &added {
            self.propagate(f, 0.0, Change::Grows);
        }
        self.fill();
        self.stats.solves += 1;
        self.stats.dirty += self.dirty.len() as u64;
        self.stats.touched += self.touched.len() as u64;
        self.commit();
        self.added = added;
        self.added.clear();
        self.dirty_seed = seeds;
        self.dirty_seed.clear();
    }

    fn reset_epochs(&mut self) {
        self.cons.iter_mut().for_each(|c| c.epoch = 0);
        self.flows.iter_mut().for_each(|f| f.epoch = 0);
        self.epoch = 1;
    }

    /// Processes fill and expiry events in level order until none is left.
    fn fill(&mut self) {
        while let Some(p) = self.heap.pop() {
            let c = &self.cons[p.cons as usize];
            match p.kind {
                Kind::Fill if p.version == c.version && !c.filled && c.stale => {
                    self.rekey(p.cons, p.level)
                }
                Kind::Fill if p.version == c.version && !c.filled => self.on_fill(p.cons, p.level),
                Kind::Expire if !c.filled => self.on_expire(p.cons, p.level),
                _ => {}
            }
        }
    }

    /// A dirty constraint fills at `level`: every flow still growing through it freezes there.
    fn on_fill(&mut self, c: ConsId, level: f64) {
        let k = &mut self.cons[c as usize];
        k.filled = true;
        k.fill_level = level;
        let mut moved = std::mem::take(&mut self.moved);
        for &g in &self.cons[c as usize].flows {
            let slot = &self.flows[g as usize];
            let new_rate = if slot.epoch == self.epoch {
                match slot.scratch {
                    Some(Scratch::Growing) => Some(level),
                    _ => None,
                }
            } else if same_level(slot.rate, level) {
                // Freezes here at its old rate: nothing downstream changes.
                Some(slot.rate)
            } else if slot.rate > level {
                Some(level)
            } else {
                None
            };
            if let Some(rate) = new_rate {
                moved.push((g, rate));
            }
        }
        for &(g, rate) in &moved {
            let changed =
                self.flows[g as usize].epoch == self.epoch || rate != self.flows[g as usize].rate;
            self.touch(g, Scratch::Frozen(rate, c));
            if changed {
                self.propagate(g, level, Change::Froze);
            }
        }
        moved.clear();
        self.moved = moved;
    }

    /// A dirty constraint's old level passes without it filling: the untouched flows it used
    /// to bottleneck keep growing.
    fn on_expire(&mut self, c: ConsId, level: f64) {
        let mut moved = std::mem::take(&mut self.moved);
        for &g in &self.cons[c as usize].flows {
            let slot = &self.flows[g as usize];
            if slot.epoch != self.epoch && slot.bottleneck == c {
                moved.push((g, level));
            }
        }
        for &(g, _) in &moved {
            self.touch(g, Scratch::Growing);
            self.propagate(g, level, Change::Grows);
        }
        moved.clear();
        self.moved = moved;
    }

    fn touch(&mut self, g: FlowId, s: Scratch) {
        let slot = &mut self.flows[g as usize];
        if slot.epoch != self.epoch {
            slot.epoch = self.epoch;
            self.touched.push(g);
        }
        slot.scratch = Some(s);
    }

    /// Flow `g` changed at `level`: every constraint it crosses must be re-keyed.
    fn propagate(&mut self, g: FlowId, level: f64, change: Change) {
        for k in 0..self.flows[g as usize].cons.len() {
            let c = self.flows[g as usize].cons[k];
            self.make_dirty(c, level, change);
        }
    }

    /// A stale key reached the top: recompute it, and fill now if it still is the lowest.
    fn rekey(&mut self, c: ConsId, level: f64) {
        self.cons[c as usize].stale = false;
        let raw = self.fill_level_of(c, level);
        debug_assert!(
            raw >= level * (1.0 - 1e-9),
            "a stale key is a lower bound: {raw} < {level}"
        );
        let fill = raw.max(level);
        if same_level(fill, level) {
            self.on_fill(c, fill.max(level));
        } else if fill.is_finite() {
            let k = &mut self.cons[c as usize];
            k.version = k.version.wrapping_add(1);
            self.heap.push(Pending {
                level: fill,
                kind: Kind::Fill,
                cons: c,
                version: k.version,
            });
        }
    }

    /// Starts tracking a constraint (or re-keys one already tracked) at the current `level`.
    /// A flow that froze can only delay a tracked constraint's fill, so its key is kept as a
    /// lower bound and recomputed when it reaches the top of the heap; a flow that grows can
    /// advance the fill, so the key is recomputed at once.
    fn make_dirty(&mut self, c: ConsId, level: f64, change: Change) {
        let epoch = self.epoch;
        let k = &mut self.cons[c as usize];
        if k.epoch != epoch {
            k.epoch = epoch;
            k.filled = false;
            self.dirty.push(c);
            if k.level.is_finite() {
                if k.level < level && !same_level(k.level, level) {
                    // Clean until now and already full below `level`: it filled as before.
                    k.filled = true;
                    k.fill_level = k.level;
                    return;
                }
                self.heap.push(Pending {
                    level: k.level,
                    kind: Kind::Expire,
                    cons: c,
                    version: 0,
                });
            }
        } else if k.filled {
            return;
        } else if change == Change::Froze {
            // Also right when no fill is pending: a freeze cannot make it fill.
            k.stale = true;
            return;
        }
        let k = &mut self.cons[c as usize];
        k.stale = false;
        k.version = k.version.wrapping_add(1);
        let version = k.version;
        let fill = self.fill_level_of(c, level).max(level);
        if fill.is_finite() {
            self.heap.push(Pending {
                level: fill,
                kind: Kind::Fill,
                cons: c,
                version,
            });
        }
    }

    /// The level at which a tracked constraint fills if untouched flows freeze at their old
    /// rates and growing flows keep growing; infinite if it never fills.
    fn fill_level_of(&mut self, c: ConsId, level: f64) -> f64 {
        let k = &self.cons[c as usize];
        self.stats.rekeys += 1;
        self.stats.rekey_flows += k.flows.len() as u64;
        let mut frozen = 0.0;
        let mut growing = 0u32;
        self.future.clear();
        for &g in &k.flows {
            let slot = &self.flows[g as usize];
            if slot.epoch == self.epoch {
                match slot.scratch {
                    Some(Scratch::Frozen(r, _)) => frozen += r,
                    _ => growing += 1,
                }
            } else if slot.rate <= level {
                frozen += slot.rate;
            } else {
                self.future.push(slot.rate);
            }
        }
        self.future.sort_unstable_by(f64::total_cmp);
        let mut next = 0;
        loop {
            let slope = growing as usize + self.future.len() - next;
            if slope == 0 {
                return f64::INFINITY;
            }
            let fill = (k.capacity - frozen) / slope as f64;
            match self.future.get(next) {
                Some(&r) if fill > r => {
                    frozen += r;
                    next += 1;
                }
                _ => return fill,
            }
        }
    }

    /// Writes the new rates, bottlenecks and levels; lists the flows whose rate changed.
    fn commit(&mut self) {
        for &g in &self.touched {
            let slot = &mut self.flows[g as usize];
            let Some(Scratch::Frozen(rate, b)) = slot.scratch else {
                unreachable!("every touched flow freezes: each crosses a finite constraint")
            };
            if rate != slot.rate || slot.bottleneck == NONE {
                self.changed.push(g);
            }
            slot.rate = rate;
            slot.bottleneck = b;
            slot.scratch = None;
        }
        for &c in &self.dirty {
            let k = &mut self.cons[c as usize];
            k.level = if k.filled {
                k.fill_level
            } else {
                f64::INFINITY
            };
        }
        self.touched.clear();
        self.dirty.clear();
        self.changed.sort_unstable();
        self.stats.changed += self.changed.len() as u64;
    }

    /// Checks feasibility and the max-min bottleneck property (for tests and debug builds):
    /// no constraint over capacity, and every flow crosses a full constraint on which no
    /// flow has a larger rate.
    pub fn check(&self, rel_tol: f64) -> Result<(), String> {
        let load = |c: &Constraint| {
            c.flows
                .iter()
                .map(|&g| self.flows[g as usize].rate)
                .sum::<f64>()
        };
        for (i, c) in self.cons.iter().enumerate() {
            let l = load(c);
            if l > c.capacity * (1.0 + rel_tol) {
                return Err(format!(
                    "constraint {i} over capacity: {l} > {}",
                    c.capacity
                ));
            }
        }
        for g in self.flow_ids() {
            let f = &self.flows[g as usize];
            let ok = f.cons.iter().any(|&c| {
                let k = &self.cons[c as usize];
                load(k) >= k.capacity * (1.0 - rel_tol)
                    && k.flows
                        .iter()
                        .all(|&h| self.flows[h as usize].rate <= f.rate * (1.0 + rel_tol))
            });
            if !ok {
                return Err(format!("flow {g} (rate {}) has no bottleneck", f.rate));
            }
        }
        Ok(())
    }
}

/// Equal within the relative tolerance; an infinite level (never fills) equals nothing.
fn same_level(a: f64, b: f64) -> bool {
    a.is_finite() && b.is_finite() && (a - b).abs() <= REL_TOL * a.abs().max(b.abs())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn two_flows_share_one_link() {
        let mut m = MaxMin::new();
        let l = m.add_constraint(1e9);
        let a = m.add_flow(&[l], None);
        let b = m.add_flow(&[l], None);
        m.solve();
        assert_eq!(m.changed(), &[a, b]);
        assert_eq!((m.rate(a), m.rate(b)), (5e8, 5e8));
        m.remove_flow(a);
        m.solve();
        assert_eq!(m.changed(), &[b]);
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
        // s0 leaves: long is limited by l1 now, 3 GB/s over 4 flows.
        m.remove_flow(s0);
        m.solve();
        assert_eq!(m.rate(long), 7.5e8);
        assert_eq!(m.rate(s2), 1.25e9);
        m.check(1e-12).unwrap();
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
