//! The runtime's state and its worker loop: tasks released to the policy, workers popping,
//! fetching their tasks' data, running them one at a time, and what a task's end releases.
//! Plain state in; timers and transfer flows out (`timers`, `flows`), handed to the calendar
//! and the network by the coordinator.

use bevy_ecs::prelude::Resource;
use hetsim_schema::SimTime;
use hetsim_schema::tasks::Mode;

use super::data::Data;
use super::memory::{Evict, Msi};
use super::model::machine::Arch;
use super::model::{MICROSECOND, Model, QUEUE_COST};
use super::out::{Due, Out};
use super::pacing::threads::{ACQUIRE, Doing, Step};
use super::pacing::{Pacing, drives};
use super::sched::{Policy, View, Wakes};
use super::tasks::{TaskState, Tasks};
use super::transfers::Level;
use super::workers::Workers;

/// The runtime's whole state, grouped by owner.
#[derive(Resource, Default)]
pub struct Runtime {
    /// What the run reads.
    pub(crate) model: Model,
    /// The scheduling policy (set up with the runtime).
    pub(crate) sched: Option<Box<dyn Policy>>,
    pub(crate) rng: Option<rand_chacha::ChaCha8Rng>,
    pub(crate) tasks: Tasks,
    pub(crate) workers: Workers,
    pub(crate) pacing: Pacing,
    pub(crate) data: Data,
    pub(crate) out: Out,
}

impl Runtime {
    pub(crate) fn priority(&self, t: u32) -> i64 {
        self.model.graph.tasks[t as usize].priority
    }

    pub(crate) fn uniform(&mut self) -> f64 {
        super::sched::uniform(self.rng.as_mut().expect("seeded"))
    }

    /// The policy, and what it may read of the rest of the runtime.
    pub(crate) fn policy_and_view(&mut self) -> (&mut dyn Policy, View<'_>) {
        let Runtime {
            sched,
            model,
            tasks,
            workers,
            data,
            rng,
            out,
            ..
        } = self;
        let view = View {
            graph: &model.graph,
            machine: &model.machine,
            models: &mut model.models,
            replicas: &data.replicas,
            pred: &tasks.pred,
            running: &workers.running,
            rng: rng.as_mut().expect("seeded"),
            now: out.now.as_secs_f64(),
            alpha: model.alpha,
            beta: model.beta,
        };
        (sched.as_deref_mut().expect("a policy"), view)
    }

    /// Appends a line to the data-event log when it is kept (`output.runtime_log`): the
    /// kind, the time in microseconds, then `rest`, as the StarPU-SimGrid oracle's log
    /// writes them (`tools/starpu-simgrid/xlog.patch`).
    pub(crate) fn log(&mut self, kind: char, rest: impl FnOnce(&Runtime) -> String) {
        if let Some(mut log) = self.out.log.take() {
            log.push(format!(
                "{kind} {:.3} {}",
                self.out.now.as_secs_f64() * 1e6,
                rest(self)
            ));
            self.out.log = Some(log);
        }
    }

    /// A handle's name in the log, by index as the StarPU traces name it (`0x<index>`).
    pub(crate) fn handle_name(&self, h: u32) -> String {
        format!("{h:#x}")
    }

    /// A task's handles and modes as the log lists them (`name:mode`, StarPU's R 1, W 2,
    /// RW 3).
    fn log_accesses(&self, t: u32) -> String {
        let mut out = String::new();
        for &(h, mode) in &self.model.graph.tasks[t as usize].accesses {
            let m = u8::from(mode.reads()) | (u8::from(mode.modifies()) << 1);
            out.push_str(&format!(" {}:{m}", self.handle_name(h)));
        }
        out
    }

    pub(crate) fn source_for(&self, h: u32, dst: u32) -> Option<u32> {
        let size = self.model.graph.handles[h as usize].size;
        self.data
            .replicas
            .source_for(h, dst, size, &self.model.machine)
    }

    /// Task `t`'s dependencies are done: hand it to the policy.
    pub(crate) fn release(&mut self, t: u32, by: Option<u32>) {
        self.tasks.state[t as usize] = TaskState::Queued;
        let (policy, mut view) = self.policy_and_view();
        let pushed = policy.push(t, by, &mut view);
        if let Some(p) = pushed.prediction {
            self.tasks.pred[t as usize] = p;
        }
        if let Some(w) = pushed.queue {
            // The push and the queue's length after it (the oracle logs it before: `n - 1`).
            self.log('B', |rt| {
                let n = rt.sched.as_ref().and_then(|p| p.queued_on(w)).unwrap_or(0);
                let name = &rt.model.graph.tasks[t as usize].label;
                format!("{w} {name} n={}", n.saturating_sub(1))
            });
        }
        if let Some(w) = pushed.prefetch {
            self.prefetch(t, w);
        }
        if self.pacing.paced() {
            self.signal_for(t);
        } else if let Some(w) = pushed.queue {
            self.pacing.wake(w as u32);
        } else {
            self.pacing.wake_all();
        }
    }

    /// Task `t`'s dependencies are done, `by` released it: pushed after the pusher's earlier
    /// pushes of this instant, 1 us each (StarPU-SimGrid's push cost, whatever the policy:
    /// `_starpu_push_task`).
    pub(crate) fn ready(&mut self, t: u32, by: Option<u32>) {
        if self.pacing.paced() {
            let i = by.map_or(self.pacing.threads.app(), |w| w as usize);
            if self.pacing.threads.release(i, t) {
                self.pacing.thread_sleep(i, &self.model, &mut self.out);
            }
            return;
        }
        let count = self.pacing.count_push(by, self.out.now);
        self.tasks.pusher[t as usize] = by;
        let at = self.out.after(&self.model, count as f64 * MICROSECOND);
        self.out.timers.push((at, Due::Push(t)));
    }

    /// Worker `w`'s thread pushes something that is not a task (an acquire, a callback):
    /// 1 us of its time, no scheduler. A `wont_use` callback (`hint`) takes effect 1 us
    /// after it.
    fn pseudo_push(&mut self, w: usize, hint: Option<u32>) {
        if self.pacing.paced() {
            let item = hint.map_or(ACQUIRE, |h| self.pacing.threads.hint_callback(w, h));
            if self.pacing.threads.release(w, item) {
                self.pacing.thread_sleep(w, &self.model, &mut self.out);
            }
        } else {
            let count = self.pacing.count_push(Some(w as u32), self.out.now);
            if let Some(h) = hint {
                let at = self
                    .out
                    .after(&self.model, (count + 1) as f64 * MICROSECOND);
                self.out.timers.push((at, Due::Hint(h)));
            }
        }
    }

    /// A `Due::Push` came: `t` goes to the policy now.
    pub(crate) fn push_due(&mut self, t: u32) {
        self.release(t, self.tasks.pusher[t as usize]);
    }

    /// The push of `t` signals workers as StarPU-SimGrid's drivers would (`drivers.rs`),
    /// the pusher's own among them (its loop goes round again); each pops after its own
    /// progress (`threads.rs`).
    fn signal_for(&mut self, t: u32) {
        if self.pacing.wakes == Wakes::Every {
            self.pacing.signal_all(&self.model, &mut self.out);
            return;
        }
        let eligible: Vec<bool> = (0..self.workers.each.len())
            .map(|w| self.policy_and_view().1.can_run(t, w))
            .collect();
        for w in self.pacing.drivers.push_wakes(|w| eligible[w]) {
            self.pacing.signal(w, &self.model, &mut self.out);
        }
    }

    /// Thread `i`'s sleep ended: it pushes its next task, sleeps on, or pops.
    pub(crate) fn thread_woke(&mut self, i: usize) {
        match self.pacing.threads.woke(i, self.out.now) {
            Step::Push(t) => {
                self.thread_pushes(i, t);
                // Without the runtime's overheads a thread's pushes take no time: all at once.
                if !self.model.flags.overheads {
                    while let Step::Push(t) = self.pacing.threads.push_now(i) {
                        self.thread_pushes(i, t);
                    }
                }
                if self.pacing.threads.sleeping(i) {
                    self.pacing.thread_sleep(i, &self.model, &mut self.out);
                }
            }
            Step::Sleep => self.pacing.thread_sleep(i, &self.model, &mut self.out),
            Step::Pop => self.driver_pops(i),
            Step::Nothing => {}
        }
    }

    /// Thread `i` pushes `t` to the policy (an [`ACQUIRE`] goes to none, a hint's callback
    /// takes effect 1 us later).
    fn thread_pushes(&mut self, i: usize, t: u32) {
        if t == ACQUIRE {
            return;
        }
        if let Some(h) = self.pacing.threads.take_hint(i, t) {
            let at = self.out.after(&self.model, MICROSECOND);
            self.out.timers.push((at, Due::Hint(h)));
            return;
        }
        let by = (i != self.pacing.threads.app()).then_some(i as u32);
        self.release(t, by);
    }

    /// Worker `w`'s driver loop ends its progress, handling the requests made meanwhile that
    /// it handles, pops (one task at most), then loops on, holds or waits.
    fn driver_pops(&mut self, w: usize) {
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
            self.pump(src, dst);
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

    /// A task's kernel ended: its end is handled now, or when its driver is back.
    pub(crate) fn kernel_done(&mut self, t: u32) {
        let w = self.tasks.worker_of[t as usize] as usize;
        if self.driver_waits(w) {
            // The GPU goes on with a kernel launched before the wait (the pipeline).
            self.workers.each[w].ended.push(t);
            self.kernel_off(w, t);
            self.try_run(w);
        } else {
            self.task_done(t);
        }
    }

    /// Task `t` no longer occupies worker `w`: out of its hand, and off the device if it
    /// is the one running (its end may already have been seen while the driver waited).
    fn kernel_off(&mut self, w: usize, t: u32) {
        if self.workers.running[w] == Some(t) {
            self.workers.running[w] = None;
        }
        self.workers.each[w].in_hand.retain(|&x| x != t);
    }

    /// The write-backs `node`'s driver waited for are over: it handles the task ends it
    /// missed and goes on.
    pub(crate) fn driver_back(&mut self, node: u32) {
        for w in 0..self.model.machine.workers.len() {
            if self.model.machine.workers[w].node == node {
                for t in std::mem::take(&mut self.workers.each[w].ended) {
                    self.task_done(t);
                }
                self.pacing.wake(w as u32);
            }
        }
    }

    /// Task `t` ended: its writes make its worker's replicas the owners, hints come due,
    /// successors are released, and its worker and memory waiters may go on.
    pub(crate) fn task_done(&mut self, t: u32) {
        let w = self.tasks.worker_of[t as usize] as usize;
        let node = self.model.machine.workers[w].node;
        self.data.tick += 1;
        let nn = self.model.machine.nodes.len() as u32;
        let acc = self.model.graph.tasks[t as usize].accesses.clone();
        for (h, mode) in acc {
            if mode == Mode::Scratch {
                continue;
            }
            if mode.modifies() {
                self.only_copy_on(h, node);
                self.data.mem.writer_node[h as usize] = None;
                // Its buffers may be tidied again.
                self.data.mem.writing[h as usize] -= 1;
                self.data.mem.tidy_due[node as usize] = true;
            }
            self.data.replicas.get_mut(h, node).refcnt -= 1;
        }
        self.kernel_off(w, t);
        let wr = &mut self.workers.each[w];
        wr.tasks += 1;
        self.tasks.state[t as usize] = TaskState::Done;
        self.out.report.task_times[t as usize].1 = self.out.now.as_secs_f64();
        self.tasks.done += 1;
        let (policy, view) = self.policy_and_view();
        policy.on_end(t, w, &view);
        let mut hints_due = Vec::new();
        for i in 0..self.model.graph.hint_of[t as usize].len() {
            let id = self.model.graph.hint_of[t as usize][i] as usize;
            self.tasks.hints_left[id] -= 1;
            if self.tasks.hints_left[id] == 0 {
                hints_due.push(self.model.graph.hints[id].0);
            }
        }
        let succ: Vec<u32> = self.model.graph.successors(t).to_vec();
        for s in succ {
            self.tasks.left[s as usize] -= 1;
            if self.tasks.left[s as usize] == 0 {
                self.ready(s, Some(w as u32));
            }
        }
        // Each hint that came due is a read acquire the thread pushes, then its release
        // callback: two more pushes after the tasks' (`_starpu_data_acquire_cb_pre` and
        // `_release` in StarPU-SimGrid's log). The callback acts after them: the pushed
        // tasks' prefetches come first (the oracle's idle request is 3 us after its last push).
        for h in hints_due {
            self.pseudo_push(w, None);
            self.pseudo_push(w, Some(h));
        }
        if !self.pacing.paced() {
            self.pacing
                .pop_after_progress(w, &self.model, &mut self.out);
        } else if matches!(
            self.pacing.threads.threads[w].doing,
            Doing::Waiting | Doing::Busy
        ) {
            // Released nothing: its driver, woken by the end, loops on.
            self.pacing.threads.start_loop(w);
            self.pacing.thread_sleep(w, &self.model, &mut self.out);
        }
        self.pacing.wake(w as u32);
        self.data.mem.freed[node as usize] = true;
        for n in 0..nn {
            if !self.data.mem.mem_wait[n as usize].is_empty() {
                let waiting = std::mem::take(&mut self.data.mem.mem_wait[n as usize]);
                for t in waiting {
                    self.pacing.wake(self.tasks.worker_of[t as usize]);
                }
            }
        }
        if self.tasks.done == self.model.graph.tasks.len() as u64 {
            self.out.report.makespan_s = self.out.now.as_secs_f64();
        }
    }

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
                self.pump_into(n);
            }
        }
        // Each driver's progress also tidies its node (after this instant's fetches).
        for n in 1..self.data.mem.tidy_due.len() as u32 {
            if std::mem::take(&mut self.data.mem.tidy_due[n as usize]) {
                self.tidy(n);
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
                // StarPU takes the task's prefetch pins off once its data are all there
                // (_starpu_fetch_task_input_tail), after its own requests landed.
                let node = self.model.machine.workers[w].node;
                self.unpin_prefetch(t, node);
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
            if self.workers.each[w].in_hand.len() >= self.slots(w)
                || self.pacing.deferred[w]
                || self.holds_sync(w)
            {
                break;
            }
            // Paced drivers pop once per loop, at its end (`threads.rs`).
            if self.pacing.paced() && (self.pacing.pop_turn != Some(w) || popped_one) {
                break;
            }
            popped_one = true;
            let (policy, mut view) = self.policy_and_view();
            let popped = policy.pop(w, &mut view);
            self.pacing.drivers.popped(w, popped.is_some());
            let Some(t) = popped else { break };
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
                        self.own(h, node);
                    }
                }
                // The fetch finding the data there marks its chunk recently used.
                if valid {
                    self.touch(h, node);
                    // A CPU's node is RAM.
                    ram_hit |= node == 0;
                }
            }
            // Its fetch's broadcast comes after the other pops of this instant.
            self.pacing.ram_broadcast |= ram_hit && self.pacing.paced();
        }
        self.try_run(w);
        if self.pacing.paced()
            && self.pacing.threads.threads[w].doing == Doing::Busy
            && self.has_room(w)
        {
            // What it held ended: its loop goes on.
            self.pacing.threads.start_loop(w);
            self.pacing.thread_sleep(w, &self.model, &mut self.out);
        }
    }

    /// Allocates and requests the task's data on the worker's node; true once all is there.
    pub(crate) fn fetch(&mut self, t: u32, w: usize) -> bool {
        let node = self.model.machine.workers[w].node;
        let mut ready = true;
        // In StarPU's order of the task's buffers, as `_starpu_fetch_task_input` walks them.
        for (h, mode) in self.model.graph.fetch_order(t) {
            if !self.allocate(h, node, Evict::ForFetch) {
                if !self.data.mem.mem_wait[node as usize].contains(&t) {
                    self.data.mem.mem_wait[node as usize].push(t);
                }
                return false;
            }
            if dirties(mode) {
                self.data.replicas.get_mut(h, node).marked_clean = false;
            }
            if mode.reads() {
                let prio = self.priority(t);
                self.request(h, node, Level::Fetch, prio, Some(t));
                let r = self.data.replicas.get(h, node);
                if r.state == Msi::Invalid || r.incoming.is_some() {
                    ready = false;
                }
            }
        }
        if ready {
            // StarPU: a write waits for the requests pending on its handle.
            let acc = &self.model.graph.tasks[t as usize].accesses;
            if let Some(&(h, _)) = acc
                .iter()
                .find(|&&(h, m)| m.modifies() && self.data.copies.handle_xfers[h as usize] > 0)
            {
                self.data.copies.write_wait.push((h, w as u32));
                return false;
            }
        }
        ready
    }

    /// Whether task `t` on worker `w` is a synchronous GPU kernel, which its driver runs
    /// itself (StarPU's CUDA driver fetches it, flushes its pipeline, then runs it blocking).
    fn runs_sync(&self, t: u32, w: usize) -> bool {
        matches!(self.model.machine.workers[w].arch, Arch::Cuda(_))
            && self.model.graph.cuda_sync_task(t)
    }

    /// Whether worker `w` holds a synchronous GPU task: its driver pops no more until that
    /// task ends.
    fn holds_sync(&self, w: usize) -> bool {
        self.workers.each[w]
            .in_hand
            .iter()
            .any(|&t| self.runs_sync(t, w))
    }

    /// Starts the front task of `w` when it is ready and nothing runs.
    pub(crate) fn try_run(&mut self, w: usize) {
        if self.workers.running[w].is_some() {
            return;
        }
        let Some(&t) = self.workers.each[w].in_hand.front() else {
            return;
        };
        if self.tasks.state[t as usize] != TaskState::Ready {
            return;
        }
        let arch = self.model.machine.workers[w].arch;
        let task = &self.model.graph.tasks[t as usize];
        let (mean, sd) = self.model.models.time(task, arch).expect("checked at push");
        let mut secs = mean;
        if self.model.flags.noise && sd > 0.0 {
            // Box-Muller from two uniforms of the run's seeded stream.
            let (u1, u2) = (self.uniform().max(1e-300), self.uniform());
            secs =
                (mean + sd * (-2.0 * u1.ln()).sqrt() * (std::f64::consts::TAU * u2).cos()).max(0.0);
        }
        let sync = self.runs_sync(t, w);
        if self.model.flags.overheads && matches!(arch, Arch::Cuda(_)) && !sync {
            // The driver queues an asynchronous kernel 10 us after its inputs are there
            // (StarPU-SimGrid's queueing sleep); one queued behind a running kernel starts
            // as soon as that one ends.
            let queued = self.tasks.launched[t as usize]
                .saturating_add(SimTime::from_secs_saturating(QUEUE_COST));
            secs += queued.saturating_sub(self.out.now).as_secs_f64();
        }
        // Allocations made for it without a copy (written-only buffers) before it starts.
        secs +=
            std::mem::take(&mut self.data.mem.debt[self.model.machine.workers[w].node as usize]);
        // Coherence: every buffer the task reads is valid where it runs.
        debug_assert!(
            self.model.graph.tasks[t as usize]
                .accesses
                .iter()
                .all(|&(h, m)| !m.reads()
                    || self
                        .data
                        .replicas
                        .get(h, self.model.machine.workers[w].node)
                        .state
                        != Msi::Invalid),
            "a reader would read a stale copy"
        );
        self.log('S', |rt| {
            let name = &rt.model.graph.tasks[t as usize].label;
            let (acc, prio) = (rt.log_accesses(t), rt.priority(t));
            let node = rt.model.machine.workers[w].node as usize;
            if node == 0 {
                return format!("{w} {name} j={t}{acc} p={prio}");
            }
            // The GPU's buffers as the oracle counts them: all, pinned by queued tasks'
            // prefetches, referenced, neither.
            let (mut pinned, mut referenced, mut idle) = (0, 0, 0);
            // And by clean mark x state x pinned, as the oracle's occupancy log counts them.
            let mut kinds = [0u32; 12];
            for (_, h) in rt.data.mem.lru[node].iter() {
                let r = rt.data.replicas.get(h, node as u32);
                pinned += u32::from(r.prefetch_pins > 0);
                referenced += u32::from(r.refcnt > 0);
                idle += u32::from(r.prefetch_pins == 0 && r.refcnt == 0);
                let state = match r.state {
                    Msi::Invalid => 0,
                    Msi::Shared => 1,
                    Msi::Owner => 2,
                };
                let pin = usize::from(r.prefetch_pins > 0);
                kinds[usize::from(r.marked_clean) * 6 + state * 2 + pin] += 1;
            }
            let all = rt.data.mem.lru[node].len();
            let clean = rt.data.replicas.marked_clean(node as u32);
            let head = u8::from(rt.data.mem.dirty_head[node].is_some());
            let kinds: Vec<String> = kinds.iter().map(u32::to_string).collect();
            format!(
                "{w} {name} j={t}{acc} p={prio} M {all} {pinned} {referenced} {idle} \
                 C {clean} {all} {head} Y {}",
                kinds.join(" ")
            )
        });
        self.out.report.task_times[t as usize] = (self.out.now.as_secs_f64(), f64::NAN, w as u32);
        self.tasks.state[t as usize] = TaskState::Running;
        self.workers.running[w] = Some(t);
        self.workers.each[w].busy_s += secs;
        let end = self
            .out
            .now
            .saturating_add(SimTime::from_secs_saturating(secs));
        if sync {
            // The driver runs the kernel itself: it submits none of its copies meanwhile.
            let node = self.model.machine.workers[w].node as usize;
            let free = &mut self.data.copies.driver_free[node];
            *free = (*free).max(end);
        }
        let wr = &mut self.workers.each[w];
        if let Some(row) = wr.row {
            self.out.intervals.push((
                row,
                self.model.graph.tasks[t as usize].codelet,
                t,
                self.out.now,
                end,
            ));
        }
        let (policy, view) = self.policy_and_view();
        policy.on_start(t, w, &view);
        self.out.timers.push((end, Due::TaskDone(t)));
    }
}

/// Whether a task accessing a handle in `mode` leaves its buffer dirty (scratch buffers are
/// private to the task).
fn dirties(mode: Mode) -> bool {
    mode != Mode::Scratch && mode.modifies()
}
