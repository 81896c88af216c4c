//! The vocabulary every datawizard file names: a request's level and its place in a list,
//! and what an allocation may evict.

use std::cmp::Reverse;

/// StarPU's request levels: a task that needs its data now, a push-time prefetch, or an
/// idle write-back. Served in that order; a node pair starts fetches while fewer than
/// [`FETCH_CAP`] requests are in flight on it, prefetches while fewer than [`PREFETCH_CAP`]
/// are, idle requests only when none is.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Default)]
pub enum Level {
    #[default]
    Fetch,
    Prefetch,
    Idle,
}

impl Level {
    /// Requests in flight on a node pair below which one of this level starts.
    pub fn cap(self) -> u32 {
        match self {
            Level::Fetch => FETCH_CAP,
            Level::Prefetch => PREFETCH_CAP,
            Level::Idle => IDLE_CAP,
        }
    }

    /// StarPU's `is_prefetch` code in the oracle's log: 0 fetch, 1 task prefetch, 3 idle.
    pub fn log_code(self) -> u8 {
        match self {
            Level::Fetch => 0,
            Level::Prefetch => 1,
            Level::Idle => 3,
        }
    }

    /// Its name (a copy's origin in the log).
    pub fn name(self) -> &'static str {
        match self {
            Level::Fetch => "fetch",
            Level::Prefetch => "prefetch",
            Level::Idle => "idle",
        }
    }
}

/// StarPU 1.4's per-(node, peer, direction) caps on requests in flight (notes 2.4).
const FETCH_CAP: u32 = 5;
const PREFETCH_CAP: u32 = 2;
const IDLE_CAP: u32 = 1;

/// Where a request stands in its node pair's list.
pub type RequestKey = (Level, Reverse<i64>, u32);

/// Whether an allocation may evict replicas, and which.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Evict {
    No,
    /// A task's fetch: any idle replica.
    ForFetch,
    /// A push-time prefetch: idle replicas no other queued task prefetched.
    ForPrefetch,
}

impl Evict {
    /// What a request of this level may evict when it allocates its destination.
    pub fn for_level(level: Level) -> Evict {
        match level {
            Level::Fetch => Evict::ForFetch,
            Level::Prefetch => Evict::ForPrefetch,
            Level::Idle => Evict::No,
        }
    }
}
