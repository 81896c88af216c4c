//! The worker loop: woken workers advance, pop while they have room, fetch and run.

use super::dirties;
use crate::runtime::core::Runtime;
use crate::runtime::model::QUEUE_COST;
use crate::runtime::model::machine::Arch;
use crate::runtime::pacing::drives;
use crate::runtime::pacing::threads::Doing;
use crate::runtime::tasks::TaskState;

impl Runtime {
    /// Lets every worker that may move do so.
    pub(crate) fn progress(&mut self) {
        loop {
            // Last woken first (a stack). Under eager, prio, ws and lws pops are made by
            // the driver threads instead, in SimGrid's order (`threads.rs`).
            while let Some(w) = self.pacing.dirty.pop() {
                self.pacing.dirty_mark[w as usize] = false;
                self.advance_worker(w as usize);
            }
            // Fetches first, then prefetches (StarPU serves its request lists in that order).
            let nodes: Vec<u32> = (0..self.data.mem.freed.len() as u32)
                .filter(|&n| std::mem::take(&mut self.data.mem.freed[n as usize]))
                .collect();
            if nodes.is_empty() {
                break;
            }
            for n in nodes {
                self.with_data(|d, cx| d.pump_into(cx, n));
            }
        }
        // Each driver's progress also tidies its node (after this instant's fetches).
        for n in 1..self.data.mem.tidy_due.len() as u32 {
            if std::mem::take(&mut self.data.mem.tidy_due[n as usize]) {
                self.with_data(|d, cx| d.tidy(cx, n));
            }
        }
    }

    pub(crate) fn advance_worker(&mut self, w: usize) {
        if self.driver_waits(w) {
            return;
        }
        let mut popped_one = false;
        loop {
            // Fetching task: are its inputs there now?
            if let Some(t) = self.workers.each[w].fetching {
                if !self.fetch(t, w) {
                    break;
                }
                self.fetched(t, w);
            }
            if !self.may_pop(w, popped_one) {
                break;
            }
            popped_one = true;
            let (policy, mut view) = self.policy_and_view();
            let popped = policy.pop(w, &mut view);
            self.pacing.drivers.popped(w, popped.is_some());
            let Some(t) = popped else { break };
            let ram_hit = self.take_popped(t, w);
            // Its fetch's broadcast comes after the other pops of this instant.
            self.pacing.ram_broadcast |= ram_hit && self.pacing.paced();
        }
        self.try_run(w);
        self.loop_on_if_room(w);
    }

    /// Task `t`'s data are all on `w`'s node: it is ready, and a paced CUDA driver queues its
    /// kernel.
    fn fetched(&mut self, t: u32, w: usize) {
        // StarPU takes the task's prefetch pins off once its data are all there
        // (_starpu_fetch_task_input_tail), after its own requests landed.
        let node = self.model.machine.workers[w].node;
        self.with_data(|d, cx| d.unpin_prefetch(cx, t, node));
        self.tasks.state[t as usize] = TaskState::Ready;
        self.tasks.launched[t as usize] = self.out.now;
        self.workers.each[w].fetching = None;
        if self.pacing.paced()
            && matches!(self.model.machine.workers[w].arch, Arch::Cuda(_))
            && matches!(
                self.pacing.threads.threads[w].doing,
                Doing::Busy | Doing::Popping
            )
        {
            // The CUDA driver queues the kernel (a 10 us sleep), then loops on.
            self.pacing.threads.start_loop_after_sleep(w);
            self.pacing
                .thread_sleep_for(w, QUEUE_COST, &self.model, &mut self.out);
        }
    }

    /// Whether `w` pops now: it has room, is not between a task's end and its pop, holds no
    /// synchronous task, and (paced drivers pop once per loop, at its end: `threads.rs`) it
    /// is its turn and it has not popped yet.
    fn may_pop(&self, w: usize, popped_one: bool) -> bool {
        !(self.workers.each[w].in_hand.len() >= self.slots(w)
            || self.pacing.deferred[w]
            || self.holds_sync(w)
            || self.pacing.paced() && (self.pacing.pop_turn != Some(w) || popped_one))
    }

    /// `w` took task `t`: it is fetched in StarPU's handle order, its buffers referenced and
    /// marked as the fetch marks them. Returns whether a buffer was found in RAM.
    fn take_popped(&mut self, t: u32, w: usize) -> bool {
        self.log('P', |rt| {
            let name = &rt.model.graph.tasks[t as usize].label;
            format!("{w} {name}{}", rt.log_accesses(t))
        });
        let mut ram_hit = false;
        self.tasks.worker_of[t as usize] = w as u32;
        self.tasks.state[t as usize] = TaskState::Fetching;
        self.workers.each[w].in_hand.push_back(t);
        self.workers.each[w].fetching = Some(t);
        let node = self.model.machine.workers[w].node;
        for (h, mode) in self.model.graph.fetch_order(t) {
            let writes = dirties(mode);
            let mut r = self.data.replicas.get_mut(h, node);
            r.refcnt += 1;
            // StarPU's fetch for a write marks the chunk dirty, then recently used; when
            // the data still has to come, `fetch` marks it where it was allocated.
            if writes {
                r.marked_clean = false;
            }
            let valid = r.valid();
            drop(r);
            if writes {
                self.data.mem.writing[h as usize] += 1;
                self.data.mem.tidy_due[node as usize] = true;
            }
            if mode.writes() {
                // StarPU's fetch for a write: the copy here is the only valid one once
                // it is here.
                self.data.mem.writer_node[h as usize] = Some(node);
                if valid {
                    self.with_data(|d, cx| d.own(cx, h, node));
                }
            }
            // The fetch finding the data there marks its chunk recently used.
            if valid {
                self.data.touch(h, node);
                // A CPU's node is RAM.
                ram_hit |= node == 0;
            }
        }
        ram_hit
    }

    /// A paced driver that held what it could take and has room again: its loop goes on.
    fn loop_on_if_room(&mut self, w: usize) {
        if self.pacing.paced()
            && self.pacing.threads.threads[w].doing == Doing::Busy
            && self.has_room(w)
        {
            self.pacing.threads.start_loop(w);
            self.pacing.thread_sleep(w, &self.model, &mut self.out);
        }
    }

    /// Worker `w`'s driver loop ends its progress, handling the requests made meanwhile that
    /// it handles, pops (one task at most), then loops on, holds or waits.
    pub(crate) fn driver_pops(&mut self, w: usize) {
        self.pump_parked(w);
        let before = self.workers.each[w].in_hand.len();
        self.pacing.pop_turn = Some(w);
        self.advance_worker(w);
        self.pacing.pop_turn = None;
        let got = self.workers.each[w].in_hand.len() > before;
        let room = self.has_room(w);
        // A launch during the pop already set the thread sleeping (`advance_worker`).
        if self.pacing.threads.popped(w, got, room) && self.pacing.threads.sleeping(w) {
            self.pacing.thread_sleep(w, &self.model, &mut self.out);
        }
        if !self.pacing.threads.sleeping(w) {
            // Holding or waiting: what was asked meanwhile is handled in its next iteration.
            self.pump_parked(w);
        }
    }

    /// The requests parked for `w`'s progress are handled now.
    fn pump_parked(&mut self, w: usize) {
        for (src, dst) in self.pacing.take_parked(w) {
            self.with_data(|d, cx| d.pump(cx, src, dst));
        }
    }

    /// Tasks worker `w` may hold: a GPU's pipeline, a CPU's one.
    fn slots(&self, w: usize) -> usize {
        match self.model.machine.workers[w].arch {
            Arch::Cuda(_) => self.model.pipeline as usize,
            Arch::Cpu => 1,
        }
    }

    /// Whether worker `w` could take a task now.
    fn has_room(&self, w: usize) -> bool {
        // StarPU's drivers pop nothing while a task's data are coming (`task_transferring`).
        self.workers.each[w].in_hand.len() < self.slots(w)
            && self.workers.each[w].fetching.is_none()
            && !self.holds_sync(w)
            && !self.driver_waits(w)
    }

    /// A CPU's fetch finding a buffer in RAM wakes every driver of RAM, without telling
    /// them to stay awake (StarPU-SimGrid's `_starpu_fetch_task_input_cb` broadcasts the
    /// node's queue).
    pub(crate) fn broadcast_ram(&mut self) {
        if std::mem::take(&mut self.pacing.ram_broadcast) {
            self.pacing.signal_all(&self.model, &mut self.out);
        }
    }

    /// A request into `node` ended: under a paced policy, it flags and signals every driver
    /// of the node (in RAM, every worker: `drivers.rs`), and the worker waiting for the data
    /// goes on at once.
    pub(crate) fn landed_on(&mut self, node: u32) {
        if !self.pacing.paced() {
            // Only the workers of the destination can be waiting for these data.
            for w in 0..self.workers.each.len() {
                if self.model.machine.workers[w].node == node {
                    self.pacing.wake(w as u32);
                }
            }
            return;
        }
        for w in 0..self.workers.each.len() {
            if !drives(&self.model.machine, w, node) {
                continue;
            }
            self.pacing.drivers.flag(w);
            if self.workers.each[w].fetching.is_some() {
                self.pacing.wake(w as u32);
            } else {
                self.pacing.signal(w, &self.model, &mut self.out);
            }
        }
    }

    /// A `Due::Resume` came: the driver `w` whose task ended has made its pushes and its
    /// progress, handling the requests held meanwhile, and pops now (unless that progress
    /// started a reclaim it waits for).
    pub(crate) fn resume(&mut self, w: u32) {
        self.pacing.deferred[w as usize] = false;
        self.pump_parked(w as usize);
        self.advance_worker(w as usize);
    }

    /// Whether `w`'s driver is waiting for an eviction's write-back on its node: StarPU
    /// writes a dirty victim back synchronously (transfer_subtree_to_node waits for the
    /// request), so the thread that allocates, the GPU's driver, neither handles task ends
    /// nor pops nor launches meanwhile; data requests still progress.
    pub(crate) fn driver_waits(&self, w: usize) -> bool {
        self.data
            .mem
            .reclaiming(self.model.machine.workers[w].node as usize)
    }
}
