//! The runtime's state, grouped by owner, and what every part asks of it: the policy and its
//! view, the data-event log, a task's priority. The worker loop is in `workers/`. Plain state
//! in; timers and transfer flows out (`out`), handed to the calendar and the network by the
//! coordinator.

use bevy_ecs::prelude::Resource;

use super::data::{Data, DataCx};
use super::model::Model;
use super::out::{Out, handle_name};
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

    /// Appends a line to the data-event log when it is kept ([`Out::log`]); `rest` reads the
    /// runtime.
    pub(crate) fn log(&mut self, kind: char, rest: impl FnOnce(&Runtime) -> String) {
        if self.out.log.is_some() {
            let line = rest(self);
            self.out.log(kind, || line);
        }
    }

    /// The datawizard, and what it reads and writes of the rest: the model, each task's
    /// worker, the pacing and the outbox.
    pub(crate) fn with_data<R>(&mut self, f: impl FnOnce(&mut Data, &mut DataCx<'_>) -> R) -> R {
        let Runtime {
            model,
            tasks,
            pacing,
            data,
            out,
            ..
        } = self;
        let mut cx = DataCx {
            model,
            worker_of: &tasks.worker_of,
            pacing,
            out,
        };
        f(data, &mut cx)
    }

    /// A task's handles and modes as the log lists them (`name:mode`, StarPU's R 1, W 2,
    /// RW 3).
    pub(crate) fn log_accesses(&self, t: u32) -> String {
        let mut out = String::new();
        for &(h, mode) in &self.model.graph.tasks[t as usize].accesses {
            let m = u8::from(mode.reads()) | (u8::from(mode.modifies()) << 1);
            out.push_str(&format!(" {}:{m}", handle_name(h)));
        }
        out
    }
}
