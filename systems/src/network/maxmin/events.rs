//! The solver's pending events: each tracked constraint's fill and expiry, in a heap by level,
//! and the fill bounds of lazy constraints beside them.
//!
//! Lazy bounds change far more often than they come due: on the 10,000 flows at t = 0, 595
//! bounds are set per solve and 0.6 reach the level; on halo3d at 480 ranks, 125 and 9.7. So
//! a bound is pushed as a new key, and a key the constraint no longer has is dropped when it
//! reaches the top, instead of moving the constraint's entry in an indexed heap. Events and
//! bounds still come out in one order: by level, then fills before expiries, then by
//! constraint, a bound before an event only if its key is smaller.

use std::cmp::Reverse;
use std::collections::BinaryHeap;

use orx_priority_queue::{PriorityQueue, PriorityQueueDecKey, QuaternaryHeapOfIndices};

use super::ConsId;

#[derive(Debug, Clone, Copy, PartialEq)]
pub(super) enum Kind {
    Fill = 0,
    Expire = 1,
}

/// Pending fills and expiries, at most one of each per constraint (node `2c + kind`), so a
/// re-key moves its entry instead of leaving an outdated one behind; and the fill bounds of
/// lazy constraints ([`Bounds`]): once no flow grows, none of them can fill, and they are
/// dropped together.
pub(super) struct Events {
    heap: QuaternaryHeapOfIndices<usize, u128>,
    bounds: Bounds,
}

/// A heap key: the level's bits above a tie-breaker (one integer, so that the heap compares
/// once per child).
fn event_key(level: f64, tie: u64) -> u128 {
    ((level.to_bits() as u128) << 64) | tie as u128
}

/// The level of a heap key.
fn key_level(key: u128) -> f64 {
    f64::from_bits((key >> 64) as u64)
}

impl Default for Events {
    fn default() -> Self {
        Events {
            heap: QuaternaryHeapOfIndices::with_index_bound(0),
            bounds: Bounds::default(),
        }
    }
}

impl std::fmt::Debug for Events {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let (events, bounds) = (self.heap.len(), self.bounds.heap.len());
        write!(f, "Events({events} pending, {bounds} bounds)")
    }
}

impl Clone for Events {
    fn clone(&self) -> Self {
        Events {
            heap: super::super::regrown(&self.heap, 0),
            bounds: self.bounds.clone(),
        }
    }
}

impl Events {
    /// Makes room for the events of `constraints` constraints.
    pub(super) fn reserve(&mut self, constraints: usize) {
        if self.heap.index_bound() < 2 * constraints {
            let bound = (2 * constraints).next_power_of_two();
            self.heap = super::super::regrown(&self.heap, bound);
        }
        if self.bounds.slots.len() < constraints {
            self.bounds.slots.resize(constraints, Slot::default());
        }
    }

    /// Keys lazy constraint `c`'s fill bound at `level` (ordered like its fill would be), or
    /// drops it if infinite.
    pub(super) fn set_bound(&mut self, c: ConsId, level: f64) {
        match level.is_finite() {
            true => self.bounds.set(c, event_key(level, c as u64)),
            false => self.bounds.drop(c),
        }
    }

    /// Drops every lazy bound (no flow grows, so none can fill).
    pub(super) fn drop_bounds(&mut self) {
        self.bounds.drop_all();
    }

    /// Min-heap on level (non-negative, so its bits order like the numbers); at equal levels
    /// fills before expiries, then by constraint index, so that the order (and thus the
    /// floating-point result) is deterministic.
    pub(super) fn set(&mut self, c: ConsId, kind: Kind, level: f64) {
        debug_assert!(level >= 0.0 && level.is_finite());
        let key = event_key(level, ((kind as u64) << 32) | c as u64);
        self.heap
            .update_key_or_push(&(2 * c as usize + kind as usize), key);
    }

    /// Keys constraint `c`'s fill at `level`, or drops it if it never fills.
    pub(super) fn set_fill(&mut self, c: ConsId, level: f64) {
        if level.is_finite() {
            self.set(c, Kind::Fill, level);
        } else {
            self.clear(c, Kind::Fill);
        }
    }

    pub(super) fn clear(&mut self, c: ConsId, kind: Kind) {
        let node = 2 * c as usize + kind as usize;
        if self.heap.contains(&node) {
            self.heap.remove(&node);
        }
    }

    /// The next event or due bound (a bound is a fill to check), lowest key first.
    pub(super) fn pop(&mut self) -> Option<(ConsId, Kind, f64)> {
        let event = self.heap.peek().map(|&(_, key)| key);
        if let Some((c, key)) = self.bounds.take_below(event) {
            return Some((c, Kind::Fill, key_level(key)));
        }
        self.heap.pop().map(|(node, key)| {
            let kind = if node % 2 == 0 {
                Kind::Fill
            } else {
                Kind::Expire
            };
            ((node / 2) as ConsId, kind, key_level(key))
        })
    }
}

/// No bound.
const NO_KEY: u128 = u128::MAX;

/// Lazy constraints' fill bounds: each constraint's key, and a min-heap of keys set (a key's
/// low bits are its constraint) in which a key no longer the constraint's is skipped when it
/// reaches the top. Setting a key is a push, which for a key above most others (a bound is
/// usually well above the level) sifts up a step or two instead of moving an entry in place.
/// Dropping them all empties the heap and starts a new round: a key set in an earlier round
/// is no longer any constraint's.
#[derive(Debug, Clone, Default)]
struct Bounds {
    /// By constraint: its bound's key and the round it was set in.
    slots: Vec<Slot>,
    heap: BinaryHeap<Reverse<u128>>,
    round: u32,
}

/// A constraint's bound: its key (or [`NO_KEY`]), valid in its round only.
#[derive(Debug, Clone, Copy)]
struct Slot {
    key: u128,
    round: u32,
}

impl Default for Slot {
    fn default() -> Self {
        Slot {
            key: NO_KEY,
            round: 0,
        }
    }
}

impl Bounds {
    fn set(&mut self, c: ConsId, key: u128) {
        debug_assert_eq!(key as u32, c, "a bound's key ends in its constraint");
        let round = self.round;
        self.slots[c as usize] = Slot { key, round };
        self.heap.push(Reverse(key));
    }

    fn drop(&mut self, c: ConsId) {
        self.slots[c as usize].key = NO_KEY;
    }

    /// Constraint `c`'s key in this round.
    fn key(&self, c: ConsId) -> u128 {
        let slot = self.slots[c as usize];
        if slot.round == self.round {
            slot.key
        } else {
            NO_KEY
        }
    }

    fn drop_all(&mut self) {
        self.heap.clear();
        self.round = self.round.wrapping_add(1);
        if self.round == 0 {
            // Wrapped: no slot may keep a round that comes again.
            self.slots.fill(Slot::default());
        }
    }

    /// Takes the smallest key if it is below `limit` (or if there is no limit), with its
    /// constraint; drops the outdated keys on top on the way.
    fn take_below(&mut self, limit: Option<u128>) -> Option<(ConsId, u128)> {
        let limit = limit.unwrap_or(NO_KEY);
        while let Some(&Reverse(k)) = self.heap.peek() {
            let c = k as u32;
            if self.key(c) != k {
                self.heap.pop();
                continue;
            }
            if k >= limit {
                return None;
            }
            self.heap.pop();
            self.drop(c);
            return Some((c, k));
        }
        None
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn events(constraints: usize) -> Events {
        let mut e = Events::default();
        e.reserve(constraints);
        e
    }

    #[test]
    fn events_come_by_level_then_fills_before_expiries_then_by_constraint() {
        let mut e = events(4);
        e.set(3, Kind::Fill, 2.0);
        e.set(1, Kind::Expire, 1.0);
        e.set(2, Kind::Fill, 1.0);
        e.set(0, Kind::Expire, 1.0);
        let order: Vec<_> = std::iter::from_fn(|| e.pop()).collect();
        assert_eq!(
            order,
            [
                (2, Kind::Fill, 1.0),
                (0, Kind::Expire, 1.0),
                (1, Kind::Expire, 1.0),
                (3, Kind::Fill, 2.0)
            ]
        );
    }

    #[test]
    fn a_bound_comes_before_an_event_only_if_its_key_is_smaller() {
        let mut e = events(4);
        e.set(1, Kind::Fill, 2.0);
        e.set_bound(3, 3.0);
        e.set_bound(0, 2.0);
        e.set_bound(2, 1.0);
        let order: Vec<_> = std::iter::from_fn(|| e.pop()).collect();
        // At level 2, bound 0 (key 2.0, 0) is below fill 1 (key 2.0, 1).
        assert_eq!(
            order,
            [
                (2, Kind::Fill, 1.0),
                (0, Kind::Fill, 2.0),
                (1, Kind::Fill, 2.0),
                (3, Kind::Fill, 3.0)
            ]
        );
    }

    #[test]
    fn an_equal_key_pops_the_event_first() {
        // A fill's key and a bound's key coincide for one constraint at one level.
        let mut e = events(2);
        e.set(1, Kind::Fill, 2.0);
        e.set_bound(1, 2.0);
        assert_eq!(e.heap.peek().map(|&(_, k)| k), Some(event_key(2.0, 1)));
        assert_eq!(e.bounds.take_below(Some(event_key(2.0, 1))), None);
    }

    #[test]
    fn a_bound_moved_up_or_dropped_no_longer_comes_at_its_old_key() {
        let mut e = events(4);
        e.set(0, Kind::Fill, 5.0);
        e.set_bound(1, 1.0);
        e.set_bound(2, 2.0);
        e.set_bound(1, 6.0); // moved above the fill: its old key is outdated
        e.set_bound(2, f64::INFINITY); // dropped
        assert_eq!(e.pop(), Some((0, Kind::Fill, 5.0)));
        assert_eq!(e.pop(), Some((1, Kind::Fill, 6.0)));
        assert_eq!(e.pop(), None);
        assert!(e.bounds.heap.is_empty(), "outdated keys are dropped");
    }

    #[test]
    fn a_bound_set_lower_comes_sooner() {
        let mut e = events(3);
        e.set(0, Kind::Fill, 5.0);
        e.set_bound(1, 7.0);
        assert_eq!(e.pop(), Some((0, Kind::Fill, 5.0)));
        e.set(0, Kind::Fill, 6.0);
        e.set_bound(1, 4.0);
        assert_eq!(e.pop(), Some((1, Kind::Fill, 4.0)));
        assert_eq!(e.pop(), Some((0, Kind::Fill, 6.0)));
    }

    #[test]
    fn dropping_all_bounds_leaves_the_events() {
        let mut e = events(3);
        e.set(0, Kind::Expire, 5.0);
        e.set_bound(1, 1.0);
        e.set_bound(2, 2.0);
        e.drop_bounds();
        assert_eq!(e.pop(), Some((0, Kind::Expire, 5.0)));
        assert_eq!(e.pop(), None);
        e.set_bound(2, 3.0);
        assert_eq!(e.pop(), Some((2, Kind::Fill, 3.0)), "a bound is set again");
    }

    #[test]
    fn a_bound_from_before_a_drop_does_not_come_back_when_the_rounds_wrap() {
        let mut e = events(3);
        e.bounds.round = u32::MAX;
        e.set_bound(1, 1.0);
        e.drop_bounds(); // round 0 again: the old slot must not read as set
        assert_eq!(e.bounds.key(1), NO_KEY);
        e.bounds.heap.push(Reverse(event_key(1.0, 1))); // a key left behind
        assert_eq!(e.pop(), None, "an outdated key is skipped");
        e.set_bound(2, 2.0);
        assert_eq!(e.pop(), Some((2, Kind::Fill, 2.0)));
    }

    #[test]
    fn a_bound_set_back_to_an_old_key_comes_out_once() {
        let mut e = events(2);
        e.set_bound(1, 1.0);
        e.set_bound(1, 2.0);
        e.set_bound(1, 1.0);
        assert_eq!(e.pop(), Some((1, Kind::Fill, 1.0)));
        assert_eq!(e.pop(), None);
    }
}
