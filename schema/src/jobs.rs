//! Several jobs on one machine: each job a workload hetsim runs, on nodes of its own, from a
//! start time of its own (`jobs: [Job(name: "halo", workload: Mpi(...), placement: Random)]`).

use serde::{Deserialize, Serialize};

use crate::scenario::Workload;
use crate::units::Duration;

/// One job: its name (in reports and errors), what it runs, where and from when.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(deny_unknown_fields, rename = "Job")]
pub struct JobSpec {
    pub name: String,
    /// An MPI job (traces, OTF2, generators; NCCL calls from rank programs) or a list of flows.
    pub workload: Workload,
    /// How the job's nodes are chosen (default: the lowest free nodes).
    #[serde(default)]
    pub placement: JobPlacement,
    /// Nodes the job holds (default: what its workload needs: an MPI job's ranks over its GPUs
    /// per node, a flow list's highest `node[N]` plus one).
    #[serde(default)]
    pub nodes: Option<u32>,
    /// When the job begins (default 0): its ranks or flows start this much later.
    #[serde(default)]
    pub start: Duration,
}

/// How a job's nodes are chosen; nodes are whole and belong to one job. Jobs are placed in
/// the order they are listed, each from the nodes the earlier ones left.
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
pub enum JobPlacement {
    /// The lowest free nodes (first fit).
    #[default]
    Contiguous,
    /// Nodes `offset`, `offset + 1`, ... (they must be free).
    Linear(u32),
    /// Free nodes drawn at random with the scenario's seed (and the job's index).
    Random,
    /// Free nodes taken round robin over the leaf switches of a fat-tree, one per leaf in turn.
    Spread,
    /// These nodes, in the job's rank order.
    Nodes(Vec<u32>),
    /// TraceR's job file: the global slot of each rank (32-bit integers), `ranks_per_node`
    /// slots to a node (default: the MPI job's GPUs per node). Relative to the scenario file.
    TraceR {
        file: String,
        #[serde(default)]
        ranks_per_node: Option<u32>,
    },
}

impl JobPlacement {
    /// The variant's name as scenario files spell it.
    pub fn kind(&self) -> &'static str {
        match self {
            JobPlacement::Contiguous => "Contiguous",
            JobPlacement::Linear(_) => "Linear",
            JobPlacement::Random => "Random",
            JobPlacement::Spread => "Spread",
            JobPlacement::Nodes(_) => "Nodes",
            JobPlacement::TraceR { .. } => "TraceR",
        }
    }
}
