//! hetsim's vocabulary: simulated time, units, the scenario schema (platforms, workloads,
//! MPI, CUDA/NCCL, task graphs, studies), its loader with file and field-path errors, and
//! readers of StarPU's calibration files. Everything else in hetsim speaks in these terms;
//! the ECS components of the simulated machine are in `hetsim-components`.

pub mod budget;
pub mod chakra;
pub mod cuda;
pub mod jobs;
pub mod load;
pub mod mpi;
pub mod pace;
pub mod scenario;
pub mod shipped;
pub mod starpu;
pub mod study;
pub mod tasks;
pub mod time;
pub mod unique;
pub mod units;

pub use time::SimTime;
