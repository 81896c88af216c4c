//! random: each task goes to a worker that can run it, drawn with probability proportional to
//! the workers' relative speed-ups; each worker keeps its own priority-sorted queue.

use std::collections::VecDeque;

use super::{Policy, Pushed, View, insert_sorted};

pub struct Random {
    local: Vec<VecDeque<u32>>,
}

impl Random {
    pub fn new(workers: usize) -> Random {
        Random {
            local: vec![VecDeque::new(); workers],
        }
    }

    fn draw(&self, t: u32, rt: &mut View) -> usize {
        let able: Vec<usize> = (0..self.local.len())
            .filter(|&w| rt.can_run(t, w))
            .collect();
        let total: f64 = able.iter().map(|&w| rt.workers()[w].speedup).sum();
        let mut x = rt.uniform() * total;
        for &w in &able {
            x -= rt.workers()[w].speedup;
            if x < 0.0 {
                return w;
            }
        }
        *able.last().expect("a worker can run the task")
    }
}

impl Policy for Random {
    fn push(&mut self, t: u32, _by: Option<u32>, rt: &mut View) -> Pushed {
        let w = self.draw(t, rt);
        insert_sorted(&mut self.local[w], t, rt.priority(t), rt);
        Pushed {
            queue: Some(w),
            ..Pushed::default()
        }
    }

    fn pop(&mut self, w: usize, _rt: &mut View) -> Option<u32> {
        self.local[w].pop_front()
    }

    fn queued(&self) -> usize {
        self.local.iter().map(VecDeque::len).sum()
    }
}
