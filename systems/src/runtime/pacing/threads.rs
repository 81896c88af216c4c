//! StarPU-SimGrid's driver threads, one per worker and one for the application, as SimGrid
//! runs them, for the policies whose workers race for pushed tasks (eager, prio, ws, lws).
//!
//! A driver loops: it sleeps 1 us per memory node it drives (its data-request progress: a
//! CPU's RAM, a CUDA driver's RAM then its GPU), pops, and, having found nothing, waits until
//! a push or a data event signals it (`starpu_pthread_wait_wait`). A signal during its loop
//! clears its wait flag, so a loop that finds nothing goes round again instead of waiting.
//! A thread that released tasks pushes them one per microsecond (`_starpu_push_task` sleeps
//! 1 us first), then goes on with its loop.
//!
//! SimGrid's order at one instant, from the oracle's log of every sleep (`s` and `a` lines of
//! `tools/starpu-simgrid/threads-log.patch`; `sleep-order.py` matches 6,453 of 6,454 instants
//! of mirage LU eager 8 and 16 tiles, attila Cholesky ws 16, mirage Cholesky dmda 8):
//! sleeps ending together wake by the instant they began, and among those begun at one
//! instant, the last begun first. A thread's pushes at an instant land before any pop
//! of that instant (popping takes more simcalls; every instant of the log agrees). A
//! `wont_use` hint coming due costs its thread two pushes that go to no scheduler
//! ([`ACQUIRE`]).
//!
//! Simplified: which of several threads ending at one instant releases a task they all
//! unblock (the last to end here; StarPU interleaves their ends' processing), and a pusher's
//! walk holding the mutex of each worker it passes (it can delay that worker's pop).
//!
//! Plain data: the coordinator (`core.rs`) asks for the sleeps and the order, and schedules.

use std::cmp::Reverse;
use std::collections::VecDeque;

use hetsim_schema::SimTime;

/// A push that is not a task's (a data acquire or its callback): it costs the thread its
/// microsecond and goes to no scheduler.
pub const ACQUIRE: u32 = u32::MAX;

/// A `wont_use` hint's callback: a push like [`ACQUIRE`], whose handle the thread keeps in
/// its `hints` (the hint acts after it).
const HINT_CALLBACK: u32 = u32::MAX - 1;

/// What a thread is doing.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Doing {
    /// Blocked in its wait: a signal starts its loop.
    #[default]
    Waiting,
    /// Pushing tasks it released, 1 us each.
    Pushing,
    /// In its loop's progress: this many microseconds of it to sleep before it pops.
    Progress(u8),
    /// Popping now.
    Popping,
    /// Holding what it can take (a full pipeline, a task fetching or running, a synchronous
    /// kernel): its loop goes on when that ends.
    Busy,
}

/// One thread.
#[derive(Debug, Clone, Default)]
pub struct Thread {
    pub doing: Doing,
    /// Signalled during its loop: it loops again rather than waiting.
    pub again: bool,
    /// Tasks it released and has not pushed yet.
    pub pending: VecDeque<u32>,
    /// The handles of the hint callbacks among them, in order.
    hints: VecDeque<u32>,
    /// When its current sleep began, and its rank among the sleeps begun at that instant.
    slept: (SimTime, u32),
    /// When its current sleep ends (a thread sleeps one sleep at a time).
    due: Option<SimTime>,
}

/// The threads: one per worker, then the application's.
#[derive(Debug, Clone, Default)]
pub struct Threads {
    pub threads: Vec<Thread>,
    /// Microseconds of progress per loop, per worker.
    progress: Vec<u8>,
    /// Sleeps begun at the current instant, for ranks.
    clock: (SimTime, u32),
}

impl Threads {
    /// `progress[w]`: the memory nodes worker `w`'s driver drives (its microseconds of
    /// progress per loop). Every thread starts waiting.
    pub fn new(progress: Vec<u8>) -> Threads {
        Threads {
            threads: vec![Thread::default(); progress.len() + 1],
            progress,
            clock: (SimTime::ZERO, 0),
        }
    }

    /// The application's thread.
    pub fn app(&self) -> usize {
        self.progress.len()
    }

    /// Thread `i` begins a sleep at `now` that ends `at`: false if it already sleeps (its
    /// state moved on during that sleep, which goes on).
    pub fn sleep(&mut self, i: usize, now: SimTime, at: SimTime) -> bool {
        if self.threads[i].due.is_some() {
            return false;
        }
        if self.clock.0 != now {
            self.clock = (now, 0);
        }
        self.clock.1 += 1;
        self.threads[i].slept = (now, self.clock.1);
        self.threads[i].due = Some(at);
        true
    }

    /// Sorts threads whose sleeps end at one instant in the order SimGrid wakes them, pushers
    /// first (module doc).
    pub fn wake_order(&self, woken: &mut [u32]) {
        woken.sort_by_key(|&i| {
            let t = &self.threads[i as usize];
            (t.doing != Doing::Pushing, t.slept.0, Reverse(t.slept.1))
        });
    }

    /// `t` was released by thread `i`: true if `i` starts pushing now (it was not sleeping).
    pub fn release(&mut self, i: usize, t: u32) -> bool {
        let th = &mut self.threads[i];
        th.pending.push_back(t);
        match th.doing {
            Doing::Waiting | Doing::Busy | Doing::Popping => {
                th.doing = Doing::Pushing;
                true
            }
            Doing::Pushing | Doing::Progress(_) => false,
        }
    }

    /// The item thread `i` pushes for a callback of a `wont_use` hint on `h` ([`Threads::release`]
    /// it).
    pub fn hint_callback(&mut self, i: usize, h: u32) -> u32 {
        self.threads[i].hints.push_back(h);
        HINT_CALLBACK
    }

    /// The handle whose hint callback thread `i` pushes, if item `t` is one.
    pub fn take_hint(&mut self, i: usize, t: u32) -> Option<u32> {
        if t == HINT_CALLBACK {
            self.threads[i].hints.pop_front()
        } else {
            None
        }
    }

    /// A signal or a broadcast reaches worker `w`'s thread: true if it starts its loop now
    /// (it was waiting); during a loop or its pushes it will loop again.
    pub fn signal(&mut self, w: usize) -> bool {
        let th = &mut self.threads[w];
        match th.doing {
            Doing::Waiting => {
                th.doing = Doing::Progress(self.progress[w]);
                true
            }
            Doing::Pushing | Doing::Progress(_) | Doing::Popping => {
                th.again = true;
                false
            }
            Doing::Busy => false,
        }
    }

    /// Thread `i` pushes its next task at once (no overheads): `Step::Push` while it has one.
    pub fn push_now(&mut self, i: usize) -> Step {
        if self.threads[i].doing == Doing::Pushing {
            self.step(i)
        } else {
            Step::Nothing
        }
    }

    /// Worker `w`'s thread starts a loop (after its pushes, or when what it held ended).
    pub fn start_loop(&mut self, w: usize) {
        self.threads[w].doing = Doing::Progress(self.progress[w]);
    }

    /// Worker `w`'s thread sleeps once more (the caller's) before its loop.
    pub fn start_loop_after_sleep(&mut self, w: usize) {
        self.threads[w].doing = Doing::Progress(self.progress[w] + 1);
    }

    /// Thread `i`'s sleep ended at `now`: what it does now.
    pub fn woke(&mut self, i: usize, now: SimTime) -> Step {
        let th = &mut self.threads[i];
        if th.due != Some(now) {
            return Step::Nothing;
        }
        th.due = None;
        self.step(i)
    }

    /// What thread `i` does next, awake.
    fn step(&mut self, i: usize) -> Step {
        let th = &mut self.threads[i];
        match th.doing {
            Doing::Pushing => {
                let t = th.pending.pop_front().expect("a pusher has tasks");
                if th.pending.is_empty() {
                    if i == self.progress.len() {
                        th.doing = Doing::Waiting;
                    } else {
                        th.doing = Doing::Progress(self.progress[i]);
                    }
                }
                Step::Push(t)
            }
            Doing::Progress(left) if left > 1 => {
                th.doing = Doing::Progress(left - 1);
                Step::Sleep
            }
            Doing::Progress(_) if !th.pending.is_empty() => {
                th.doing = Doing::Pushing;
                Step::Sleep
            }
            Doing::Progress(_) => {
                th.doing = Doing::Popping;
                Step::Pop
            }
            Doing::Waiting | Doing::Busy | Doing::Popping => Step::Nothing,
        }
    }

    /// Worker `w`'s thread popped (`got`: a task), and `room` says whether it can take more:
    /// it loops on, holds, or waits; false if the pop already moved it on (a launch).
    pub fn popped(&mut self, w: usize, got: bool, room: bool) -> bool {
        if self.threads[w].doing != Doing::Popping {
            return false;
        }
        let again = std::mem::take(&mut self.threads[w].again);
        self.threads[w].doing = if room && (got || again) {
            Doing::Progress(self.progress[w])
        } else if !room {
            Doing::Busy
        } else {
            Doing::Waiting
        };
        true
    }

    /// Whether thread `i` sleeps now (a wake-up is due).
    pub fn sleeping(&self, i: usize) -> bool {
        matches!(self.threads[i].doing, Doing::Pushing | Doing::Progress(_))
    }
}

/// What a thread whose sleep ended does.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Step {
    /// Pushes this task (and sleeps again if it has more, or starts its loop).
    Push(u32),
    /// Sleeps another microsecond.
    Sleep,
    /// Pops.
    Pop,
    /// Nothing (a stale wake-up).
    Nothing,
}

#[cfg(test)]
mod tests {
    use super::*;

    fn us(n: u64) -> SimTime {
        SimTime::from_secs_saturating(n as f64 * 1e-6)
    }

    #[test]
    fn sleeps_begun_together_wake_last_begun_first_after_older_ones() {
        // The oracle's log, mirage LU eager, 60328.708 us: CPUs 4..10 begin their progress
        // in that order and wake at the next microsecond as 10, 9, ..., 4.
        let mut th = Threads::new(vec![2, 2, 2, 1, 1, 1, 1]);
        for w in [0usize, 1] {
            th.signal(w);
            th.sleep(w, us(1), us(2));
        }
        for w in [3usize, 4, 5, 6] {
            th.signal(w);
            th.sleep(w, us(2), us(3));
        }
        let mut order = vec![6, 3, 0, 4, 1, 5];
        th.wake_order(&mut order);
        assert_eq!(order, [1, 0, 6, 5, 4, 3]);
    }

    #[test]
    fn pushers_go_before_poppers_of_the_same_instant() {
        let mut th = Threads::new(vec![1, 1, 1]);
        th.signal(0);
        th.sleep(0, us(1), us(2));
        assert!(th.release(1, 7));
        th.sleep(1, us(1), us(2));
        th.signal(2);
        th.sleep(2, us(1), us(2));
        let mut order = vec![0, 1, 2];
        th.wake_order(&mut order);
        assert_eq!(order, [1, 2, 0]);
    }

    /// Thread `i` sleeps from `t` us to `t + 1` us and wakes.
    fn nap(th: &mut Threads, i: usize, t: u64) -> Step {
        assert!(th.sleep(i, us(t), us(t + 1)));
        th.woke(i, us(t + 1))
    }

    #[test]
    fn a_releaser_pushes_one_task_per_wake_then_progresses_then_pops() {
        // A CUDA driver (2 us of progress) releases two tasks.
        let mut th = Threads::new(vec![2]);
        th.threads[0].doing = Doing::Busy;
        assert!(th.release(0, 4));
        assert!(!th.release(0, 5));
        assert_eq!(nap(&mut th, 0, 0), Step::Push(4));
        assert_eq!(nap(&mut th, 0, 1), Step::Push(5));
        assert_eq!(nap(&mut th, 0, 2), Step::Sleep);
        assert_eq!(nap(&mut th, 0, 3), Step::Pop);
        // The application's thread waits once its pushes are done.
        let app = th.app();
        assert!(th.release(app, 9));
        assert_eq!(nap(&mut th, app, 0), Step::Push(9));
        assert_eq!(th.threads[app].doing, Doing::Waiting);
    }

    #[test]
    fn a_thread_sleeps_one_sleep_at_a_time() {
        let mut th = Threads::new(vec![1]);
        assert!(th.signal(0));
        assert!(th.sleep(0, us(0), us(1)));
        // A second sleep asked meanwhile is not begun, and a wake-up not due is ignored.
        assert!(!th.sleep(0, us(0), us(5)));
        assert_eq!(th.woke(0, us(5)), Step::Nothing);
        assert_eq!(th.woke(0, us(1)), Step::Pop);
    }

    #[test]
    fn a_signal_during_a_loop_makes_an_empty_pop_loop_again() {
        let mut th = Threads::new(vec![1]);
        assert!(th.signal(0));
        assert!(!th.signal(0));
        assert_eq!(nap(&mut th, 0, 0), Step::Pop);
        th.popped(0, false, true);
        assert_eq!(th.threads[0].doing, Doing::Progress(1));
        assert_eq!(nap(&mut th, 0, 1), Step::Pop);
        th.popped(0, false, true);
        assert_eq!(th.threads[0].doing, Doing::Waiting);
        // A CPU that took a task holds it; a signal meanwhile changes nothing.
        th.signal(0);
        nap(&mut th, 0, 2);
        th.popped(0, true, false);
        assert!(!th.signal(0));
        assert_eq!(th.threads[0].doing, Doing::Busy);
    }
}
