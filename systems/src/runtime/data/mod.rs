//! StarPU's datawizard: the sub-allocator of GPU memory ([`suballoc`]), the eviction order
//! ([`lru`]) and background tidying ([`tidy`]).

pub mod lru;
pub mod suballoc;
pub mod tidy;

use crate::runtime::memory::{Memory, Replicas};
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
