//! The solver's pending events: each tracked constraint's fill and expiry, in a heap by level,
//! and the fill bounds of lazy constraints beside them.
//!
//! Lazy bounds change far more often than they come due: on the 10,000 flows at t = 0, 595
//! bounds are set per solve and 0.6 reach the level; on halo3d at 480 ranks, 125 and 9.7. So
//! a bound is set in O(1) (kept by constraint, with a running floor under all of them), and
//! found by a pass over the bounds only when an event would pass the floor. The pass
//! also finds the next smallest bound, which becomes the floor after the smallest is taken.
//! Events and bounds still come out in one order: by level, then fills before expiries, then
//! by constraint, a bound before an event only if its key is smaller.

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
        let (events, bounds) = (self.heap.len(), self.bounds.keys.len());
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
        if self.bounds.at.len() < constraints {
            self.bounds.at.resize(constraints, NOWHERE);
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

/// No bound (a floor with no key above it).
const NO_KEY: u128 = u128::MAX;
/// Not listed.
const NOWHERE: u32 = u32::MAX;

/// Lazy constraints' fill bounds: their keys in one array (a key's low bits are its
/// constraint), where each constraint's key is, and a floor no key is below (so most events
/// pass without a look at them).
#[derive(Debug, Clone)]
struct Bounds {
    keys: Vec<u128>,
    /// By constraint: where its key is in `keys`, or [`NOWHERE`].
    at: Vec<u32>,
    /// No key is below it ([`NO_KEY`] when there is none).
    floor: u128,
}

impl Default for Bounds {
    fn default() -> Self {
        Bounds {
            keys: Vec::new(),
            at: Vec::new(),
            floor: NO_KEY,
        }
    }
}

impl Bounds {
    fn set(&mut self, c: ConsId, key: u128) {
        debug_assert_eq!(key as u32, c, "a bound's key ends in its constraint");
        match self.at[c as usize] {
            NOWHERE => {
                self.at[c as usize] = self.keys.len() as u32;
                self.keys.push(key);
            }
            i => self.keys[i as usize] = key,
        }
        self.floor = self.floor.min(key);
    }

    fn drop(&mut self, c: ConsId) {
        match std::mem::replace(&mut self.at[c as usize], NOWHERE) {
            NOWHERE => {}
            i => self.remove_at(i as usize),
        }
    }

    fn remove_at(&mut self, i: usize) {
        self.keys.swap_remove(i);
        if let Some(&moved) = self.keys.get(i) {
            self.at[moved as u32 as usize] = i as u32;
        }
    }

    fn drop_all(&mut self) {
        for &key in &self.keys {
            self.at[key as u32 as usize] = NOWHERE;
        }
        self.keys.clear();
        self.floor = NO_KEY;
    }

    /// Takes the smallest key if it is below `limit` (or if there is no limit), with its
    /// constraint. Passes over the keys only when the floor is below the limit, and leaves
    /// the floor at the smallest key left (the second smallest, once the smallest is taken).
    fn take_below(&mut self, limit: Option<u128>) -> Option<(ConsId, u128)> {
        let limit = limit.unwrap_or(NO_KEY);
        if self.floor >= limit || self.keys.is_empty() {
            return None;
        }
        let (mut first, mut second) = ((NO_KEY, 0), NO_KEY);
        for (i, &k) in self.keys.iter().enumerate() {
            if k < first.0 {
                second = first.0;
                first = (k, i);
            } else if k < second {
                second = k;
            }
        }
        let (k, i) = first;
        if k >= limit {
            self.floor = k;
            return None;
        }
        self.floor = second;
        self.at[k as u32 as usize] = NOWHERE;
        self.remove_at(i);
        Some((k as u32, k))
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
        e.set_bound(1, 6.0); // moved above the fill: the floor is stale until a pass
        e.set_bound(2, f64::INFINITY); // dropped
        assert_eq!(e.pop(), Some((0, Kind::Fill, 5.0)));
        assert_eq!(e.pop(), Some((1, Kind::Fill, 6.0)));
        assert_eq!(e.pop(), None);
        assert!(e.bounds.keys.is_empty());
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
    fn after_the_smallest_is_taken_the_floor_is_the_next_bound() {
        let mut b = Bounds::default();
        b.at.resize(4, NOWHERE);
        for (c, level) in [(0, 3.0), (1, 1.0), (2, 2.0), (3, 4.0)] {
            b.set(c, event_key(level, c as u64));
        }
        assert_eq!(b.take_below(Some(event_key(10.0, 0))).map(|x| x.0), Some(1));
        assert_eq!(b.floor, event_key(2.0, 2));
        assert_eq!(
            b.take_below(Some(event_key(1.5, 0))),
            None,
            "no pass under the floor"
        );
        assert_eq!(b.keys.len(), 3);
    }
}
