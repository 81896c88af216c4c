//! Several jobs on one machine (issue 55, under way): where each job's nodes are
//! ([`placement`]) and TraceR's job files that say it for traces ([`tracer`]). Both are leaves:
//! plain data in, outcomes out. Running the jobs side by side is not wired yet; no scenario
//! field reaches this module.

pub mod placement;
pub mod tracer;
