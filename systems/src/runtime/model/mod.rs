//! What a run reads and never changes (but the codelet-time cache in [`Models`]): the task
//! graph ([`graph`], its tiled generators in [`tiled`]), the machine and codelet models
//! ([`machine`]), the model switches ([`Flags`]) and StarPU-SimGrid's runtime costs.

pub mod graph;
pub mod machine;
pub mod tiled;

use graph::Graph;
use machine::{Machine, Models};

/// What the run reads: the graph, the machine and its codelet models, the switches, and the
/// dm* policies' and the CUDA pipeline's settings.
#[derive(Default)]
pub struct Model {
    pub(crate) graph: Graph,
    pub(crate) machine: Machine,
    pub(crate) models: Models,
    /// The model switches (overheads, memory limit, shared bus, prefetch, noise).
    pub(crate) flags: Flags,
    pub(crate) alpha: f64,
    pub(crate) beta: f64,
    pub(crate) pipeline: u32,
}

/// The model switches the runtime reads.
#[derive(Debug, Clone, Copy, Default)]
pub struct Flags {
    pub overheads: bool,
    pub mem_limit: bool,
    pub shared_bus: bool,
    pub prefetch: bool,
    pub noise: bool,
    pub tidy: bool,
}

/// StarPU-SimGrid's runtime costs (notes 5.2), seconds: per transfer and per GPU kernel
/// queued, cudaMalloc, cudaFree, and pinning host memory per MiB.
pub const QUEUE_COST: f64 = 10e-6;
pub const CUDA_MALLOC: f64 = 175e-6;
pub const CUDA_FREE: f64 = 750e-6;
pub const PINNED_PER_MIB: f64 = 650e-6;
pub const MIB: f64 = 1048576.0;

/// One microsecond, StarPU-SimGrid's unit of push and progress cost.
pub const MICROSECOND: f64 = 1e-6;
