//! Workloads: what drives a run.

pub mod flows;

pub use flows::{FlowsPlugin, FlowsWorkload};
