//! The workers' state as the loop runs them.

use std::collections::VecDeque;

use hetsim_engine::record::ResId;

#[derive(Debug, Default)]
pub struct WorkerRt {
    /// Popped tasks in order: the front runs first.
    pub(crate) in_hand: VecDeque<u32>,
    pub(crate) fetching: Option<u32>,
    /// Tasks whose kernel ended while the driver waited for an eviction's write-back: their
    /// end (successors released, data let go) is handled when it is back.
    pub(crate) ended: Vec<u32>,
    pub(crate) busy_s: f64,
    pub(crate) tasks: u64,
    pub(crate) row: Option<ResId>,
}

/// Every worker's loop state, and the task each one runs.
#[derive(Default)]
pub struct Workers {
    pub(crate) each: Vec<WorkerRt>,
    /// The task each worker runs.
    pub(crate) running: Vec<Option<u32>>,
}
