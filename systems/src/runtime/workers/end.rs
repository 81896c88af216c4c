//! A task's end: its writes, its hints, its successors, and what its worker and the memory
//! waiters do next.

use hetsim_schema::tasks::Mode;

use crate::runtime::core::Runtime;
use crate::runtime::pacing::threads::Doing;
use crate::runtime::tasks::TaskState;

impl Runtime {
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
        self.task_ended(t, node);
        self.kernel_off(w, t);
        let wr = &mut self.workers.each[w];
        wr.tasks += 1;
        self.tasks.state[t as usize] = TaskState::Done;
        self.out.report.task_times[t as usize].1 = self.out.now.as_secs_f64();
        self.tasks.done += 1;
        let (policy, view) = self.policy_and_view();
        policy.on_end(t, w, &view);
        let hints_due = self.hints_due(t);
        self.release_successors(t, w);
        // Each hint that came due is a read acquire the thread pushes, then its release
        // callback: two more pushes after the tasks' (`_starpu_data_acquire_cb_pre` and
        // `_release` in StarPU-SimGrid's log). The callback acts after them: the pushed
        // tasks' prefetches come first (the oracle's idle request is 3 us after its last push).
        for h in hints_due {
            self.pseudo_push(w, None);
            self.pseudo_push(w, Some(h));
        }
        self.driver_after_end(w);
        self.pacing.wake(w as u32);
        self.data.mem.freed[node as usize] = true;
        self.wake_memory_waiters();
        if self.tasks.done == self.model.graph.tasks.len() as u64 {
            self.out.report.makespan_s = self.out.now.as_secs_f64();
        }
    }

    /// The coherency half of task `t`'s end on `node`: its writes make the node's replicas
    /// the only valid ones (and its buffers may be tidied again), its references drop.
    fn task_ended(&mut self, t: u32, node: u32) {
        self.data.tick += 1;
        let acc = self.model.graph.tasks[t as usize].accesses.clone();
        for (h, mode) in acc {
            if mode == Mode::Scratch {
                continue;
            }
            if mode.modifies() {
                self.with_data(|d, cx| d.only_copy_on(cx, h, node));
                self.data.mem.writer_node[h as usize] = None;
                // Its buffers may be tidied again.
                self.data.mem.writing[h as usize] -= 1;
                self.data.mem.tidy_due[node as usize] = true;
            }
            self.data.replicas.get_mut(h, node).refcnt -= 1;
        }
    }

    /// The `wont_use` hints whose last awaited task was `t`: their handles.
    fn hints_due(&mut self, t: u32) -> Vec<u32> {
        let mut hints_due = Vec::new();
        for i in 0..self.model.graph.hint_of[t as usize].len() {
            let id = self.model.graph.hint_of[t as usize][i] as usize;
            self.tasks.hints_left[id] -= 1;
            if self.tasks.hints_left[id] == 0 {
                hints_due.push(self.model.graph.hints[id].0);
            }
        }
        hints_due
    }

    /// The successors of `t` whose last dependency it was are ready, released by `w`.
    fn release_successors(&mut self, t: u32, w: usize) {
        let succ: Vec<u32> = self.model.graph.successors(t).to_vec();
        for s in succ {
            self.tasks.left[s as usize] -= 1;
            if self.tasks.left[s as usize] == 0 {
                self.ready(s, Some(w as u32));
            }
        }
    }

    /// What `w`'s driver does after a task's end and its pushes: under dm* and the other
    /// unpaced policies it pops after its progress; a paced driver that was waiting or busy
    /// loops on.
    fn driver_after_end(&mut self, w: usize) {
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
    }

    /// Workers waiting for memory on any node try again.
    fn wake_memory_waiters(&mut self) {
        let nn = self.model.machine.nodes.len() as u32;
        for n in 0..nn {
            if !self.data.mem.mem_wait[n as usize].is_empty() {
                let waiting = std::mem::take(&mut self.data.mem.mem_wait[n as usize]);
                for t in waiting {
                    self.pacing.wake(self.tasks.worker_of[t as usize]);
                }
            }
        }
    }

    /// Copy `x`'s flow or timer ended: the datawizard handles its end, then the loop carries
    /// out what that asks, in order (the pair's next requests are handled after the end is,
    /// as StarPU's progress completes the copies that ended, then goes through the lists:
    /// one for the same data finds them there).
    pub(crate) fn xfer_done(&mut self, x: u32) {
        let end = self.with_data(|d, cx| d.end_copy(cx, x));
        if let Some(node) = end.driver_back {
            self.driver_back(node);
        }
        self.with_data(|d, cx| d.pump(cx, end.src, end.dst));
        self.landed_on(end.dst);
        self.with_data(|d, cx| d.relay(cx, end.handle, end.then, end.level, end.prio));
    }
}

#[cfg(test)]
mod tests {
    use crate::runtime::data::kinds::Evict;
    use crate::runtime::setup::{a_and_b_written_on_the_gpu, four_handles};

    #[test]
    fn a_write_backs_end_hands_its_driver_back_only_once_the_pass_is_over() {
        // c needs room: a and b (written on the GPU) are written back one at a time. a's end
        // leaves the node reclaiming (b's turn): the driver stays away. b's end is the pass's
        // last: the loop gets the GPU's driver back, after the datawizard's half.
        let mut rt = a_and_b_written_on_the_gpu();
        assert!(!rt.with_data(|d, cx| d.allocate(cx, 2, 1, Evict::ForFetch)));
        let xa = rt.data.replicas.get(0, 0).incoming.expect("a's write-back");
        let end = rt.with_data(|d, cx| d.end_copy(cx, xa));
        assert_eq!(
            (end.driver_back, end.src, end.dst, end.handle),
            (None, 1, 0, 0)
        );
        let xb = rt.data.replicas.get(1, 0).incoming.expect("b's write-back");
        let end = rt.with_data(|d, cx| d.end_copy(cx, xb));
        assert_eq!(
            (end.driver_back, end.src, end.dst, end.handle),
            (Some(1), 1, 0, 1)
        );
        assert!(end.then.is_empty());
    }

    #[test]
    fn a_fetchs_end_asks_the_loop_for_nothing_but_the_pair_and_the_landing() {
        let mut rt = four_handles();
        assert!(rt.with_data(|d, cx| d.allocate(cx, 0, 1, Evict::ForFetch)));
        rt.with_data(|d, cx| {
            d.request(cx, 0, 1, crate::runtime::data::kinds::Level::Fetch, 0, None)
        });
        let x = rt.data.replicas.get(0, 1).incoming.expect("a's copy");
        let end = rt.with_data(|d, cx| d.end_copy(cx, x));
        assert_eq!((end.driver_back, end.src, end.dst), (None, 0, 1));
        assert!(rt.data.replicas.get(0, 1).valid());
    }
}
