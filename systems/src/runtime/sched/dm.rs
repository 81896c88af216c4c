//! The dm family (deque_modeling_policy_data_aware.c): each worker keeps a queue and its
//! expected-finish bookkeeping; a task goes to the worker where it is expected to finish
//! first (dm), with the predicted transfer time as a penalty and alpha/beta fitness, and its
//! inputs prefetched at push (dmda); dmdar pops the readiest of the queue's top-priority
//! tasks, dmdap keeps queues sorted by priority, dmdas does both, and dmdasd's decision
//! counts only the queued work ahead of the task. Uncalibrated models (StarPU history entries
//! under 10 samples) make them fall back to StarPU's greedy rule: the least loaded worker, the
//! first uncalibrated one at once. Decisions made at one instant by different releasers do
//! not see each other's pushes, as in StarPU-SimGrid ([`DequeModel::unseen`]).
//! Simplified: no energy term (StarPU adds none without energy models, as in its default runs);
//! a decision at an instant sees none of the other releasers' pushes of that instant, where
//! SimGrid's actor order lets some commits through (the oracle's log: mostly none, sometimes
//! a few); dmdasd's work ahead counts them.

use std::collections::VecDeque;

use hetsim_schema::tasks::Scheduler;

use super::{Missing, Policy, Pushed, View, insert_sorted};

/// A worker's expected-finish bookkeeping.
#[derive(Debug, Clone, Copy, Default)]
pub struct DmState {
    pub exp_start: f64,
    pub exp_len: f64,
    pub pipeline_len: f64,
    /// Tasks pushed to the worker and not finished (queued + pipeline).
    pub ntasks: u32,
}

pub struct DequeModel {
    kind: Scheduler,
    local: Vec<VecDeque<u32>>,
    dm: Vec<DmState>,
    /// The pushes of the current instant.
    pushed_now: InstantPushes,
}

/// The pushes made at one instant, by worker.
struct InstantPushes {
    at: f64,
    to: Vec<PushesTo>,
}

/// The pushes of one instant into one worker's queue: (pusher, expected work added), in push
/// order, and whether more than one pusher made them (else a decision by that pusher sees
/// them all without a scan: a thousand roots the application pushes at once stay linear).
#[derive(Clone, Default)]
struct PushesTo {
    by: Vec<(Option<u32>, f64)>,
    mixed: bool,
}

impl InstantPushes {
    /// Starts instant `now` unless it is the current one.
    fn begin(&mut self, now: f64) {
        if self.at != now {
            self.at = now;
            for p in &mut self.to {
                p.by.clear();
                p.mixed = false;
            }
        }
    }

    /// `by` pushed `len` seconds of expected work to worker `w`.
    fn record(&mut self, by: Option<u32>, w: usize, len: f64) {
        let p = &mut self.to[w];
        p.mixed |= p.by.first().is_some_and(|&(first, _)| first != by);
        p.by.push((by, len));
    }
}

impl DequeModel {
    pub fn new(kind: Scheduler, workers: usize) -> DequeModel {
        DequeModel {
            kind,
            local: vec![VecDeque::new(); workers],
            dm: vec![DmState::default(); workers],
            pushed_now: InstantPushes {
                at: f64::NAN,
                to: vec![PushesTo::default(); workers],
            },
        }
    }

    /// What `by`'s decision at this instant does not see of worker `w`'s queue: the work
    /// and tasks other pushers pushed there at the same instant. In StarPU-SimGrid the
    /// threads that push at one instant (CPU workers whose equal-length tasks end together)
    /// each decide before any of them commits (the commit waits for the worker's lock, a
    /// SimGrid context switch), so they all pick the same worker: the oracle's log of mirage
    /// Cholesky dmda with 8 CPUs has eight threads pushing eight GEMMs to one CPU at once.
    fn unseen(&self, by: Option<u32>, w: usize) -> (f64, u32) {
        let p = &self.pushed_now.to[w];
        if !p.mixed && p.by.first().is_none_or(|&(first, _)| first == by) {
            return (0.0, 0);
        }
        p.by.iter()
            .filter(|&&(q, _)| q != by)
            .fold((0.0, 0), |(len, n), &(_, l)| (len + l, n + 1))
    }

    /// Queues sorted by priority.
    fn sorted(&self) -> bool {
        matches!(
            self.kind,
            Scheduler::Dmdap | Scheduler::Dmdas | Scheduler::Dmdasd
        )
    }

    /// Pops the readiest task rather than the head.
    fn ready_first(&self) -> bool {
        matches!(
            self.kind,
            Scheduler::Dmdar | Scheduler::Dmdas | Scheduler::Dmdasd
        )
    }

    /// dmdasd's "sorted decision": the predicted work that runs on `w` before task `t`
    /// would, given where its priority puts it in the queue (StarPU counts the pipeline
    /// again when the task would go first: kept as StarPU has it).
    fn work_ahead(&self, t: u32, w: usize, rt: &mut View) -> f64 {
        let s = self.dm[w];
        let q = &self.local[w];
        let prio = rt.priority(t);
        let at = q.partition_point(|&x| rt.priority(x) >= prio);
        if at == 0 {
            return s.pipeline_len;
        }
        if at == q.len() {
            return s.exp_len;
        }
        s.pipeline_len
            + q.iter()
                .take(at)
                .filter_map(|&x| rt.predicted(x, w))
                .map(|(len, _)| len)
                .sum::<f64>()
    }
}

/// A worker that can run the task: when it would end there, its length there, and the
/// transfer penalty of its data.
#[derive(Debug, Clone, Copy)]
struct Cand {
    w: usize,
    end: f64,
    len: f64,
    penalty: f64,
}

impl DequeModel {
    /// Each worker that can run `t`, with its expected end; and, when some model is
    /// uncalibrated (NaN), StarPU's greedy fallback instead: the least loaded worker
    /// (tasks / relative speed-up), the first uncalibrated one grabbed at once.
    fn candidates(&self, t: u32, by: Option<u32>, rt: &mut View) -> (Vec<Cand>, Option<usize>) {
        let da = self.kind != Scheduler::Dm;
        let now = rt.now;
        let mut cands: Vec<Cand> = Vec::new();
        let mut greedy: Option<(usize, f64)> = None;
        let mut seen_nan = false;
        for w in 0..self.local.len() {
            let (unseen_len, unseen_tasks) = self.unseen(by, w);
            let Some((len, calibrated)) = rt.predicted(t, w) else {
                continue;
            };
            let nan = !calibrated;
            let load =
                self.dm[w].ntasks.saturating_sub(unseen_tasks) as f64 / rt.workers()[w].speedup;
            let take = match greedy {
                None => true,
                Some((_, best_load)) => {
                    (!seen_nan && (load < best_load || nan))
                        || (seen_nan && nan && load < best_load)
                }
            };
            if take {
                greedy = Some((w, load));
            }
            seen_nan |= nan;
            let start_w = self.dm[w].exp_start.max(now);
            let penalty = if da { rt.transfer_penalty(t, w) } else { 0.0 };
            let ahead = if self.kind == Scheduler::Dmdasd {
                self.work_ahead(t, w, rt)
            } else {
                (self.dm[w].exp_len - unseen_len).max(0.0)
            };
            let mut start = start_w + ahead;
            if da {
                start = start.max(now + penalty);
            }
            cands.push(Cand {
                w,
                end: start + len,
                len,
                penalty,
            });
        }
        let greedy = seen_nan.then(|| {
            greedy
                .expect("a worker can run the task (checked at start)")
                .0
        });
        (cands, greedy)
    }

    /// Queues `t` on the chosen worker and commits its expected times: the idle time the
    /// transfer penalty leaves before it, if any (returned), and its length.
    fn commit(&mut self, t: u32, by: Option<u32>, c: Cand, rt: &mut View) -> f64 {
        let now = rt.now;
        let s = &mut self.dm[c.w];
        s.exp_start = s.exp_start.max(now);
        let queue_end = s.exp_start + s.exp_len;
        let extra = if now + c.penalty < queue_end {
            0.0
        } else {
            now + c.penalty - queue_end
        };
        s.exp_len += extra + c.len;
        s.ntasks += 1;
        self.pushed_now.record(by, c.w, extra + c.len);
        if self.sorted() {
            insert_sorted(&mut self.local[c.w], t, rt.priority(t), rt);
        } else {
            self.local[c.w].push_back(t);
        }
        extra
    }
}

/// The candidate of least fitness: its end after the earliest one, plus (dmda family) the
/// weighted transfer penalty; the first in worker order on ties.
fn best_fit(cands: &[Cand], da: bool, alpha: f64, beta: f64) -> Cand {
    let best_end = cands.iter().map(|c| c.end).fold(f64::INFINITY, f64::min);
    let mut best: Option<Cand> = None;
    let mut best_fit = f64::INFINITY;
    for &c in cands {
        let fit = if da {
            alpha * (c.end - best_end) + beta * c.penalty
        } else {
            c.end - best_end
        };
        if fit < best_fit {
            best_fit = fit;
            best = Some(c);
        }
    }
    best.expect("a worker can run the task (checked at start)")
}

impl Policy for DequeModel {
    /// The worker with the best fitness; commit the expected times, prefetch.
    fn push(&mut self, t: u32, by: Option<u32>, rt: &mut View) -> Pushed {
        let da = self.kind != Scheduler::Dm;
        self.pushed_now.begin(rt.now);
        let (cands, greedy) = self.candidates(t, by, rt);
        if let Some(w) = greedy {
            self.dm[w].ntasks += 1;
            self.pushed_now.record(by, w, 0.0);
            self.local[w].push_back(t);
            return Pushed {
                prediction: Some((0.0, 0.0)),
                prefetch: da.then_some(w),
                queue: Some(w),
            };
        }
        let best = best_fit(&cands, da, rt.alpha, rt.beta);
        let extra = self.commit(t, by, best, rt);
        Pushed {
            prediction: Some((best.len, extra)),
            prefetch: da.then_some(best.w),
            queue: Some(best.w),
        }
    }

    fn pop(&mut self, w: usize, rt: &mut View) -> Option<u32> {
        let now = rt.now;
        let s = &mut self.dm[w];
        s.exp_start = s.exp_start.max(now);
        let q = &self.local[w];
        if q.is_empty() {
            return None;
        }
        let i = if self.ready_first() {
            // StarPU's pop_first_ready_task: among the tasks of at least the head's priority,
            // the first that lacks the fewest bytes (not valid, then not being loaded, then
            // not allocated); the scan ends at one that lacks nothing.
            let top = rt.priority(q[0]);
            let lacks_all = Missing {
                non_ready: f64::INFINITY,
                non_loading: f64::INFINITY,
                non_allocated: f64::INFINITY,
            };
            let mut best = (lacks_all, 0);
            for (i, &t) in q.iter().enumerate() {
                if rt.priority(t) < top {
                    if self.sorted() {
                        break; // the rest is lower still
                    }
                    continue;
                }
                let m = rt.missing_bytes(t, w);
                if m.non_ready < best.0.non_ready {
                    best = (m, i);
                    if m.non_ready == 0.0 && m.non_allocated == 0.0 {
                        break;
                    }
                } else if m.non_ready == best.0.non_ready && m < best.0 {
                    best = (m, i);
                }
            }
            best.1
        } else {
            0
        };
        let t = self.local[w].remove(i)?;
        let (_, transfer) = rt.prediction(t);
        let s = &mut self.dm[w];
        s.exp_len = (s.exp_len - transfer).max(0.0);
        s.pipeline_len += transfer;
        s.exp_start = now + s.pipeline_len;
        Some(t)
    }

    fn on_start(&mut self, t: u32, w: usize, rt: &View) {
        let now = rt.now;
        let (len, transfer) = rt.prediction(t);
        let s = &mut self.dm[w];
        s.pipeline_len = (s.pipeline_len - transfer).max(0.0);
        s.exp_len = (s.exp_len - len).max(0.0);
        s.pipeline_len += len;
        // StarPU's pre-exec hook (_starpu_fifo_task_started) restarts the expectation from
        // now; only the pop and the end keep a later one.
        s.exp_start = now + s.pipeline_len;
    }

    fn on_end(&mut self, t: u32, w: usize, rt: &View) {
        let now = rt.now;
        let (len, _) = rt.prediction(t);
        let s = &mut self.dm[w];
        s.ntasks = s.ntasks.saturating_sub(1);
        s.pipeline_len = (s.pipeline_len - len).max(0.0);
        s.exp_start = s.exp_start.max(now + s.pipeline_len);
    }

    fn queued(&self) -> usize {
        self.local.iter().map(VecDeque::len).sum()
    }

    fn queued_on(&self, w: usize) -> Option<usize> {
        Some(self.local[w].len())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::runtime::Runtime;
    use crate::runtime::model::Flags;
    use crate::runtime::setup::test_runtime;
    use hetsim_schema::SimTime;

    #[test]
    fn the_fittest_worker_weighs_its_end_against_its_transfers_and_ties_go_first() {
        let c = |w, end, penalty| Cand {
            w,
            end,
            len: 1.0,
            penalty,
        };
        // Worker 0 ends 2 s after worker 1 but moves no data; worker 1 must move 3 s' worth.
        let cands = [c(0, 5.0, 0.0), c(1, 3.0, 3.0)];
        // dm: the expected end alone.
        assert_eq!(best_fit(&cands, false, 1.0, 1.0).w, 1);
        // dmda, alpha = beta = 1: 2 + 0 against 0 + 3.
        assert_eq!(best_fit(&cands, true, 1.0, 1.0).w, 0);
        // beta = 0.5: 2 against 1.5.
        assert_eq!(best_fit(&cands, true, 1.0, 0.5).w, 1);
        // A tie: the first in worker order.
        assert_eq!(
            best_fit(&[c(0, 4.0, 1.0), c(1, 4.0, 1.0)], true, 1.0, 1.0).w,
            0
        );
    }

    #[test]
    fn pushes_of_one_instant_by_different_threads_do_not_see_each_other() {
        // A GPU and a CPU, every task 10 ms on either, no data (dm: expected end only).
        // Worker 1 pushes a: both workers would end it at 10 ms, the first (GPU) wins.
        // Worker 0 pushes b at the same instant: it does not see a (StarPU-SimGrid's threads
        // decide before either commits), so the GPU wins again. Worker 1's next push, c,
        // still at that instant, sees its own a but not b: the GPU at 20 ms loses to the
        // CPU at 10 ms. A microsecond later d sees everything: GPU 20 ms, CPU 10 ms: CPU.
        let dag = r#"(handles: [], tasks: [
            (name: "a", codelet: "k"), (name: "b", codelet: "k"),
            (name: "c", codelet: "k"), (name: "d", codelet: "k")])"#;
        let both = r#"{"k": (cpu: Some(Constant("10ms")), cuda: Some(Constant("10ms")))}"#;
        let mut rt = test_runtime(dag, both, 16e9, Flags::default());
        let mut dm = DequeModel::new(Scheduler::Dm, 2);
        let push = |dm: &mut DequeModel, t, by, rt: &mut Runtime| {
            dm.push(t, Some(by), &mut rt.policy_and_view().1);
            (0..2).find(|&w| dm.local[w].contains(&t)).unwrap()
        };
        assert_eq!(push(&mut dm, 0, 1, &mut rt), 0);
        assert_eq!(push(&mut dm, 1, 0, &mut rt), 0);
        assert_eq!(push(&mut dm, 2, 1, &mut rt), 1);
        rt.out.now = SimTime::from_secs_saturating(1e-6);
        assert_eq!(push(&mut dm, 3, 1, &mut rt), 1);
        assert_eq!(dm.dm[0].ntasks, 2);
    }

    #[test]
    fn a_task_start_restarts_the_expected_start_from_now() {
        // One GPU-only task reading 1 GB that is not on the GPU: dmda predicts 10 ms of work
        // after a 0.2 s copy (2 x ngpus x size / bandwidth). The pop moves the copy into the
        // pipeline: expected start 0 + 0.2 s. The data come early and the task starts at
        // 0.05 s: StarPU's pre-exec hook (_starpu_fifo_task_started) sets the expected start
        // to now + what is left in the pipeline, 0.05 + 0.01 = 0.06 s, even though the pop
        // had expected 0.2 s (hetsim kept the later one).
        let dag = r#"(handles: [(name: "x", size: 1e9)],
            tasks: [(name: "t", codelet: "g", accesses: [("x", R)])])"#;
        let gpu_only = r#"{"g": (cpu: None, cuda: Some(Constant("10ms")))}"#;
        let mut rt = test_runtime(dag, gpu_only, 16e9, Flags::default());
        let mut dmda = DequeModel::new(Scheduler::Dmda, 2);
        let pushed = dmda.push(0, None, &mut rt.policy_and_view().1);
        assert_eq!(pushed.prediction, Some((0.01, 0.2)));
        rt.tasks.pred[0] = (0.01, 0.2);
        assert_eq!(dmda.pop(0, &mut rt.policy_and_view().1), Some(0));
        assert_eq!(dmda.dm[0].exp_start, 0.2);
        rt.out.now = SimTime::from_secs_saturating(0.05);
        dmda.on_start(0, 0, &rt.policy_and_view().1);
        assert!((dmda.dm[0].exp_start - 0.06).abs() < 1e-12);
        assert!(dmda.dm[0].exp_len.abs() < 1e-12);
    }
}
