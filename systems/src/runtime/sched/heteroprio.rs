//! heteroprio in its automatic form: one bucket per codelet, ranked by the models'
//! acceleration (CPU time / GPU time at the first task's size), GPUs walking the buckets from
//! the most accelerated, CPUs from the least; a worker of the slower kind takes from a bucket
//! only when it holds at least `speed-up x` as many tasks as the faster kind has workers
//! (StarPU's slow factor); tasks in a bucket by priority.
//! Simplified: no private queues or stealing (the worker's own pipeline holds what it
//! popped).

use std::collections::VecDeque;

use super::{Policy, Pushed, View, insert_sorted};

#[derive(Default)]
pub struct Heteroprio {
    /// A priority-ordered bucket per codelet, and each bucket's acceleration (CPU time /
    /// GPU time; NaN until its first task is pushed).
    buckets: Vec<VecDeque<u32>>,
    speedup: Vec<f64>,
}

impl Policy for Heteroprio {
    fn push(&mut self, t: u32, _by: Option<u32>, rt: &mut View) -> Pushed {
        let c = rt.codelet(t) as usize;
        if self.buckets.len() <= c {
            self.buckets.resize(c + 1, VecDeque::new());
            self.speedup.resize(c + 1, f64::NAN);
        }
        if self.speedup[c].is_nan() {
            self.speedup[c] = rt.acceleration(t);
        }
        insert_sorted(&mut self.buckets[c], t, rt.priority(t), rt);
        Pushed::default()
    }

    /// Worker `w` walks the buckets in its kind's order and takes the first task it may
    /// take and can run.
    fn pop(&mut self, w: usize, rt: &mut View) -> Option<u32> {
        let gpu = rt.is_gpu(w);
        let (ngpu, ncpu) = rt.worker_counts();
        let mut order: Vec<usize> = (0..self.buckets.len())
            .filter(|&b| !self.buckets[b].is_empty())
            .collect();
        // GPUs: most accelerated first; CPUs: least first (ties: codelet order).
        order.sort_by(|&a, &b| {
            let (x, y) = (self.speedup[a], self.speedup[b]);
            if gpu {
                y.total_cmp(&x)
            } else {
                x.total_cmp(&y)
            }
        });
        for b in order {
            let s = self.speedup[b];
            let (fastest_gpu, factor, fast_workers) = if s >= 1.0 {
                (true, s, ngpu)
            } else {
                (false, 1.0 / s, ncpu)
            };
            // The slower kind helps only with a backlog of `factor` tasks per fast worker.
            if gpu != fastest_gpu
                && fast_workers > 0
                && (self.buckets[b].len() as f64) / (fast_workers as f64) < factor
            {
                continue;
            }
            if let Some(i) = self.buckets[b].iter().position(|&t| rt.can_run(t, w)) {
                return self.buckets[b].remove(i);
            }
        }
        None
    }

    fn queued(&self) -> usize {
        self.buckets.iter().map(VecDeque::len).sum()
    }
}
