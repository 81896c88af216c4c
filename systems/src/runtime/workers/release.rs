//! What a task's release does: the push to the policy, 1 us after its releaser's earlier pushes,
//! or through StarPU-SimGrid's driver threads under eager, prio, ws and lws, and whom it signals.

use crate::runtime::core::Runtime;
use crate::runtime::model::MICROSECOND;
use crate::runtime::out::Due;
use crate::runtime::pacing::Wakes;
use crate::runtime::pacing::threads::{ACQUIRE, Step};
use crate::runtime::tasks::TaskState;

impl Runtime {
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
            self.with_data(|d, cx| d.prefetch(cx, t, w));
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
    pub(crate) fn pseudo_push(&mut self, w: usize, hint: Option<u32>) {
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
}
