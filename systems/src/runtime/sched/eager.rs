//! eager and prio: one central queue (prio: sorted by priority, FIFO within one); a worker
//! takes the first task it can run. A push signals the workers up to the first asleep and not
//! yet told (eager_central_policy.c; who: `drivers.rs`, when: `threads.rs`); busy workers
//! take from the queue when they next ask.

use std::collections::VecDeque;

use super::{Policy, Pushed, View, Wakes, insert_sorted};

pub struct Central {
    queue: VecDeque<u32>,
    sorted: bool,
}

impl Central {
    pub fn new(sorted: bool) -> Central {
        Central {
            queue: VecDeque::new(),
            sorted,
        }
    }
}

impl Policy for Central {
    fn push(&mut self, t: u32, _by: Option<u32>, rt: &mut View) -> Pushed {
        if self.sorted {
            insert_sorted(&mut self.queue, t, rt.priority(t), rt);
        } else {
            self.queue.push_back(t);
        }
        Pushed::default()
    }

    fn pop(&mut self, w: usize, rt: &mut View) -> Option<u32> {
        let i = self.queue.iter().position(|&t| rt.can_run(t, w))?;
        self.queue.remove(i)
    }

    fn queued(&self) -> usize {
        self.queue.len()
    }

    fn wakes(&self) -> Wakes {
        Wakes::One
    }
}
