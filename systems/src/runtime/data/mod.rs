//! StarPU's datawizard, a file each as StarPU splits it: replicas and their states
//! ([`coherency`]), allocation ([`memalloc`], with the sub-allocator [`suballoc`] and the
//! eviction order [`lru`]), reclaiming ([`evict`]), request lists ([`requests`]), copies and
//! what their end makes valid ([`copies`]), background tidying ([`tidy`]); the words they
//! share in [`kinds`]. It never calls the worker loop: it reads the model, wakes workers
//! through the pacing, and hands timers, flows and log lines to the outbox ([`DataCx`]);
//! what the end of a copy asks of the loop comes back as a [`copies::CopyEnd`].

pub mod coherency;
pub mod copies;
pub mod evict;
pub mod kinds;
pub mod lru;
pub mod memalloc;
pub mod requests;
pub mod suballoc;
pub mod tidy;

use self::coherency::Replicas;
use self::copies::Transfers;
use self::memalloc::Memory;
use crate::runtime::model::Model;
use crate::runtime::model::graph::Graph;
use crate::runtime::out::Out;
use crate::runtime::pacing::Pacing;

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

/// What the datawizard reads and writes of the rest of the runtime.
pub(crate) struct DataCx<'a> {
    pub model: &'a Model,
    /// Each popped task's worker (a task waiting for memory wakes its worker).
    pub worker_of: &'a [u32],
    pub pacing: &'a mut Pacing,
    pub out: &'a mut Out,
}

#[cfg(test)]
mod tests;
