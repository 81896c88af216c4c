//! The worker loop and the workers' state: woken workers advance (`advance.rs`), tasks are
//! released and pushed (`release.rs`), fetch their data (`fetch.rs`), start (`start.rs`) and
//! end (`end.rs`).

mod advance;
mod end;
mod fetch;
mod release;
mod start;

use std::collections::VecDeque;

use hetsim_schema::tasks::Mode;

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

/// Whether a task accessing a handle in `mode` leaves its buffer dirty (scratch buffers are
/// private to the task).
pub(super) fn dirties(mode: Mode) -> bool {
    mode != Mode::Scratch && mode.modifies()
}

impl Workers {
    /// `nw` idle workers.
    pub fn new(nw: usize) -> Workers {
        Workers {
            each: (0..nw).map(|_| WorkerRt::default()).collect(),
            running: vec![None; nw],
        }
    }
}
