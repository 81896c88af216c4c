//! What the runtime hands out: timers and flows for the coordinator to schedule, recorded
//! intervals, the data-event log and the report.

use bevy_ecs::prelude::Resource;
use hetsim_engine::record::ResId;
use hetsim_schema::SimTime;

use super::model::Model;
use super::model::graph::Graph;

/// A timer the runtime asks for (the coordinator schedules it as it is).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Due {
    /// The run starts: the tasks without predecessors are released.
    Start,
    /// A task's time is up.
    TaskDone(u32),
    /// A transfer off the shared bus is over.
    XferDone(u32),
    /// A copy on the shared bus is submitted now (after its driver's allocations and
    /// queueing cost).
    XferSubmit(u32),
    /// A released task is pushed now (after its pusher's earlier pushes).
    Push(u32),
    /// A driver whose task ended is done with its pushes and its progress, and pops now.
    Resume(u32),
    /// A driver thread's 1 us sleep ended (eager, prio, ws, lws: `threads.rs`).
    Wake(u32),
    /// A `wont_use` hint's callback acts on this handle now.
    Hint(u32),
}

/// What the runtime did, for the summary.
#[derive(Resource, Debug, Clone, Default)]
pub struct RuntimeReport {
    pub scheduler: String,
    pub tasks: u64,
    pub makespan_s: f64,
    /// The application's flop count (n^3/3 Cholesky, 2n^3/3 LU, 4n^3/3 QR; the tasks' sum for
    /// a DAG) over the makespan.
    pub gflops: f64,
    pub workers: Vec<(String, f64, u64)>,
    pub bytes_h2d: f64,
    pub bytes_d2h: f64,
    pub bytes_d2d: f64,
    pub transfers: u64,
    pub evictions: u64,
    pub writebacks: u64,
    /// Write-backs tidying asked for (idle requests).
    pub tidy_writebacks: u64,
    /// Per task: start, end (s) and worker index.
    pub task_times: Vec<(f64, f64, u32)>,
    /// Per memory node: name, capacity and the most bytes ever allocated there.
    pub memory: Vec<(String, f64, f64)>,
    /// Each worker's memory node (index into `memory`).
    pub worker_nodes: Vec<u32>,
    /// The task graph that ran (for StarPU-style traces: tasks.rec, data.rec, dag.dot).
    pub graph: std::sync::Arc<Graph>,
    /// The data-event log (`output.runtime_log`; empty otherwise), a line each.
    pub log: std::sync::Arc<Vec<String>>,
}

/// The outbox of a step: the time, and what the step asks of the calendar, the network and
/// the recorder.
#[derive(Default)]
pub struct Out {
    pub(crate) now: SimTime,
    /// Events to schedule after a step's work: (time, event).
    pub(crate) timers: Vec<(SimTime, Due)>,
    pub(crate) flows: Vec<(SimTime, u32)>,
    pub(crate) intervals: Vec<(ResId, u16, u32, SimTime, SimTime)>,
    /// The data-event log, when kept (`output.runtime_log`).
    pub(crate) log: Option<Vec<String>>,
    pub(crate) report: RuntimeReport,
}

impl Out {
    /// `delay` seconds from now, or now without the runtime's overheads (events due now run
    /// after this instant's, in the order they were set).
    pub fn after(&self, model: &Model, delay: f64) -> SimTime {
        let delay = if model.flags.overheads { delay } else { 0.0 };
        self.now
            .saturating_add(SimTime::from_secs_saturating(delay))
    }

    /// Appends a line to the data-event log when it is kept (`output.runtime_log`): the
    /// kind, the time in microseconds, then `rest`, as the StarPU-SimGrid oracle's log
    /// writes them (`tools/starpu-simgrid/xlog.patch`).
    pub(crate) fn log(&mut self, kind: char, rest: impl FnOnce() -> String) {
        if let Some(log) = self.log.as_mut() {
            log.push(format!(
                "{kind} {:.3} {}",
                self.now.as_secs_f64() * 1e6,
                rest()
            ));
        }
    }
}

/// A handle's name in the log, by index as the StarPU traces name it (`0x<index>`).
pub(crate) fn handle_name(h: u32) -> String {
    format!("{h:#x}")
}
