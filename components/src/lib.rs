//! hetsim's vocabulary: simulated time, units, the scenario schema and the components of the
//! simulated machine. Everything else in hetsim speaks in these terms.

pub mod cuda;
pub mod entities;
pub mod load;
pub mod mpi;
pub mod scenario;
pub mod starpu;
pub mod study;
pub mod tasks;
pub mod time;
pub mod units;

pub use time::SimTime;
