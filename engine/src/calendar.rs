//! The event calendar: one face, two queues.
//!
//! Events whose time never changes go into a binary heap; events that get re-timed (a flow's
//! completion when rates change) live in a `PriorityQueue` keyed by the event itself, so
//! re-timing is `change_priority` in O(log n) with no stale entries to skip. `pop` takes the
//! earlier head of the two. Every scheduling takes a fresh global `seq`, so events at equal
//! times pop in the order they were (re-)scheduled: runs are deterministic.
//!
//! An event is a registered kind plus an entity and a 64-bit argument; typed events
//! ([`SimEvent`]) pack into that form, so the calendar stores small plain values.

use bevy_ecs::prelude::*;
use foldhash::fast::FixedState;
use priority_queue::PriorityQueue;
use std::any::TypeId;
use std::cmp::Reverse;
use std::collections::{BinaryHeap, HashMap};

use hetsim_schema::SimTime;

/// A typed event that packs into an entity and a 64-bit argument.
pub trait SimEvent: Send + Sync + 'static + Sized {
    /// A short name for diagnostics, e.g. `network.flow_done`.
    const NAME: &'static str;
    fn pack(&self) -> (Entity, u64);
    fn unpack(entity: Entity, arg: u64) -> Self;
}

/// Declares an event that only names an entity: `entity_event!(FlowDone, "network.flow_done")`.
#[macro_export]
macro_rules! entity_event {
    ($(#[$doc:meta])* $name:ident, $label:literal) => {
        $(#[$doc])*
        #[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
        pub struct $name(pub ::bevy_ecs::entity::Entity);

        impl $crate::SimEvent for $name {
            const NAME: &'static str = $label;
            fn pack(&self) -> (::bevy_ecs::entity::Entity, u64) {
                (self.0, 0)
            }
            fn unpack(entity: ::bevy_ecs::entity::Entity, _: u64) -> Self {
                $name(entity)
            }
        }
    };
}

/// The registered number of an event type.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct EventKind(pub u16);

/// An event as the calendar stores it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct RawEvent {
    pub kind: EventKind,
    pub entity: Entity,
    pub arg: u64,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Fixed {
    key: u128,
    event: RawEvent,
}

impl Ord for Fixed {
    fn cmp(&self, other: &Self) -> std::cmp::Ordering {
        // Reversed: BinaryHeap is a max-heap and we want the earliest (time, seq).
        other.key.cmp(&self.key)
    }
}

impl PartialOrd for Fixed {
    fn partial_cmp(&self, other: &Self) -> Option<std::cmp::Ordering> {
        Some(self.cmp(other))
    }
}

/// The global event calendar.
#[derive(Resource, Default)]
pub struct Calendar {
    fixed: BinaryHeap<Fixed>,
    retimable: PriorityQueue<RawEvent, Reverse<u128>, FixedState>,
    seq: u64,
    kinds: HashMap<TypeId, EventKind, FixedState>,
}

impl Calendar {
    /// Registers an event type (idempotent) and returns its kind.
    pub fn register<E: SimEvent>(&mut self) -> EventKind {
        let next = EventKind(self.kinds.len() as u16);
        *self.kinds.entry(TypeId::of::<E>()).or_insert(next)
    }

    /// The kind of a registered event type.
    pub fn kind_of<E: SimEvent>(&self) -> EventKind {
        *self
            .kinds
            .get(&TypeId::of::<E>())
            .unwrap_or_else(|| panic!("event `{}` was not registered by its plugin", E::NAME))
    }

    /// An event packed as the calendar stores it, to be scheduled later by whoever holds it
    /// ([`Calendar::schedule_raw`]): how a model tells another which of its events to send back.
    pub fn pack<E: SimEvent>(&self, event: &E) -> RawEvent {
        let (entity, arg) = event.pack();
        RawEvent {
            kind: self.kind_of::<E>(),
            entity,
            arg,
        }
    }

    /// The next sequence number, the tie-breaker of a [`SimTime::key`] (below 2^48: 2.8e14
    /// schedulings).
    fn next_seq(&mut self) -> u64 {
        self.seq += 1;
        self.seq
    }

    /// Schedules an event whose time will not change.
    pub fn schedule<E: SimEvent>(&mut self, time: SimTime, event: E) {
        let event = self.pack(&event);
        self.schedule_raw(time, event);
    }

    /// Schedules an event packed by [`Calendar::pack`] (its time will not change).
    pub fn schedule_raw(&mut self, time: SimTime, event: RawEvent) {
        let seq = self.next_seq();
        self.fixed.push(Fixed {
            key: time.key(seq),
            event,
        });
    }

    /// Schedules or re-times an event that may move later (one pending instance per event value).
    pub fn retime<E: SimEvent>(&mut self, time: SimTime, event: E) {
        let event = self.pack(&event);
        let seq = self.next_seq();
        self.retimable.push(event, Reverse(time.key(seq)));
    }

    /// Removes a pending re-timable event; returns whether it was pending.
    pub fn cancel<E: SimEvent>(&mut self, event: E) -> bool {
        let event = self.pack(&event);
        self.retimable.remove(&event).is_some()
    }

    /// The earliest pending event: its key, its kind, and whether it is in the fixed heap.
    /// Keys are unique (every scheduling takes a new `seq`), so there are no ties.
    fn head(&self) -> Option<(u128, EventKind, bool)> {
        let a = self.fixed.peek().map(|f| (f.key, f.event.kind, true));
        let b = self
            .retimable
            .peek()
            .map(|(e, Reverse(k))| (*k, e.kind, false));
        match (a, b) {
            (Some(a), Some(b)) => Some(if a.0 < b.0 { a } else { b }),
            (a, b) => a.or(b),
        }
    }

    /// The time of the earliest pending event.
    pub fn peek_time(&self) -> Option<SimTime> {
        self.head().map(|(k, _, _)| SimTime::of_key(k))
    }

    /// The kind of the earliest event.
    pub fn peek_kind(&self) -> Option<EventKind> {
        self.head().map(|(_, kind, _)| kind)
    }

    /// Pops the earliest event if it is due at `time`.
    pub fn pop_at(&mut self, time: SimTime) -> Option<RawEvent> {
        let (k, _, fixed) = self.head()?;
        if SimTime::of_key(k) != time {
            None
        } else if fixed {
            self.fixed.pop().map(|f| f.event)
        } else {
            self.retimable.pop().map(|(e, _)| e)
        }
    }

    pub fn len(&self) -> usize {
        self.fixed.len() + self.retimable.len()
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    crate::entity_event!(Ping, "test.ping");
    crate::entity_event!(Pong, "test.pong");

    fn e(i: u32) -> Entity {
        Entity::from_raw_u32(i).unwrap()
    }

    fn drain(cal: &mut Calendar) -> Vec<(u128, RawEvent)> {
        let mut out = vec![];
        while let Some(t) = cal.peek_time() {
            while let Some(ev) = cal.pop_at(t) {
                out.push((t.0, ev));
            }
        }
        out
    }

    #[test]
    fn equal_times_pop_in_scheduling_order_across_both_queues() {
        let mut cal = Calendar::default();
        let ping = cal.register::<Ping>();
        let pong = cal.register::<Pong>();
        cal.schedule(SimTime(5), Ping(e(1)));
        cal.retime(SimTime(5), Pong(e(2)));
        cal.schedule(SimTime(5), Ping(e(3)));
        cal.schedule(SimTime(1), Ping(e(4)));
        let order: Vec<_> = drain(&mut cal)
            .iter()
            .map(|(t, ev)| (*t, ev.kind, ev.entity))
            .collect();
        assert_eq!(
            order,
            vec![
                (1, ping, e(4)),
                (5, ping, e(1)),
                (5, pong, e(2)),
                (5, ping, e(3))
            ]
        );
    }

    #[test]
    fn retiming_moves_the_one_pending_instance() {
        let mut cal = Calendar::default();
        cal.register::<Pong>();
        cal.retime(SimTime(10), Pong(e(1)));
        cal.retime(SimTime(30), Pong(e(2)));
        cal.retime(SimTime(40), Pong(e(1)));
        assert_eq!(cal.len(), 2);
        let times: Vec<_> = drain(&mut cal)
            .iter()
            .map(|(t, ev)| (*t, ev.entity))
            .collect();
        assert_eq!(times, vec![(30, e(2)), (40, e(1))]);
        cal.retime(SimTime(7), Pong(e(3)));
        assert!(cal.cancel(Pong(e(3))));
        assert!(cal.is_empty());
    }

    #[test]
    fn pop_at_only_takes_due_events() {
        let mut cal = Calendar::default();
        cal.register::<Ping>();
        cal.schedule(SimTime(3), Ping(e(1)));
        assert!(cal.pop_at(SimTime(2)).is_none());
        assert!(cal.pop_at(SimTime(3)).is_some());
    }
}
