//! hetsim's models, one plugin per concern: platform, network and workloads.
//! Plugins never call each other; they talk through the calendar and through components.

pub mod chakra;
pub mod cuda;
pub mod jobs;
pub mod mpi;
pub mod nccl;
pub mod network;
pub mod platform;
pub mod runtime;
pub mod workload;
