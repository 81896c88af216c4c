//! StarPU-SimGrid's driver threads and pushes: which workers a push signals under eager and prio
//! ([`drivers`]), and the driver threads' pushes and loops and the order SimGrid wakes them in
//! ([`threads`]).

pub mod drivers;
pub mod threads;

use hetsim_schema::SimTime;

use super::model::machine::Machine;
use super::model::{MICROSECOND, Model};
use super::out::{Due, Out};
use drivers::Drivers;
use threads::{Doing, Threads};

/// Whom a push wakes.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Wakes {
    /// Every worker, at once (dm*, random, heteroprio: the task has its worker, or the
    /// policy needs no race).
    #[default]
    AtOnce,
    /// Paced: the workers up to the first asleep and not yet told that can run the task
    /// (eager and prio).
    One,
    /// Paced: every worker (ws and lws: each push wakes the whole context).
    Every,
}

/// StarPU-SimGrid's pacing of pushes and pops: the drivers' and their threads' states, the
/// workers to look at, and the pops and pushes of this instant.
#[derive(Default)]
pub struct Pacing {
    /// Whom the policy's pushes wake (set up from the policy, which returns a constant).
    pub(crate) wakes: Wakes,
    /// Driver states for the policies paced by StarPU-SimGrid's drivers.
    pub(crate) drivers: Drivers,
    /// Their threads' loops and pushes, and SimGrid's order of their wake-ups.
    pub(crate) threads: Threads,
    /// Worker indices that may make progress.
    pub(crate) dirty: Vec<u32>,
    pub(crate) dirty_mark: Vec<bool>,
    /// Drivers whose task ended and that may not pop before their `Due::Resume`: after
    /// their pushes and their progress.
    pub(crate) deferred: Vec<bool>,
    /// Node pairs whose requests a GPU driver is to handle in its next progress (a dm* driver
    /// between a task's end and its pop, a paced driver in its loop), per worker.
    pub(crate) parked_pairs: Vec<Vec<(u32, u32)>>,
    /// The worker whose driver loop pops now (paced policies pop only then).
    pub(crate) pop_turn: Option<usize>,
    /// A CPU's fetch found data in RAM at this instant: RAM's drivers are to be woken.
    pub(crate) ram_broadcast: bool,
    /// Pushes made at this instant by this releaser (None: the application): their count.
    pub(crate) push_clock: (SimTime, Option<u32>, u32),
}

impl Pacing {
    /// The pacing of a policy whose pushes wake `wakes`, over `drivers` (one per worker):
    /// every thread waiting, nothing pushed, parked or deferred.
    pub fn new(wakes: Wakes, drivers: Drivers) -> Pacing {
        let nw = drivers.count();
        Pacing {
            wakes,
            dirty_mark: vec![false; nw],
            threads: Threads::new((0..nw).map(|w| drivers.progress_us(w)).collect()),
            drivers,
            push_clock: (SimTime::ZERO, None, 0),
            deferred: vec![false; nw],
            parked_pairs: vec![Vec::new(); nw],
            ..Default::default()
        }
    }

    /// Whether pushes signal and pops follow StarPU-SimGrid's driver states (`drivers.rs`):
    /// the policies whose pushes race workers for tasks (eager, prio, ws, lws).
    pub fn paced(&self) -> bool {
        self.wakes != Wakes::AtOnce
    }

    /// How many workers there are (a driver each).
    fn workers(&self) -> usize {
        self.drivers.count()
    }

    /// Worker `w` may make progress: it goes on the stack of woken workers (once).
    pub fn wake(&mut self, w: u32) {
        if !self.dirty_mark[w as usize] {
            self.dirty_mark[w as usize] = true;
            self.dirty.push(w);
        }
    }

    pub fn wake_all(&mut self) {
        for w in 0..self.workers() as u32 {
            self.wake(w);
        }
    }

    /// `by` makes one more push at `now`: how many it has made at this instant.
    pub fn count_push(&mut self, by: Option<u32>, now: SimTime) -> u32 {
        let count = self.pushes_now(by, now) + 1;
        self.push_clock = (now, by, count);
        count
    }

    /// How many pushes `by` has made at `now`.
    pub fn pushes_now(&self, by: Option<u32>, now: SimTime) -> u32 {
        let (at, pusher, count) = self.push_clock;
        if (at, pusher) == (now, by) { count } else { 0 }
    }

    /// `w`'s driver is signalled: it starts its loop if it was waiting, or loops again after
    /// this one (`threads.rs`).
    pub fn signal(&mut self, w: usize, model: &Model, out: &mut Out) {
        if self.threads.signal(w) {
            self.thread_sleep(w, model, out);
        }
    }

    /// Every driver is signalled (a ws push; a broadcast to RAM, which every driver drives).
    pub fn signal_all(&mut self, model: &Model, out: &mut Out) {
        for w in 0..self.workers() {
            self.signal(w, model, out);
        }
    }

    /// Thread `i` (a worker's, or the application's) sleeps 1 us.
    pub fn thread_sleep(&mut self, i: usize, model: &Model, out: &mut Out) {
        self.thread_sleep_for(i, MICROSECOND, model, out);
    }

    /// Thread `i` sleeps `secs`.
    pub fn thread_sleep_for(&mut self, i: usize, secs: f64, model: &Model, out: &mut Out) {
        let at = out.after(model, secs);
        if self.threads.sleep(i, out.now, at) {
            out.timers.push((at, Due::Wake(i as u32)));
        }
    }

    /// Requests on (`src`, `dst`) wait for `w`'s next progress.
    pub fn park(&mut self, w: usize, src: u32, dst: u32) {
        if !self.parked_pairs[w].contains(&(src, dst)) {
            self.parked_pairs[w].push((src, dst));
        }
    }

    /// The node pairs parked for `w`'s progress, now handled.
    pub fn take_parked(&mut self, w: usize) -> Vec<(u32, u32)> {
        std::mem::take(&mut self.parked_pairs[w])
    }

    /// Under a paced policy, the GPU driver of `node` (the node handling a request), if its
    /// thread is in its loop (waiting, pushing or in its progress): its progress, to come,
    /// handles the request (`Data::post`).
    pub fn paced_handler_in_loop(&self, node: u32, machine: &Machine) -> Option<usize> {
        if !self.paced() || node == 0 {
            return None;
        }
        let w = (0..self.workers()).find(|&w| machine.workers[w].node == node)?;
        matches!(
            self.threads.threads[w].doing,
            Doing::Waiting | Doing::Pushing | Doing::Progress(_)
        )
        .then_some(w)
    }

    /// The GPU driver of `node` (the node handling a request), if it is between a task's
    /// end and its next progress: StarPU's CUDA driver ends a task, pushes the tasks it
    /// released, and only then, in its next progress, handles its node's request lists.
    /// (Held so, a prefetch short of memory cannot evict the tile the task has just written
    /// in the microseconds before its successor's push pins it.)
    pub fn pushing_driver(&self, node: u32, machine: &Machine) -> Option<usize> {
        if node == 0 {
            return None;
        }
        (0..self.workers()).find(|&w| self.deferred[w] && drives(machine, w, node))
    }

    /// A request handled by `node`'s GPU driver was posted: under a paced policy, that
    /// driver is flagged and signalled (`_starpu_post_data_request`).
    pub fn posted_on(&mut self, node: u32, model: &Model, out: &mut Out) {
        if node == 0 || !self.paced() {
            return;
        }
        for w in 0..self.workers() {
            if drives(&model.machine, w, node) {
                self.drivers.flag(w);
                self.signal(w, model, out);
            }
        }
    }

    /// The worker `w` whose task ended pops after its pushes (1 us each) and its progress
    /// (1 us per memory node it drives), whether or not the end released anything: StarPU's
    /// driver loop handles ended tasks, then makes its progress through its nodes' request
    /// lists (`__starpu_datawizard_progress`), and only then pops. So a prefetch that the
    /// end lets allocate, and that must first write a victim back, holds the pop until the
    /// write-back is done (`Runtime::driver_waits`), as StarPU's driver is the thread that
    /// reclaims.
    pub fn pop_after_progress(&mut self, w: usize, model: &Model, out: &mut Out) {
        let count = self.pushes_now(Some(w as u32), out.now);
        let at = out.after(
            model,
            count as f64 * MICROSECOND + self.drivers.pop_delay(w),
        );
        self.deferred[w] = true;
        out.timers.push((at, Due::Resume(w as u32)));
    }
}

/// Whether `w`'s driver handles requests on `node`: every worker's drives RAM (CUDA drivers
/// too), a GPU's its GPU.
pub fn drives(machine: &Machine, w: usize, node: u32) -> bool {
    node == 0 || machine.workers[w].node == node
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::runtime::model::machine::{Arch, Worker};

    /// A GPU (worker 0, node 1) and a CPU (worker 1, RAM); with or without overheads.
    fn setup(wakes: Wakes, overheads: bool) -> (Pacing, Model, Out) {
        let mut model = Model::default();
        model.flags.overheads = overheads;
        let worker = |arch, node| Worker {
            arch,
            node,
            name: String::new(),
            speedup: 1.0,
        };
        model.machine.workers = vec![worker(Arch::Cuda(0), 1), worker(Arch::Cpu, 0)];
        let drivers = Drivers::new(vec![true, false]);
        let pacing = Pacing {
            wakes,
            threads: Threads::new(vec![2, 1]),
            drivers,
            dirty_mark: vec![false; 2],
            deferred: vec![false; 2],
            parked_pairs: vec![Vec::new(); 2],
            ..Default::default()
        };
        let out = Out {
            now: us(100.0),
            ..Default::default()
        };
        (pacing, model, out)
    }

    fn us(x: f64) -> SimTime {
        SimTime::from_secs_saturating(x * 1e-6)
    }

    #[test]
    fn pushes_are_counted_per_releaser_and_instant() {
        let (mut p, _, _) = setup(Wakes::AtOnce, true);
        let (t0, t1) = (us(1.0), us(2.0));
        assert_eq!(p.count_push(Some(0), t0), 1);
        assert_eq!(p.count_push(Some(0), t0), 2);
        assert_eq!(p.pushes_now(Some(0), t0), 2);
        // Another releaser, or another instant, starts again.
        assert_eq!(p.pushes_now(None, t0), 0);
        assert_eq!(p.count_push(Some(0), t1), 1);
        assert_eq!(p.pushes_now(Some(0), t0), 0);
    }

    #[test]
    fn a_signal_starts_a_waiting_loop_with_one_sleep_and_a_second_signal_only_loops_again() {
        let (mut p, model, mut out) = setup(Wakes::Every, true);
        p.signal_all(&model, &mut out);
        // Both were waiting: each sleeps 1 us, in worker order.
        assert_eq!(
            out.timers,
            [(us(101.0), Due::Wake(0)), (us(101.0), Due::Wake(1))]
        );
        assert_eq!(p.threads.threads[0].doing, Doing::Progress(2));
        p.signal(0, &model, &mut out);
        assert_eq!(out.timers.len(), 2, "no second sleep");
        assert!(p.threads.threads[0].again);
    }

    #[test]
    fn without_overheads_sleeps_end_now() {
        let (mut p, model, mut out) = setup(Wakes::One, false);
        p.thread_sleep_for(1, 10e-6, &model, &mut out);
        assert_eq!(out.timers, [(us(100.0), Due::Wake(1))]);
    }

    #[test]
    fn a_driver_whose_task_ended_pops_after_its_pushes_and_progress() {
        let (mut p, model, mut out) = setup(Wakes::AtOnce, true);
        // The GPU's thread pushed twice at this instant: 2 us, then 2 us of progress (RAM
        // and its GPU).
        p.count_push(Some(0), out.now);
        p.count_push(Some(0), out.now);
        p.pop_after_progress(0, &model, &mut out);
        assert_eq!(out.timers, [(us(104.0), Due::Resume(0))]);
        // Until then, requests its node's driver handles wait for it; RAM's have no driver.
        assert_eq!(p.pushing_driver(1, &model.machine), Some(0));
        assert_eq!(p.pushing_driver(0, &model.machine), None);
    }

    #[test]
    fn only_a_paced_gpu_driver_in_its_loop_handles_a_request_at_its_progress() {
        let (mut p, model, mut out) = setup(Wakes::One, true);
        // Waiting: in its loop (the request wakes it).
        assert_eq!(p.paced_handler_in_loop(1, &model.machine), Some(0));
        // Holding what it can take: handled at once.
        p.threads.threads[0].doing = Doing::Busy;
        assert_eq!(p.paced_handler_in_loop(1, &model.machine), None);
        // Not paced, or RAM: never.
        let (q, model2, _) = setup(Wakes::AtOnce, true);
        assert_eq!(q.paced_handler_in_loop(1, &model2.machine), None);
        assert_eq!(p.paced_handler_in_loop(0, &model.machine), None);
        // A posted request flags and signals the GPU's driver only.
        p.threads.threads[0].doing = Doing::Waiting;
        p.posted_on(1, &model, &mut out);
        assert_eq!(out.timers, [(us(101.0), Due::Wake(0))]);
    }
}
