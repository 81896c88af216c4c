//! Several jobs on one machine (issue 55): where each job's nodes are ([`placement`]),
//! TraceR's job files that say it for traces ([`tracer`]), and the jobs made into what the
//! models run ([`compile`]: MPI and CUDA jobs as [`instance::Instance`]s with their node
//! lists, flows renamed onto their nodes).
//! All leaves: plain data in, outcomes out. The MPI plugin keeps each job's ranks, requests,
//! matching and communicators apart; the network shares the fabric.

pub mod compile;
pub mod instance;
pub mod placement;
pub mod tracer;
