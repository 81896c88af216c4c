//! The runtime's state, grouped by owner, and what every part asks of it: the policy and its
//! view, the data-event log, a task's priority. The worker loop is in `workers/`. Plain state
//! in; timers and transfer flows out (`out`), handed to the calendar and the network by the
//! coordinator.

use bevy_ecs::prelude::Resource;

use super::data::Data;
use super::model::Model;
use super::out::Out;
use super::pacing::Pacing;
use super::sched::{Policy, View};
use super::tasks::Tasks;
use super::workers::Workers;

/// The runtime's whole state, grouped by owner.
#[derive(Resource, Default)]
pub struct Runtime {
    /// What the run reads.
    pub(crate) model: Model,
    /// The scheduling policy (set up with the runtime).
    pub(crate) sched: Option<Box<dyn Policy>>,
    pub(crate) rng: Option<rand_chacha::ChaCha8Rng>,
    pub(crate) tasks: Tasks,
    pub(crate) workers: Workers,
    pub(crate) pacing: Pacing,
    pub(crate) data: Data,
    pub(crate) out: Out,
}

impl Runtime {
    pub(crate) fn priority(&self, t: u32) -> i64 {
        self.model.graph.tasks[t as usize].priority
    }

    pub(crate) fn uniform(&mut self) -> f64 {
        super::sched::uniform(self.rng.as_mut().expect("seeded"))
    }

    /// The policy, and what it may read of the rest of the runtime.
    pub(crate) fn policy_and_view(&mut self) -> (&mut dyn Policy, View<'_>) {
        let Runtime {
            sched,
            model,
            tasks,
            workers,
            data,
            rng,
            out,
            ..
        } = self;
        let view = View {
            graph: &model.graph,
            machine: &model.machine,
            models: &mut model.models,
            replicas: &data.replicas,
            pred: &tasks.pred,
            running: &workers.running,
            rng: rng.as_mut().expect("seeded"),
            now: out.now.as_secs_f64(),
            alpha: model.alpha,
            beta: model.beta,
        };
        (sched.as_deref_mut().expect("a policy"), view)
    }

    /// Appends a line to the data-event log when it is kept (`output.runtime_log`): the
    /// kind, the time in microseconds, then `rest`, as the StarPU-SimGrid oracle's log
    /// writes them (`tools/starpu-simgrid/xlog.patch`).
    pub(crate) fn log(&mut self, kind: char, rest: impl FnOnce(&Runtime) -> String) {
        if let Some(mut log) = self.out.log.take() {
            log.push(format!(
                "{kind} {:.3} {}",
                self.out.now.as_secs_f64() * 1e6,
                rest(self)
            ));
            self.out.log = Some(log);
        }
    }

    /// A handle's name in the log, by index as the StarPU traces name it (`0x<index>`).
    pub(crate) fn handle_name(&self, h: u32) -> String {
        format!("{h:#x}")
    }

    /// A task's handles and modes as the log lists them (`name:mode`, StarPU's R 1, W 2,
    /// RW 3).
    pub(crate) fn log_accesses(&self, t: u32) -> String {
        let mut out = String::new();
        for &(h, mode) in &self.model.graph.tasks[t as usize].accesses {
            let m = u8::from(mode.reads()) | (u8::from(mode.modifies()) << 1);
            out.push_str(&format!(" {}:{m}", self.handle_name(h)));
        }
        out
    }

    pub(crate) fn source_for(&self, h: u32, dst: u32) -> Option<u32> {
        let size = self.model.graph.handles[h as usize].size;
        self.data
            .replicas
            .source_for(h, dst, size, &self.model.machine)
    }
}
