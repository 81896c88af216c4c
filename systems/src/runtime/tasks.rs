//! What the runtime knows of each task as it runs: its state, what it still waits for, where it
//! runs and who pushed it.

use hetsim_schema::SimTime;

use super::model::graph::Graph;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TaskState {
    Blocked,
    Queued,
    Fetching,
    Ready,
    Running,
    Done,
}

/// Each task's state, per task, and the counts over all of them.
#[derive(Default)]
pub struct Tasks {
    pub(crate) state: Vec<TaskState>,
    /// When each task's inputs were all there: a GPU's driver queues the kernel then.
    pub(crate) launched: Vec<SimTime>,
    pub(crate) left: Vec<u32>,
    pub(crate) worker_of: Vec<u32>,
    /// dm* predictions per task: (length, transfer not hidden), seconds.
    pub(crate) pred: Vec<(f64, f64)>,
    /// Who released each task waiting for its `Due::Push` (None: the application).
    pub(crate) pusher: Vec<Option<u32>>,
    /// Tasks each `wont_use` hint still waits for.
    pub(crate) hints_left: Vec<u32>,
    pub(crate) done: u64,
    pub(crate) flops: f64,
}

impl Tasks {
    /// Every task of `graph` blocked on its predecessors, none run, its hints' counts full.
    pub fn new(graph: &Graph, flops: f64) -> Tasks {
        let nt = graph.tasks.len();
        Tasks {
            state: vec![TaskState::Blocked; nt],
            launched: vec![SimTime::ZERO; nt],
            left: graph.npred.clone(),
            worker_of: vec![u32::MAX; nt],
            pred: vec![(0.0, 0.0); nt],
            pusher: vec![None; nt],
            hints_left: graph.hints.iter().map(|h| h.1).collect(),
            done: 0,
            flops,
        }
    }
}
