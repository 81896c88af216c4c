//! ws and lws: a priority-sorted deque per worker. A task released by a worker goes to that
//! worker (if it can run it), a submitted one round-robin; a worker pops its own head, and
//! when empty steals from a busy victim the newest task of the victim's highest priority (ws:
//! victims round-robin from the last one; lws: workers of its own kind first, nearest id
//! first).

use std::collections::VecDeque;

use super::{Policy, Pushed, View, insert_sorted};
use crate::runtime::machine::Arch;

pub struct WorkStealing {
    local: Vec<VecDeque<u32>>,
    /// lws: steal from the nearest workers of the same kind first.
    locality: bool,
    last_push: usize,
    last_victim: usize,
}

impl WorkStealing {
    pub fn new(workers: usize, locality: bool) -> WorkStealing {
        WorkStealing {
            local: vec![VecDeque::new(); workers],
            locality,
            last_push: 0,
            last_victim: 0,
        }
    }

    /// Takes the newest task of the highest priority from a busy victim's deque.
    fn steal(&mut self, w: usize, rt: &mut View) -> Option<u32> {
        let n = self.local.len();
        let order: Vec<usize> = if self.locality {
            // Closest first: workers of the same kind, then the others, by distance in id.
            let mut v: Vec<usize> = (0..n).filter(|&v| v != w).collect();
            let kind = |a: Arch| matches!(a, Arch::Cuda(_));
            let mine = rt.workers()[w].arch;
            let same = |v: usize| {
                let a = rt.workers()[v].arch;
                a == mine || (kind(a) && kind(mine))
            };
            v.sort_by_key(|&v| (!same(v), v.abs_diff(w)));
            v
        } else {
            (1..n)
                .map(|i| (self.last_victim + i) % n)
                .filter(|&v| v != w)
                .collect()
        };
        for v in order {
            if self.local[v].is_empty() || !rt.is_busy(v) {
                continue;
            }
            let q = &self.local[v];
            let top = rt.priority(q[0]);
            let end = q.partition_point(|&t| rt.priority(t) >= top);
            let pick = (0..q.len())
                .rev()
                .filter(|&i| i < end)
                .chain(end..q.len())
                .find(|&i| rt.can_run(q[i], w));
            if let Some(i) = pick {
                self.last_victim = v;
                return self.local[v].remove(i);
            }
        }
        None
    }
}

impl Policy for WorkStealing {
    fn push(&mut self, t: u32, by: Option<u32>, rt: &mut View) -> Pushed {
        let n = self.local.len();
        let w = match by {
            Some(b) if rt.can_run(t, b as usize) => b as usize,
            _ => {
                let mut w = self.last_push;
                for i in 1..=n {
                    let c = (self.last_push + i) % n;
                    if rt.can_run(t, c) {
                        w = c;
                        break;
                    }
                }
                self.last_push = w;
                w
            }
        };
        insert_sorted(&mut self.local[w], t, rt.priority(t), rt);
        Pushed::default()
    }

    fn pop(&mut self, w: usize, rt: &mut View) -> Option<u32> {
        if let Some(t) = self.local[w].pop_front() {
            return Some(t);
        }
        self.steal(w, rt)
    }

    fn queued(&self) -> usize {
        self.local.iter().map(VecDeque::len).sum()
    }
}
