//! StarPU's datawizard: the sub-allocator of GPU memory ([`suballoc`]), the eviction order
//! ([`lru`]) and background tidying ([`tidy`]).

pub mod lru;
pub mod suballoc;
pub mod tidy;

use crate::runtime::memory::{Memory, Replicas};
use crate::runtime::model::graph::Graph;
use crate::runtime::transfers::Transfers;

/// The datawizard's state: replicas per memory node, allocation and eviction, copies and their
/// request lists, and the clock of uses that orders evictions.
#[derive(Default)]
pub struct Data {
    pub(crate) replicas: Replicas,
    /// Allocation, the eviction order and prefetch pins per memory node.
    pub(crate) mem: Memory,
    /// Transfers and their request lists.
    pub(crate) copies: Transfers,
    pub(crate) tick: u64,
}

impl Data {
    /// Every handle of `graph` at home in RAM, nothing allocated on the `nn` memory nodes,
    /// no copy in flight.
    pub fn new(graph: &Graph, nn: usize) -> Data {
        let (nt, nh) = (graph.tasks.len(), graph.handles.len());
        Data {
            replicas: Replicas::new(graph, nn),
            mem: Memory::new(nn, nt, nh),
            copies: Transfers::new(nn, nh),
            tick: 0,
        }
    }
}
