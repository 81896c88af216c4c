//! StarPU's scheduling policies (src/sched_policies/), as the reference notes describe them:
//! eager (one FIFO), prio (one priority list), random (weighted by relative speed-up), ws and
//! lws (per-worker priority deques with stealing; lws steals from workers of its own kind
//! first), and the dm family: dm (earliest expected finish), dmda (plus transfer penalty,
//! alpha/beta fitness, prefetch at push), dmdar (ready-first pop), dmdap (priority-sorted
//! queues), dmdas (priority-sorted queues, ready-first pop), dmdasd (dmdas whose decision
//! counts only the queued work ahead of the task), and heteroprio. Ties go to the first
//! worker in StarPU's order (GPUs first). Uncalibrated models (StarPU history entries under
//! 10 samples) make dm* fall back to StarPU's greedy rule: the least loaded worker, the first
//! uncalibrated one at once.
//! Simplified: the ready-first scan looks at the first 64 queued tasks; no energy term.
//! heteroprio is its automatic form: one bucket per codelet, ranked by the models'
//! acceleration (CPU time / GPU time at the first task's size), GPUs walking the buckets
//! from the most accelerated, CPUs from the least; a worker of the slower kind takes from a
//! bucket only when it holds at least `speed-up x` as many tasks as the faster kind has
//! workers (StarPU's slow factor); tasks in a bucket by priority; no private queues or
//! stealing (the worker's own pipeline holds what it popped).

use std::collections::VecDeque;

use hetsim_components::tasks::Scheduler;

use super::Runtime;

/// Most tasks the ready-first pop examines.
const READY_SCAN: usize = 64;

/// A worker's expected-finish bookkeeping (deque_modeling_policy_data_aware.c).
#[derive(Debug, Clone, Copy, Default)]
pub struct DmState {
    pub exp_start: f64,
    pub exp_len: f64,
    pub pipeline_len: f64,
    /// Tasks pushed to the worker and not finished (queued + pipeline).
    pub ntasks: u32,
}

#[derive(Debug, Default)]
pub struct Sched {
    pub kind: Option<Scheduler>,
    central: VecDeque<u32>,
    local: Vec<VecDeque<u32>>,
    pub dm: Vec<DmState>,
    last_push: usize,
    last_victim: usize,
    /// heteroprio: a priority-ordered bucket per codelet, and each bucket's acceleration
    /// (CPU time / GPU time; NaN until its first task is pushed).
    buckets: Vec<VecDeque<u32>>,
    speedup: Vec<f64>,
}

impl Sched {
    pub fn new(kind: Scheduler, workers: usize) -> Sched {
        Sched {
            kind: Some(kind),
            local: vec![VecDeque::new(); workers],
            dm: vec![DmState::default(); workers],
            ..Default::default()
        }
    }

    fn kind(&self) -> Scheduler {
        self.kind.expect("a scheduler")
    }

    fn is_dm(&self) -> bool {
        matches!(
            self.kind(),
            Scheduler::Dm
                | Scheduler::Dmda
                | Scheduler::Dmdar
                | Scheduler::Dmdap
                | Scheduler::Dmdas
                | Scheduler::Dmdasd
        )
    }

    /// dm* policies whose queues are sorted by priority.
    fn sorted(&self) -> bool {
        matches!(
            self.kind(),
            Scheduler::Dmdap | Scheduler::Dmdas | Scheduler::Dmdasd
        )
    }

    /// dm* policies that pop the readiest task rather than the head.
    fn ready_first(&self) -> bool {
        matches!(
            self.kind(),
            Scheduler::Dmdar | Scheduler::Dmdas | Scheduler::Dmdasd
        )
    }

    /// Tasks waiting in the policy's queues.
    pub fn queued(&self) -> usize {
        self.central.len()
            + self.local.iter().map(VecDeque::len).sum::<usize>()
            + self.buckets.iter().map(VecDeque::len).sum::<usize>()
    }

    /// A task became ready (released by worker `by`, or at submission).
    pub fn push(&mut self, t: u32, by: Option<u32>, rt: &mut Runtime) {
        let prio = rt.priority(t);
        match self.kind() {
            Scheduler::Eager => self.central.push_back(t),
            Scheduler::Prio => insert_sorted(&mut self.central, t, prio, rt),
            Scheduler::Random => {
                let w = self.random_worker(t, rt);
                insert_sorted(&mut self.local[w], t, prio, rt);
            }
            Scheduler::Ws | Scheduler::Lws => {
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
                insert_sorted(&mut self.local[w], t, prio, rt);
            }
            Scheduler::Heteroprio => self.bucket_push(t, rt),
            _ => self.dm_push(t, rt),
        }
    }

    /// heteroprio: into its codelet's bucket, by priority.
    fn bucket_push(&mut self, t: u32, rt: &mut Runtime) {
        let c = rt.codelet(t) as usize;
        if self.buckets.len() <= c {
            self.buckets.resize(c + 1, VecDeque::new());
            self.speedup.resize(c + 1, f64::NAN);
        }
        if self.speedup[c].is_nan() {
            self.speedup[c] = rt.acceleration(t);
        }
        let prio = rt.priority(t);
        insert_sorted(&mut self.buckets[c], t, prio, rt);
    }

    /// heteroprio: worker `w` walks the buckets in its kind's order and takes the first task
    /// it may take and can run.
    fn bucket_pop(&mut self, w: usize, rt: &mut Runtime) -> Option<u32> {
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

    fn random_worker(&self, t: u32, rt: &mut Runtime) -> usize {
        let able: Vec<usize> = (0..self.local.len())
            .filter(|&w| rt.can_run(t, w))
            .collect();
        let total: f64 = able.iter().map(|&w| rt.machine.workers[w].speedup).sum();
        let mut x = rt.uniform() * total;
        for &w in &able {
            x -= rt.machine.workers[w].speedup;
            if x < 0.0 {
                return w;
            }
        }
        *able.last().expect("a worker can run the task")
    }

    /// dm*: the worker with the best fitness; commit the expected times, prefetch.
    fn dm_push(&mut self, t: u32, rt: &mut Runtime) {
        let da = self.kind() != Scheduler::Dm;
        let now = rt.now_s();
        let (alpha, beta) = (rt.alpha, rt.beta);
        let mut cands: Vec<(usize, f64, f64, f64)> = Vec::new(); // worker, exp_end, len, penalty
        // StarPU's greedy fallback when a model is uncalibrated (NaN): the least loaded
        // worker (tasks / relative speed-up), grabbing the first uncalibrated one at once.
        let mut greedy: Option<(usize, f64)> = None;
        let mut seen_nan = false;
        for w in 0..self.local.len() {
            let Some((len, calibrated)) = rt.predicted(t, w) else {
                continue;
            };
            let nan = !calibrated;
            let load = self.dm[w].ntasks as f64 / rt.machine.workers[w].speedup;
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
            let ahead = if self.kind() == Scheduler::Dmdasd {
                self.work_ahead(t, w, rt)
            } else {
                self.dm[w].exp_len
            };
            let mut start = start_w + ahead;
            if da {
                start = start.max(now + penalty);
            }
            cands.push((w, start + len, len, penalty));
        }
        if seen_nan {
            let (w, _) = greedy.expect("a worker can run the task (checked at start)");
            self.dm[w].ntasks += 1;
            rt.set_prediction(t, 0.0, 0.0);
            self.local[w].push_back(t);
            if da {
                rt.prefetch(t, w);
            }
            return;
        }
        let best_end = cands.iter().map(|c| c.1).fold(f64::INFINITY, f64::min);
        let mut best: Option<(usize, f64, f64, f64)> = None;
        let mut best_fit = f64::INFINITY;
        for &(w, end, len, penalty) in &cands {
            let fit = if da {
                alpha * (end - best_end) + beta * penalty
            } else {
                end - best_end
            };
            if fit < best_fit {
                best_fit = fit;
                best = Some((w, end, len, penalty));
            }
        }
        let (w, _, len, penalty) = best.expect("a worker can run the task (checked at start)");
        let s = &mut self.dm[w];
        s.exp_start = s.exp_start.max(now);
        let queue_end = s.exp_start + s.exp_len;
        let extra = if now + penalty < queue_end {
            0.0
        } else {
            now + penalty - queue_end
        };
        s.exp_len += extra + len;
        s.ntasks += 1;
        rt.set_prediction(t, len, extra);
        let prio = rt.priority(t);
        if self.sorted() {
            insert_sorted(&mut self.local[w], t, prio, rt);
        } else {
            self.local[w].push_back(t);
        }
        if da {
            rt.prefetch(t, w);
        }
    }

    /// dmdasd's "sorted decision": the predicted work that runs on `w` before task `t`
    /// would, given where its priority puts it in the queue (StarPU counts the pipeline
    /// again when the task would go first: kept as StarPU has it).
    fn work_ahead(&self, t: u32, w: usize, rt: &mut Runtime) -> f64 {
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

    /// Worker `w` asks for work.
    pub fn pop(&mut self, w: usize, rt: &mut Runtime) -> Option<u32> {
        match self.kind() {
            Scheduler::Eager | Scheduler::Prio => {
                let i = self.central.iter().position(|&t| rt.can_run(t, w))?;
                self.central.remove(i)
            }
            Scheduler::Random => self.local[w].pop_front(),
            Scheduler::Ws | Scheduler::Lws => {
                if let Some(t) = self.local[w].pop_front() {
                    return Some(t);
                }
                self.steal(w, rt)
            }
            Scheduler::Heteroprio => self.bucket_pop(w, rt),
            _ => self.dm_pop(w, rt),
        }
    }

    /// Takes the newest task of the highest priority from a busy victim's deque.
    fn steal(&mut self, w: usize, rt: &mut Runtime) -> Option<u32> {
        let n = self.local.len();
        let order: Vec<usize> = if self.kind() == Scheduler::Lws {
            // Closest first: workers of the same kind, then the others, by distance in id.
            let mut v: Vec<usize> = (0..n).filter(|&v| v != w).collect();
            let same = |v: usize| {
                rt.machine.workers[v].arch == rt.machine.workers[w].arch
                    || matches!(
                        (rt.machine.workers[v].arch, rt.machine.workers[w].arch),
                        (super::machine::Arch::Cuda(_), super::machine::Arch::Cuda(_))
                    )
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

    fn dm_pop(&mut self, w: usize, rt: &mut Runtime) -> Option<u32> {
        let now = rt.now_s();
        let s = &mut self.dm[w];
        s.exp_start = s.exp_start.max(now);
        let q = &self.local[w];
        if q.is_empty() {
            return None;
        }
        let i = if self.ready_first() {
            let top = rt.priority(q[0]);
            let mut best = (f64::INFINITY, f64::INFINITY, 0);
            for (i, &t) in q.iter().enumerate().take(READY_SCAN) {
                if rt.priority(t) < top {
                    break;
                }
                let (non_ready, non_alloc) = rt.missing_bytes(t, w);
                if (non_ready, non_alloc) < (best.0, best.1) {
                    best = (non_ready, non_alloc, i);
                }
                if non_ready == 0.0 && non_alloc == 0.0 {
                    break;
                }
            }
            best.2
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

    /// The task's inputs are there and it starts on `w`.
    pub fn on_start(&mut self, t: u32, w: usize, rt: &Runtime) {
        if !self.is_dm() {
            return;
        }
        let now = rt.now_s();
        let (len, transfer) = rt.prediction(t);
        let s = &mut self.dm[w];
        s.pipeline_len = (s.pipeline_len - transfer).max(0.0);
        s.exp_len = (s.exp_len - len).max(0.0);
        s.pipeline_len += len;
        s.exp_start = s.exp_start.max(now + s.pipeline_len);
    }

    /// The task ended on `w`.
    pub fn on_end(&mut self, t: u32, w: usize, rt: &Runtime) {
        if !self.is_dm() {
            return;
        }
        let now = rt.now_s();
        let (len, _) = rt.prediction(t);
        let s = &mut self.dm[w];
        s.ntasks = s.ntasks.saturating_sub(1);
        s.pipeline_len = (s.pipeline_len - len).max(0.0);
        s.exp_start = s.exp_start.max(now + s.pipeline_len);
    }
}

/// Inserts after every task of priority >= `prio` (highest first, FIFO within a priority).
fn insert_sorted(q: &mut VecDeque<u32>, t: u32, prio: i64, rt: &Runtime) {
    let at = q.partition_point(|&x| rt.priority(x) >= prio);
    q.insert(at, t);
}
