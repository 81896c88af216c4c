//! Which workers a push wakes, as StarPU-SimGrid 1.4's drivers do it for the policies whose
//! workers race for pushed tasks: eager and prio wake one worker per push (below), ws and lws
//! every worker (`ws_push_task`). When the woken drivers pop, and in which order, is
//! `threads.rs`.
//!
//! StarPU's push walks the workers in order and tries to wake each one that can run the task
//! (`starpu_wake_worker_relax_light`): every one it passes is signalled, and the walk stops at
//! the first that is asleep (its last pop found nothing) and not already told to stay awake
//! (`state_keep_awake`), which it then tells. Every driver starts untold (the oracle's log of
//! the walk, `W` lines: the CPUs' flags are 0 until a push tells them). A CUDA driver clears
//! its flag at each pop attempt (`_starpu_get_multi_worker_task`); a CPU driver never does
//! under SimGrid (`_starpu_get_worker_task` clears it only in real runs), so a CPU worker
//! told once is passed, and signalled, by every later push. A finished data request flags
//! every driver of its destination node (`_starpu_data_request_complete_wait`, SimGrid only):
//! a copy into RAM flags every worker, CUDA ones included (they drive RAM too), a copy into a
//! GPU that GPU's worker.

use crate::runtime::model::MICROSECOND;

/// Each worker's driver state.
#[derive(Debug, Clone, Default)]
pub struct Drivers {
    /// Its last pop attempt found nothing (StarPU's STATUS_SLEEPING).
    asleep: Vec<bool>,
    /// A wake-up is pending (StarPU's `state_keep_awake`).
    keep_awake: Vec<bool>,
    /// A CUDA driver (clears its flag at each pop attempt; drives two memory nodes).
    cuda: Vec<bool>,
}

impl Drivers {
    /// `cuda[w]`: worker `w` is a GPU's. Every driver starts asleep after a first empty pop,
    /// untold (see the module doc).
    pub fn new(cuda: Vec<bool>) -> Drivers {
        Drivers {
            asleep: vec![true; cuda.len()],
            keep_awake: vec![false; cuda.len()],
            cuda,
        }
    }

    /// How many drivers (one per worker).
    pub fn count(&self) -> usize {
        self.cuda.len()
    }

    /// Worker `w` tried to pop; `got` says whether it took a task.
    pub fn popped(&mut self, w: usize, got: bool) {
        self.asleep[w] = !got;
        if self.cuda[w] {
            // A CUDA driver clears the flag at each attempt; one that found nothing with the
            // flag up counts as busy and tries again at once, which finds nothing either.
            self.keep_awake[w] = false;
        }
    }

    /// `w`'s driver is told to stay awake without a push: a request finished on a memory
    /// node it drives (every worker drives RAM, a GPU's worker its GPU too).
    pub fn flag(&mut self, w: usize) {
        self.keep_awake[w] = true;
    }

    /// The workers a push signals, in worker order, among those `eligible` (can run the
    /// task): every one passed, up to and including the first asleep without the flag, which
    /// now gets it.
    pub fn push_wakes(&mut self, eligible: impl Fn(usize) -> bool) -> Vec<usize> {
        let mut woken = Vec::new();
        for w in (0..self.asleep.len()).filter(|&w| eligible(w)) {
            woken.push(w);
            if self.asleep[w] && !self.keep_awake[w] {
                self.keep_awake[w] = true;
                break;
            }
        }
        woken
    }

    /// Microseconds of progress in `w`'s driver loop: 1 per memory node it drives (a CPU's
    /// RAM; a CUDA driver's RAM and its GPU).
    pub fn progress_us(&self, w: usize) -> u8 {
        if self.cuda[w] { 2 } else { 1 }
    }

    /// Seconds from a signal to `w`'s pop: its progress.
    pub fn pop_delay(&self, w: usize) -> f64 {
        self.progress_us(w) as f64 * MICROSECOND
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Two GPUs then two CPUs.
    fn drivers() -> Drivers {
        Drivers::new(vec![true, true, false, false])
    }

    #[test]
    fn a_push_stops_at_the_first_sleeper_it_tells() {
        let mut d = drivers();
        // Everyone asleep and untold: each push tells the next one and stops there.
        assert_eq!(d.push_wakes(|_| true), [0]);
        assert_eq!(d.push_wakes(|_| true), [0, 1]);
        assert_eq!(d.push_wakes(|_| true), [0, 1, 2]);
        assert_eq!(d.push_wakes(|_| true), [0, 1, 2, 3]);
        // All told: a push passes everyone.
        assert_eq!(d.push_wakes(|_| true), [0, 1, 2, 3]);
        // A task only CPUs run skips the GPUs.
        assert_eq!(d.push_wakes(|w| w >= 2), [2, 3]);
    }

    #[test]
    fn cpus_stay_told_gpus_until_they_pop() {
        let mut d = drivers();
        for _ in 0..4 {
            d.push_wakes(|_| true);
        }
        // GPU0 pops nothing: asleep and untold again, the next push stops there.
        d.popped(0, false);
        assert_eq!(d.push_wakes(|_| true), [0]);
        // GPU1 took a task: awake, passed; the CPUs pop nothing and stay told.
        d.popped(1, true);
        d.popped(2, false);
        d.popped(3, false);
        assert_eq!(d.push_wakes(|_| true), [0, 1, 2, 3]);
        // GPU1 runs its task and finds nothing more: told at the next push.
        d.popped(1, false);
        assert_eq!(d.push_wakes(|_| true), [0, 1]);
    }

    #[test]
    fn a_finished_request_makes_pushes_pass_a_gpu_until_it_pops() {
        let mut d = drivers();
        d.flag(0);
        assert_eq!(d.push_wakes(|_| true), [0, 1]);
        assert_eq!(d.push_wakes(|_| true), [0, 1, 2]);
        d.popped(0, false);
        assert_eq!(d.push_wakes(|_| true), [0]);
        assert_eq!(d.progress_us(0), 2);
        assert_eq!(d.pop_delay(2), 1e-6);
    }
}
