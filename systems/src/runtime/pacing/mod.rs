//! StarPU-SimGrid's driver threads and pushes: which workers a push signals under eager and prio
//! ([`drivers`]), and the driver threads' pushes and loops and the order SimGrid wakes them in
//! ([`threads`]).

pub mod drivers;
pub mod threads;

use hetsim_schema::SimTime;

use drivers::Drivers;
use threads::Threads;

/// StarPU-SimGrid's pacing of pushes and pops: the drivers' and their threads' states, the
/// workers to look at, and the pops and pushes of this instant.
#[derive(Default)]
pub struct Pacing {
    /// Driver states for the policies paced by StarPU-SimGrid's drivers.
    pub(crate) drivers: Drivers,
    /// Their threads' loops and pushes, and SimGrid's order of their wake-ups.
    pub(crate) threads: Threads,
    /// Worker indices that may make progress.
    pub(crate) dirty: Vec<u32>,
    pub(crate) dirty_mark: Vec<bool>,
    /// Drivers whose task ended and that may not pop before their `Due::Resume`: after
    /// their pushes and their progress.
    pub(crate) deferred: Vec<bool>,
    /// Node pairs whose requests a GPU driver is to handle in its next progress (a dm* driver
    /// between a task's end and its pop, a paced driver in its loop), per worker.
    pub(crate) parked_pairs: Vec<Vec<(u32, u32)>>,
    /// The worker whose driver loop pops now (paced policies pop only then).
    pub(crate) pop_turn: Option<usize>,
    /// A CPU's fetch found data in RAM at this instant: RAM's drivers are to be woken.
    pub(crate) ram_broadcast: bool,
    /// Pushes made at this instant by this releaser (None: the application): their count.
    pub(crate) push_clock: (SimTime, Option<u32>, u32),
}
