//! StarPU's datawizard: the sub-allocator of GPU memory ([`suballoc`]), the eviction order
//! ([`lru`]) and background tidying ([`tidy`]).

pub mod lru;
pub mod suballoc;
pub mod tidy;
