//! A ready task starts: its time (the model, its noise, the kernel's queueing, the driver's
//! debts) and its kernel.

use hetsim_schema::SimTime;

use crate::runtime::core::Runtime;
use crate::runtime::data::coherency::Msi;
use crate::runtime::model::QUEUE_COST;
use crate::runtime::model::machine::Arch;
use crate::runtime::out::Due;
use crate::runtime::tasks::TaskState;

impl Runtime {
    /// Starts the front task of `w` when it is ready and nothing runs.
    pub(crate) fn try_run(&mut self, w: usize) {
        if self.workers.running[w].is_some() {
            return;
        }
        let Some(&t) = self.workers.each[w].in_hand.front() else {
            return;
        };
        if self.tasks.state[t as usize] != TaskState::Ready {
            return;
        }
        let (secs, sync) = self.task_secs(t, w);
        // Coherence: every buffer the task reads is valid where it runs.
        debug_assert!(
            self.model.graph.tasks[t as usize]
                .accesses
                .iter()
                .all(|&(h, m)| !m.reads()
                    || self
                        .data
                        .replicas
                        .get(h, self.model.machine.workers[w].node)
                        .state
                        != Msi::Invalid),
            "a reader would read a stale copy"
        );
        self.log('S', |rt| rt.start_line(t, w));
        self.start_kernel(t, w, secs, sync);
    }

    /// How long task `t` occupies worker `w` from now: the codelet model's time (drawn with
    /// its noise when on), the asynchronous kernel's queueing behind its launch, and the
    /// allocations its driver owes; and whether it is a synchronous GPU kernel.
    fn task_secs(&mut self, t: u32, w: usize) -> (f64, bool) {
        let arch = self.model.machine.workers[w].arch;
        let task = &self.model.graph.tasks[t as usize];
        let (mean, sd) = self.model.models.time(task, arch).expect("checked at push");
        let mut secs = mean;
        if self.model.flags.noise && sd > 0.0 {
            // Box-Muller from two uniforms of the run's seeded stream.
            let (u1, u2) = (self.uniform().max(1e-300), self.uniform());
            secs =
                (mean + sd * (-2.0 * u1.ln()).sqrt() * (std::f64::consts::TAU * u2).cos()).max(0.0);
        }
        let sync = self.runs_sync(t, w);
        if self.model.flags.overheads && matches!(arch, Arch::Cuda(_)) && !sync {
            // The driver queues an asynchronous kernel 10 us after its inputs are there
            // (StarPU-SimGrid's queueing sleep); one queued behind a running kernel starts
            // as soon as that one ends.
            let queued = self.tasks.launched[t as usize]
                .saturating_add(SimTime::from_secs_saturating(QUEUE_COST));
            secs += queued.saturating_sub(self.out.now).as_secs_f64();
        }
        // Allocations made for it without a copy (written-only buffers) before it starts.
        secs +=
            std::mem::take(&mut self.data.mem.debt[self.model.machine.workers[w].node as usize]);
        (secs, sync)
    }

    /// The S line of the data-event log: the task, its accesses and priority, and on a GPU
    /// the node's buffers as the oracle counts them.
    fn start_line(&self, t: u32, w: usize) -> String {
        let rt = self;
        let name = &rt.model.graph.tasks[t as usize].label;
        let (acc, prio) = (rt.log_accesses(t), rt.priority(t));
        let node = rt.model.machine.workers[w].node as usize;
        if node == 0 {
            return format!("{w} {name} j={t}{acc} p={prio}");
        }
        // The GPU's buffers as the oracle counts them: all, pinned by queued tasks'
        // prefetches, referenced, neither.
        let (mut pinned, mut referenced, mut idle) = (0, 0, 0);
        // And by clean mark x state x pinned, as the oracle's occupancy log counts them.
        let mut kinds = [0u32; 12];
        for (_, h) in rt.data.mem.lru[node].iter() {
            let r = rt.data.replicas.get(h, node as u32);
            pinned += u32::from(r.prefetch_pins > 0);
            referenced += u32::from(r.refcnt > 0);
            idle += u32::from(r.prefetch_pins == 0 && r.refcnt == 0);
            let state = match r.state {
                Msi::Invalid => 0,
                Msi::Shared => 1,
                Msi::Owner => 2,
            };
            let pin = usize::from(r.prefetch_pins > 0);
            kinds[usize::from(r.marked_clean) * 6 + state * 2 + pin] += 1;
        }
        let all = rt.data.mem.lru[node].len();
        let clean = rt.data.replicas.marked_clean(node as u32);
        let head = u8::from(rt.data.mem.dirty_head[node].is_some());
        let kinds: Vec<String> = kinds.iter().map(u32::to_string).collect();
        format!(
            "{w} {name} j={t}{acc} p={prio} M {all} {pinned} {referenced} {idle} \
             C {clean} {all} {head} Y {}",
            kinds.join(" ")
        )
    }

    /// Task `t` runs on `w` for `secs` from now: its interval, its end, and for a synchronous
    /// kernel, its driver's copies held until then.
    fn start_kernel(&mut self, t: u32, w: usize, secs: f64, sync: bool) {
        self.out.report.task_times[t as usize] = (self.out.now.as_secs_f64(), f64::NAN, w as u32);
        self.tasks.state[t as usize] = TaskState::Running;
        self.workers.running[w] = Some(t);
        self.workers.each[w].busy_s += secs;
        let end = self
            .out
            .now
            .saturating_add(SimTime::from_secs_saturating(secs));
        if sync {
            // The driver runs the kernel itself: it submits none of its copies meanwhile.
            let node = self.model.machine.workers[w].node as usize;
            let free = &mut self.data.copies.driver_free[node];
            *free = (*free).max(end);
        }
        let wr = &mut self.workers.each[w];
        if let Some(row) = wr.row {
            self.out.intervals.push((
                row,
                self.model.graph.tasks[t as usize].codelet,
                t,
                self.out.now,
                end,
            ));
        }
        let (policy, view) = self.policy_and_view();
        policy.on_start(t, w, &view);
        self.out.timers.push((end, Due::TaskDone(t)));
    }
}
