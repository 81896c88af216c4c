//! ws and lws as StarPU 1.4 implements them (work_stealing_policy.c, prio_deque.c): one
//! priority deque per worker (highest priority first, FIFO within a priority).
//!
//! - Push: a task released by a worker goes to that worker's deque if it can run it; one
//!   submitted by the application (or that its releaser cannot run) goes round-robin to the
//!   next worker after the last one pushed to that can run it.
//! - Pop: the owner takes the first task of its deque it can run. With an empty deque it
//!   picks one victim whose deque is not empty and which is *busy*, StarPU's flag for "its
//!   last pop returned a task" (not "it is executing now": a worker that just finished a
//!   task and released its successors is still busy until it pops again). ws walks the
//!   workers round-robin from where this thief's previous walk stopped (itself included);
//!   lws walks a proximity list (itself, then workers of its own kind, nearest id first:
//!   StarPU's hwloc tree, without the tree). From the one victim it takes the first task
//!   it can run in the thief's order: the highest priority first, and within one priority the
//!   newest first (prio_deque's deque from the back, where the owner pops from the front);
//!   if it can run none, the pop fails.
//! - No prefetch: the task's data are fetched when it is popped.
//! - Every push wakes every worker (ws_push_task), paced by StarPU-SimGrid's driver threads
//!   (`threads.rs`): a push costs its pusher 1 us, a woken driver pops after its progress
//!   (CPU 1 us, GPU 2 us), the releaser after its pushes; so idle thieves race the releaser
//!   for the tasks it pushes.
//!
//! Simplified: StarPU's thief backs off when the victim's lock is taken; here no lock is
//! ever contended.

use std::collections::VecDeque;

use super::{Policy, Pushed, View, Wakes, insert_sorted};
use crate::runtime::model::machine::Arch;

pub struct WorkStealing {
    local: Vec<VecDeque<u32>>,
    /// StarPU's `busy`: the worker's last pop returned a task.
    busy: Vec<bool>,
    /// ws: where each thief's next round-robin walk starts.
    next_victim: Vec<usize>,
    /// lws: each worker's victims, nearest first.
    proximity: Option<Vec<Vec<usize>>>,
    last_push: usize,
}

impl WorkStealing {
    pub fn new(workers: usize, locality: bool) -> WorkStealing {
        WorkStealing {
            local: vec![VecDeque::new(); workers],
            busy: vec![false; workers],
            next_victim: vec![0; workers],
            proximity: locality.then(Vec::new),
            last_push: 0,
        }
    }

    /// lws's proximity lists: each worker itself, then its own kind, then the others, by
    /// distance in worker id.
    fn build_proximity(&mut self, rt: &View) {
        let n = self.local.len();
        let Some(lists) = self.proximity.as_mut() else {
            return;
        };
        if lists.is_empty() {
            let gpu = |w: usize| matches!(rt.workers()[w].arch, Arch::Cuda(_));
            *lists = (0..n)
                .map(|w| {
                    let mut v: Vec<usize> = (0..n).collect();
                    v.sort_by_key(|&v| (v != w, gpu(v) != gpu(w), v.abs_diff(w), v));
                    v
                })
                .collect();
        }
    }

    fn can_be_robbed(&self, v: usize) -> bool {
        !self.local[v].is_empty() && self.busy[v]
    }

    /// The one worker thief `w` tries to steal from.
    fn victim(&mut self, w: usize, rt: &View) -> Option<usize> {
        self.build_proximity(rt);
        if let Some(lists) = &self.proximity {
            return lists[w].iter().copied().find(|&v| self.can_be_robbed(v));
        }
        let n = self.local.len();
        let start = self.next_victim[w];
        let found = (0..n)
            .map(|i| (start + i) % n)
            .find(|&v| self.can_be_robbed(v));
        self.next_victim[w] = (found.unwrap_or(start) + 1) % n;
        found
    }

    /// Removes the task of `v`'s deque that `w` takes: its owner the first it can run (highest
    /// priority, oldest first: prio_deque's pop), a thief the newest of the highest priority
    /// it can run (prio_deque's deque: `list_back_highest`, then `list_prev_highest`).
    fn take(&mut self, v: usize, w: usize, rt: &mut View) -> Option<u32> {
        let q = &self.local[v];
        let i = if v == w {
            (0..q.len()).find(|&i| rt.can_run(q[i], w))?
        } else {
            let prios: Vec<i64> = q.iter().map(|&t| rt.priority(t)).collect();
            thief_order(&prios)
                .into_iter()
                .find(|&i| rt.can_run(q[i], w))?
        };
        self.local[v].remove(i)
    }
}

/// The positions of a deque sorted by priority (highest first, oldest first within one) in
/// the order a thief looks at them: each priority from the highest, newest first.
fn thief_order(prios: &[i64]) -> Vec<usize> {
    let mut order = Vec::with_capacity(prios.len());
    for run in prios.chunk_by(|a, b| a == b) {
        let start = order.len();
        order.extend((start..start + run.len()).rev());
    }
    order
}

impl Policy for WorkStealing {
    fn push(&mut self, t: u32, by: Option<u32>, rt: &mut View) -> Pushed {
        let n = self.local.len();
        let w = match by {
            Some(b) if rt.can_run(t, b as usize) => b as usize,
            _ => {
                let w = (1..=n)
                    .map(|i| (self.last_push + i) % n)
                    .find(|&c| rt.can_run(t, c))
                    .expect("checked at setup: every task can run somewhere");
                self.last_push = w;
                w
            }
        };
        insert_sorted(&mut self.local[w], t, rt.priority(t), rt);
        Pushed::default()
    }

    fn pop(&mut self, w: usize, rt: &mut View) -> Option<u32> {
        self.busy[w] = false;
        let task = match self.take(w, w, rt) {
            Some(t) => Some(t),
            None => self.victim(w, rt).and_then(|v| self.take(v, w, rt)),
        };
        self.busy[w] = task.is_some();
        task
    }

    fn queued(&self) -> usize {
        self.local.iter().map(VecDeque::len).sum()
    }

    fn wakes(&self) -> Wakes {
        Wakes::Every
    }
}

#[cfg(test)]
mod tests {
    use super::thief_order;

    #[test]
    fn a_thief_looks_at_each_priority_newest_first() {
        // Priorities 5, 5, 5, 3, 1, 1 (highest first, oldest first within one): positions
        // 2, 1, 0, then 3, then 5, 4.
        assert_eq!(thief_order(&[5, 5, 5, 3, 1, 1]), [2, 1, 0, 3, 5, 4]);
        assert_eq!(thief_order(&[]), Vec::<usize>::new());
    }
}
