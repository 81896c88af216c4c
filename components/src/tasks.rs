//! The task-graph schema: a DAG file (RON) of data handles and tasks with their accesses, for
//! applications other than the built-in tiled generators.

use serde::{Deserialize, Serialize};

use crate::units::Bytes;

/// How a task accesses a handle (StarPU's access modes).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub enum Mode {
    /// Read: needs a valid copy where the task runs.
    R,
    /// Write only: allocates, invalidates the other copies.
    W,
    RW,
    /// A per-worker temporary: never transferred, no dependencies.
    Scratch,
    /// A per-worker contribution, combined at the next other access: redux tasks run
    /// concurrently.
    Redux,
}

impl Mode {
    pub fn reads(self) -> bool {
        matches!(self, Mode::R | Mode::RW)
    }
    pub fn writes(self) -> bool {
        matches!(self, Mode::W | Mode::RW)
    }
    /// StarPU's letters in `tasks.rec`.
    pub fn letter(self) -> &'static str {
        match self {
            Mode::R => "R",
            Mode::W => "W",
            Mode::RW => "RW",
            Mode::Scratch => "S",
            Mode::Redux => "X",
        }
    }
}

/// A task graph written by hand or by another tool.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct DagSpec {
    pub handles: Vec<HandleSpec>,
    pub tasks: Vec<TaskSpec>,
}

#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct HandleSpec {
    pub name: String,
    pub size: Bytes,
    /// Matrix shape in elements (nx, ny), for StarPU footprints; default a vector of `size`
    /// bytes.
    #[serde(default)]
    pub shape: Option<(u32, u32)>,
}

#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct TaskSpec {
    pub name: String,
    /// The codelet (its performance model's symbol, e.g. `chol_model_gemm`).
    pub codelet: String,
    #[serde(default)]
    pub accesses: Vec<(String, Mode)>,
    #[serde(default)]
    pub priority: i64,
    #[serde(default)]
    pub flops: f64,
    /// Explicit dependencies (task names), on top of the data's sequential consistency.
    #[serde(default)]
    pub deps: Vec<String>,
}
