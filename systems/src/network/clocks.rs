//! Completion times of the flows in progress, kept per *clock*: the flows that share one rate
//! (a max-min group, or one flow when contention is off). A clock counts down the bytes left
//! of the flow that started it (its `base`, which goes on below zero once that flow is gone);
//! a flow that joins with `b` bytes left when the base is `x` keeps the difference `b - x`
//! (its `offset`), and has `base + offset` bytes left at any time. A rate change re-times the
//! clock, not each of its flows: O(1) and one heap update, however many flows share the
//! rate. A flow that moves to another clock takes its bytes left along. A flow alone on its
//! clock (most flows) is counted down exactly as a flow on its own would be, to the bit.
//!
//! The clocks wait in a d-ary heap keyed by their earliest flow's completion, ties by clock.
//! A key may be *early*: a lower bound on the clock's next completion. A rate that drops
//! moves the completion later, and that re-timing is left until the key reaches the top
//! ([`Clocks::settle_next`]), where it is corrected; most never get there before the rate
//! changes again. The top, once settled, is the exact earliest completion.
//!
//! Each clock keeps its flows in a binary heap by offset (a flow alone on its clock since it
//! started, the common case, is kept beside it instead). A flow that moves out leaves its
//! entry behind, known as stale by its seat's generation, and dropped when it reaches the top
//! (or when stale entries outnumber live ones).

use std::cmp::Reverse;
use std::collections::BinaryHeap;

use hetsim_schema::SimTime;
use orx_priority_queue::{PriorityQueue, PriorityQueueDecKey, QuaternaryHeapOfIndices};

/// Index of a clock (the solver's group id, or the flow's slot when contention is off).
pub type ClockId = u32;

const NONE: u32 = u32::MAX;

/// Flows that share one rate, and how far they have come.
#[derive(Debug, Clone, Default)]
struct Clock {
    /// Bytes left, as of `since`, of the flow that started the clock (its flows' offsets
    /// are counted from it).
    base: f64,
    since: SimTime,
    rate: f64,
    /// Its last change (a rate, or a flow that joined): no completion comes before it.
    last: SimTime,
    /// Its earliest flow (while it has flows), that flow's exact end in seconds, and the
    /// completion it is due at (see [`Clocks::refresh`]).
    top: u32,
    top_end_s: f64,
    due: SimTime,
    /// Its flows by offset ([`entry`]), stale ones included; empty while it has had one
    /// flow only since it started (that flow is `top`), the most common clock.
    queue: BinaryHeap<Reverse<u128>>,
    /// Flows on the clock.
    live: u32,
    /// Its key in the heap of clocks, while it is there (`keyed`).
    key: SimTime,
    keyed: bool,
}

impl Clock {
    /// The base at `now`, counted down at the rate since `since`.
    fn base_at(&self, now: SimTime) -> f64 {
        self.base - self.rate * now.saturating_sub(self.since).as_secs_f64()
    }

    /// Brings the base up to `now`.
    fn advance(&mut self, now: SimTime) {
        self.base = self.base_at(now);
        self.since = now;
    }

    /// Bytes a flow at `offset` had left at `since` (none once past its end).
    fn left(&self, offset: f64) -> f64 {
        non_negative(self.base + offset)
    }

    /// The exact end, in seconds, of a flow at `offset`.
    fn end_s(&self, offset: f64) -> f64 {
        self.since.as_secs_f64() + self.left(offset) / self.rate
    }
}

/// Where a flow's slot sits: its clock and its offset there. The generation counts the
/// slot's joins, so that entries it left behind in a clock's queue are known as stale.
#[derive(Debug, Clone, Copy)]
struct Seat {
    clock: ClockId,
    generation: u32,
    offset: f64,
}

impl Default for Seat {
    fn default() -> Self {
        Seat {
            clock: NONE,
            generation: 0,
            offset: 0.0,
        }
    }
}

/// A flow that ended: its slot, its exact end in seconds, and the rate it had.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Ended {
    pub slot: u32,
    pub end_s: f64,
    pub rate: f64,
}

/// The clocks of the flows in progress, and the heap of their next completions.
pub struct Clocks {
    clocks: Vec<Clock>,
    /// By flow slot.
    seats: Vec<Seat>,
    /// Clocks with flows, by their (possibly early) key: [`SimTime::key`] of the time and
    /// the clock.
    heap: QuaternaryHeapOfIndices<usize, u128>,
    /// Completions fall on multiples of this (zero: at any femtosecond).
    quantum: SimTime,
}

impl Default for Clocks {
    fn default() -> Self {
        Clocks {
            clocks: Vec::new(),
            seats: Vec::new(),
            heap: QuaternaryHeapOfIndices::with_index_bound(1024),
            quantum: SimTime::ZERO,
        }
    }
}

impl Clocks {
    /// Puts completions on multiples of `quantum`.
    pub fn set_quantum(&mut self, quantum: SimTime) {
        self.quantum = quantum;
    }

    /// Flow `slot` joins clock `c` at `now` with `bytes` left. A clock without flows starts
    /// over from the flow, at `rate`; one with flows keeps its own.
    pub fn join(&mut self, slot: u32, c: ClockId, bytes: f64, rate: f64, now: SimTime) {
        if self.clocks.len() <= c as usize {
            self.clocks.resize_with(c as usize + 1, Clock::default);
        }
        if self.seats.len() <= slot as usize {
            self.seats.resize(slot as usize + 1, Seat::default());
        }
        let clock = &mut self.clocks[c as usize];
        let bytes = non_negative(bytes);
        clock.last = now;
        let solo = clock.live == 0;
        let offset = if solo {
            clock.base = bytes;
            clock.since = now;
            clock.rate = rate;
            clock.queue.clear();
            0.0
        } else {
            // The base is left as it was at `since`: only a rate change moves it, so a
            // flow's count-down does not depend on who joins its clock.
            bytes - clock.base_at(now)
        };
        let seat = &mut self.seats[slot as usize];
        debug_assert_eq!(seat.clock, NONE, "flow {slot} is on a clock already");
        seat.clock = c;
        seat.generation = seat.generation.wrapping_add(1);
        seat.offset = offset;
        let generation = seat.generation;
        if solo {
            clock.top = slot;
        } else {
            if clock.queue.is_empty() {
                // The flow it had alone was not queued: it is now.
                let first = &self.seats[clock.top as usize];
                let e = entry(first.offset, clock.top, first.generation);
                clock.queue.push(Reverse(e));
            }
            clock.queue.push(Reverse(entry(offset, slot, generation)));
        }
        clock.live += 1;
        if clock.rate > 0.0 {
            // (A clock at rate zero, a new group before its first solve, is timed and keyed
            // when its rate is set.)
            self.refresh(c);
            self.lower(c);
        }
    }

    /// Flow `slot` leaves its clock at `now`; returns the bytes it had left.
    pub fn leave(&mut self, slot: u32, now: SimTime) -> f64 {
        let seat = self.seats[slot as usize];
        self.seats[slot as usize].clock = NONE;
        let c = seat.clock;
        debug_assert_ne!(c, NONE, "flow {slot} is on no clock");
        let clock = &mut self.clocks[c as usize];
        let left = non_negative(clock.base_at(now) + seat.offset);
        if self.drop_one(c) {
            // Its completion may come later now: the key stays early.
            self.refresh(c);
        }
        left
    }

    /// Flow `slot` moves to clock `c` at `now` with the bytes it has left (`rate` is the
    /// rate of `c` if it has no flows yet); returns the rate it had.
    pub fn move_to(&mut self, slot: u32, c: ClockId, rate: f64, now: SimTime) -> f64 {
        let old = self.rate_of(slot);
        let left = self.leave(slot, now);
        self.join(slot, c, left, rate, now);
        old
    }

    /// Clock `c` switches to `rate` at `now`; returns its old rate. A completion that comes
    /// sooner is re-keyed at once, a later one when its early key reaches the top.
    pub fn set_rate(&mut self, c: ClockId, rate: f64, now: SimTime) -> f64 {
        let clock = &mut self.clocks[c as usize];
        clock.advance(now);
        clock.last = now;
        let old = std::mem::replace(&mut clock.rate, rate);
        self.refresh(c);
        self.lower(c);
        old
    }

    /// Clock `c` has no flows (it may be reused).
    pub fn is_empty(&self, c: ClockId) -> bool {
        self.clocks.get(c as usize).is_none_or(|k| k.live == 0)
    }

    /// The rate of flow `slot`.
    pub fn rate_of(&self, slot: u32) -> f64 {
        self.clocks[self.seats[slot as usize].clock as usize].rate
    }

    /// The bytes flow `slot` has left at `now`.
    pub fn left(&self, slot: u32, now: SimTime) -> f64 {
        let seat = &self.seats[slot as usize];
        non_negative(self.clocks[seat.clock as usize].base_at(now) + seat.offset)
    }

    /// The flows on clock `c`, in no set order.
    pub fn flows_of(&self, c: ClockId) -> impl Iterator<Item = u32> + '_ {
        let clock = &self.clocks[c as usize];
        let alone = (clock.queue.is_empty() && clock.live == 1).then_some(clock.top);
        let queued = clock.queue.iter().filter_map(move |&Reverse(e)| {
            let (_, slot, generation) = unpack(e);
            self.is_seated(slot, c, generation).then_some(slot)
        });
        alone.into_iter().chain(queued)
    }

    /// The earliest completion, exactly: early keys that reach the top of the heap are
    /// moved to their clock's completion until the top's key is its own.
    pub fn settle_next(&mut self) -> Option<SimTime> {
        loop {
            let c = self.heap.peek()?.0 as ClockId;
            let clock = &mut self.clocks[c as usize];
            let due = clock.due;
            debug_assert!(clock.live > 0, "a clock in the heap has flows");
            debug_assert!(clock.key <= due, "a key is never late");
            if clock.key == due {
                return Some(due);
            }
            clock.key = due;
            self.heap.update_key(&(c as usize), due.key(c as u64));
        }
    }

    /// Takes the next flow that ends by `now` off its clock (ties by clock, then slot).
    pub fn pop_ended(&mut self, now: SimTime) -> Option<Ended> {
        if self.settle_next()? > now {
            return None;
        }
        let c = self.heap.peek().expect("settled").0 as ClockId;
        let clock = &mut self.clocks[c as usize];
        let ended = Ended {
            slot: clock.top,
            end_s: clock.top_end_s,
            rate: clock.rate,
        };
        // The flow's end, rounded to the femtosecond, is never after the step it ends in.
        debug_assert!(
            SimTime::from_secs_saturating(ended.end_s) <= now,
            "flow {} ends at {} s, after {now:?}",
            ended.slot,
            ended.end_s
        );
        // The top entry is the top flow's (`refresh` dropped the stale ones above it), if
        // the clock has a queue.
        clock.queue.pop();
        self.seats[ended.slot as usize].clock = NONE;
        let clock = &mut self.clocks[c as usize];
        if clock.live == 1 {
            // Its last flow: the clock leaves the top of the heap.
            clock.live = 0;
            clock.keyed = false;
            clock.queue.clear();
            self.heap.pop();
        } else if self.drop_one(c) {
            let due = self.refresh(c);
            self.clocks[c as usize].key = due;
            self.heap.update_key(&(c as usize), due.key(c as u64));
        }
        Some(ended)
    }

    /// Clock `c` lost a flow (its seat already cleared): an empty clock leaves the heap, and
    /// a queue mostly of stale entries is compacted. Returns whether it still has flows.
    fn drop_one(&mut self, c: ClockId) -> bool {
        let clock = &mut self.clocks[c as usize];
        clock.live -= 1;
        if clock.live == 0 {
            clock.queue.clear();
            if std::mem::take(&mut clock.keyed) {
                self.heap.remove(&(c as usize));
            }
            return false;
        }
        if clock.queue.len() > 2 * clock.live as usize + 8 {
            let mut queue = std::mem::take(&mut self.clocks[c as usize].queue);
            queue.retain(|&Reverse(e)| {
                let (_, slot, generation) = unpack(e);
                self.is_seated(slot, c, generation)
            });
            self.clocks[c as usize].queue = queue;
        }
        true
    }

    fn is_seated(&self, slot: u32, c: ClockId, generation: u32) -> bool {
        let seat = &self.seats[slot as usize];
        seat.clock == c && seat.generation == generation
    }

    /// Clock `c`'s earliest flow and its offset (stale entries on top are dropped).
    fn top_flow(&mut self, c: ClockId) -> Option<(u32, f64)> {
        let clock = &self.clocks[c as usize];
        if clock.queue.is_empty() {
            // A flow alone since the clock started is not queued.
            let top = clock.top;
            return (clock.live == 1).then(|| (top, self.seats[top as usize].offset));
        }
        loop {
            let &Reverse(e) = self.clocks[c as usize].queue.peek()?;
            let (offset, slot, generation) = unpack(e);
            if self.is_seated(slot, c, generation) {
                return Some((slot, offset));
            }
            self.clocks[c as usize].queue.pop();
        }
    }

    /// Re-computes when clock `c` (with flows) next completes: its earliest flow's exact end
    /// rounded to the femtosecond, never before the clock's last change, on the quantum's
    /// grid.
    fn refresh(&mut self, c: ClockId) -> SimTime {
        let (slot, offset) = self.top_flow(c).expect("a clock with flows");
        let clock = &mut self.clocks[c as usize];
        clock.top = slot;
        clock.top_end_s = clock.end_s(offset);
        let end = SimTime::from_secs_saturating(clock.top_end_s).max(clock.last);
        clock.due = on_grid(end, self.quantum);
        clock.due
    }

    /// Keys clock `c` at its next completion if that is sooner than its key, or it has none.
    fn lower(&mut self, c: ClockId) {
        let clock = &mut self.clocks[c as usize];
        if clock.keyed && clock.key <= clock.due {
            return;
        }
        let (due, node) = (clock.due, c as usize);
        clock.key = due;
        clock.keyed = true;
        if node >= self.heap.index_bound() {
            self.heap = regrown(&self.heap, (node + 1).next_power_of_two());
        }
        self.heap.decrease_key_or_push(&node, due.key(c as u64));
    }
}

/// A queue entry: the offset (as bits that order like the numbers), then the slot (ties),
/// then the seat's generation.
fn entry(offset: f64, slot: u32, generation: u32) -> u128 {
    ((ordered_bits(offset) as u128) << 64) | ((slot as u128) << 32) | generation as u128
}

fn unpack(e: u128) -> (f64, u32, u32) {
    (
        from_ordered_bits((e >> 64) as u64),
        (e >> 32) as u32,
        e as u32,
    )
}

/// `x`'s bits, mapped so that they order as the numbers do (negative ones flipped whole,
/// positive ones above them).
fn ordered_bits(x: f64) -> u64 {
    let bits = x.to_bits();
    match x.is_sign_negative() {
        true => !bits,
        false => bits | 1 << 63,
    }
}

fn from_ordered_bits(b: u64) -> f64 {
    f64::from_bits(match b >> 63 {
        1 => b & !(1 << 63),
        _ => !b,
    })
}

/// `x`, or +0 if it is not positive.
fn non_negative(x: f64) -> f64 {
    if x > 0.0 { x } else { 0.0 }
}

/// The first multiple of `quantum` not before `t` (`t` itself if the quantum is zero).
pub fn on_grid(t: SimTime, quantum: SimTime) -> SimTime {
    match quantum.0 {
        0 => t,
        q => SimTime(t.0.div_ceil(q).saturating_mul(q)),
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

#[cfg(test)]
mod tests {
    use super::*;

    fn secs(s: f64) -> SimTime {
        SimTime::from_secs_saturating(s)
    }

    /// Flows 0 and 1 alone on clocks 0 and 1: 1 GB at 1 GB/s ends at 1 s, 1 GB at 0.5 GB/s
    /// at 2 s. The first drops to 0.25 GB/s at once (its end moves to 4 s): its key stays at
    /// 1 s until it reaches the top, and the earliest completion is then the second's.
    #[test]
    fn a_later_completion_keeps_its_early_key_until_it_tops_the_heap() {
        let mut k = Clocks::default();
        k.join(0, 0, 1e9, 1e9, SimTime::ZERO);
        k.join(1, 1, 1e9, 5e8, SimTime::ZERO);
        k.set_rate(0, 2.5e8, SimTime::ZERO);
        assert_eq!(k.clocks[0].key, secs(1.0), "early key kept");
        assert_eq!(k.settle_next(), Some(secs(2.0)));
        assert_eq!(k.clocks[0].key, secs(4.0), "corrected on the way");
        let ended = k.pop_ended(secs(2.0)).unwrap();
        assert_eq!((ended.slot, ended.end_s, ended.rate), (1, 2.0, 5e8));
        assert_eq!(k.pop_ended(secs(2.0)), None);
        assert_eq!(k.settle_next(), Some(secs(4.0)));
    }

    /// A completion that comes sooner is re-keyed at once; at equal times the lower clock
    /// completes first.
    #[test]
    fn a_sooner_completion_is_rekeyed_and_ties_go_by_clock() {
        let mut k = Clocks::default();
        k.join(7, 3, 1e9, 2.5e8, SimTime::ZERO);
        k.join(2, 5, 1e9, 5e8, SimTime::ZERO);
        // At 1 s flow 7 has 0.75 GB left; at 0.75 GB/s it ends at 2 s, with flow 2.
        assert_eq!(k.set_rate(3, 7.5e8, secs(1.0)), 2.5e8);
        assert_eq!(k.settle_next(), Some(secs(2.0)));
        assert_eq!(k.pop_ended(secs(2.0)).map(|e| e.slot), Some(7));
        assert_eq!(k.pop_ended(secs(2.0)).map(|e| e.slot), Some(2));
        assert_eq!(k.settle_next(), None);
        assert!(k.is_empty(3) && k.is_empty(5));
    }

    /// Three flows share a clock: 1, 2 and 3 GB at 1 GB/s end at 1, 2 and 3 s. At 0.5 s the
    /// rate halves (one update for all three): 0.5, 1.5 and 2.5 GB left end at 1.5, 3.5 and
    /// 5.5 s. Each ends at its own time, by hand.
    #[test]
    fn one_rate_change_retimes_every_flow_of_a_clock() {
        let mut k = Clocks::default();
        for (slot, gb) in [(0, 1.0), (1, 2.0), (2, 3.0)] {
            k.join(slot, 0, gb * 1e9, 1e9, SimTime::ZERO);
        }
        assert_eq!(k.settle_next(), Some(secs(1.0)));
        k.set_rate(0, 5e8, secs(0.5));
        let mut ends = Vec::new();
        for t in [1.5, 3.5, 5.5] {
            let e = k.pop_ended(secs(t)).expect("one ends");
            ends.push((e.slot, e.end_s));
        }
        assert_eq!(ends, [(0, 1.5), (1, 3.5), (2, 5.5)]);
        assert!(k.is_empty(0));
    }

    /// A flow that moves takes its bytes left along: 1 GB at 1 GB/s on clock 0 moves at
    /// 0.25 s (0.75 GB left) to clock 1, which runs at 0.5 GB/s: it ends at 1.75 s. Clock 0's
    /// other flow (2 GB) keeps its end at 2 s, and the entry left behind is never popped.
    #[test]
    fn a_moved_flow_keeps_its_bytes_left() {
        let mut k = Clocks::default();
        k.join(0, 0, 1e9, 1e9, SimTime::ZERO);
        k.join(1, 0, 2e9, 1e9, SimTime::ZERO);
        k.join(2, 1, 4e9, 5e8, SimTime::ZERO);
        assert_eq!(k.move_to(0, 1, 0.0, secs(0.25)), 1e9);
        assert_eq!(k.rate_of(0), 5e8, "the clock keeps its rate");
        assert_eq!(k.left(0, secs(0.25)), 0.75e9);
        assert_eq!(k.left(0, secs(0.75)), 0.5e9);
        let mut flows: Vec<u32> = k.flows_of(1).collect();
        flows.sort_unstable();
        assert_eq!(flows, [0, 2]);
        assert_eq!(k.flows_of(0).collect::<Vec<_>>(), [1]);
        let first = k.pop_ended(secs(1.75)).unwrap();
        assert_eq!((first.slot, first.end_s), (0, 1.75));
        let second = k.pop_ended(secs(2.0)).unwrap();
        assert_eq!((second.slot, second.end_s), (1, 2.0));
        assert_eq!(k.settle_next(), Some(secs(8.0)));
    }

    /// A clock that empties starts over: its next flow counts from zero at the new rate.
    #[test]
    fn an_empty_clock_starts_over() {
        let mut k = Clocks::default();
        k.join(0, 0, 1e9, 1e9, SimTime::ZERO);
        assert_eq!(k.leave(0, secs(0.5)), 5e8);
        assert!(k.is_empty(0));
        assert_eq!(k.settle_next(), None);
        k.join(0, 0, 3e9, 2e9, secs(1.0));
        assert_eq!(k.clocks[0].base, 3e9);
        assert_eq!(k.pop_ended(secs(2.5)).map(|e| e.end_s), Some(2.5));
    }

    /// Stale entries are compacted once they outnumber live ones: 40 flows join clock 0 and
    /// all but one move to clock 1.
    #[test]
    fn stale_entries_do_not_pile_up() {
        let mut k = Clocks::default();
        for slot in 0..40 {
            k.join(slot, 0, 1e9 + slot as f64, 1e9, SimTime::ZERO);
        }
        for slot in 1..40 {
            k.move_to(slot, 1, 1e9, secs(0.1));
        }
        assert!(k.clocks[0].queue.len() <= 2 + 8, "compacted");
        assert_eq!(k.flows_of(0).collect::<Vec<_>>(), [0]);
        assert_eq!(k.flows_of(1).count(), 39);
    }

    /// Offsets below and above zero keep their order in a queue entry.
    #[test]
    fn entries_order_like_their_offsets() {
        let offsets = [-1e12, -3.5, -0.0, 0.0, 1e-300, 2.0, 7e15];
        for w in offsets.windows(2) {
            assert!(entry(w[0], 9, 0) < entry(w[1], 0, 0), "{w:?}");
        }
        for &x in &offsets {
            let (back, slot, generation) = unpack(entry(x, 7, 3));
            assert_eq!((back.to_bits(), slot, generation), (x.to_bits(), 7, 3));
        }
    }

    /// On a 1 ms grid, a completion at 1.0004 s falls at 1.001 s, and the flow's exact end is
    /// still reported.
    #[test]
    fn completions_fall_on_the_quantum_grid() {
        let mut k = Clocks::default();
        k.set_quantum(secs(1e-3));
        k.join(0, 0, 1.0004e9, 1e9, SimTime::ZERO);
        assert_eq!(k.settle_next(), Some(secs(1.001)));
        let e = k.pop_ended(secs(1.001)).unwrap();
        assert!((e.end_s - 1.0004).abs() < 1e-15);
    }
}
