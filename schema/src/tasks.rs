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
    /// Leaves a new value behind (a write, or a reduction treated as one): the other copies
    /// become stale.
    pub fn modifies(self) -> bool {
        self.writes() || self == Mode::Redux
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
    /// The application registered it with data in RAM (allocated and pinned before the run,
    /// as StarPU's examples do); false: no data until a task writes it, and RAM is allocated
    /// (pinned, 650 us per MiB with runtime overheads) only when the data must go there.
    #[serde(default = "yes")]
    pub home: bool,
}

fn yes() -> bool {
    true
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

/// A tiled dense factorisation: an n x n matrix of `tile` x `tile` tiles.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Tiled {
    pub n: u32,
    pub tile: u32,
    #[serde(default)]
    pub precision: Precision,
}

#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub enum Precision {
    /// float (StarPU's cholesky_implicit and lu_implicit_example_float).
    #[default]
    Single,
    Double,
}

impl Precision {
    pub fn bytes(self) -> u32 {
        match self {
            Precision::Single => 4,
            Precision::Double => 8,
        }
    }
}

/// Codelet symbols of the generators, as StarPU's examples name their performance models.
pub const CHOLESKY_CODELETS: [&str; 4] = [
    "chol_model_potrf",
    "chol_model_trsm",
    "chol_model_syrk",
    "chol_model_gemm",
];
/// LU's models carry the precision: `starpu_slu_lu_model_getrf` (float) or `starpu_dlu_...`.
pub fn lu_codelets(p: Precision) -> [String; 4] {
    let x = match p {
        Precision::Single => 's',
        Precision::Double => 'd',
    };
    ["getrf", "trsm_ll", "trsm_ru", "gemm"].map(|k| format!("starpu_{x}lu_lu_model_{k}"))
}
pub const QR_CODELETS: [&str; 4] = [
    "qr_model_geqrt",
    "qr_model_ormqr",
    "qr_model_tsqrt",
    "qr_model_tsmqr",
];

/// How the runtime schedules and what it knows of codelet times.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RuntimeSpec {
    #[serde(default)]
    pub scheduler: Scheduler,
    /// Tasks a GPU worker holds at once (STARPU_CUDA_PIPELINE).
    #[serde(default = "two")]
    pub cuda_pipeline: u32,
    /// dmda's weights of the finish-time and transfer terms (STARPU_SCHED_ALPHA, _BETA).
    #[serde(default = "one")]
    pub alpha: f64,
    #[serde(default = "one")]
    pub beta: f64,
    /// Codelet models given here (they win over a StarPU machine's files).
    #[serde(default, deserialize_with = "crate::unique::map")]
    pub models: std::collections::BTreeMap<String, CodeletModel>,
    /// The lowest and highest task priority the scheduler keeps (StarPU's STARPU_MIN_PRIO
    /// and STARPU_MAX_PRIO); unset, the policy decides ([`Scheduler::priority_range`]).
    #[serde(default)]
    pub min_priority: Option<i64>,
    #[serde(default)]
    pub max_priority: Option<i64>,
}

fn two() -> u32 {
    2
}
fn one() -> f64 {
    1.0
}

impl Default for RuntimeSpec {
    fn default() -> Self {
        RuntimeSpec {
            scheduler: Scheduler::default(),
            cuda_pipeline: 2,
            alpha: 1.0,
            beta: 1.0,
            models: Default::default(),
            min_priority: None,
            max_priority: None,
        }
    }
}

/// StarPU's scheduling policies (STARPU_SCHED).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Scheduler {
    Eager,
    Prio,
    Random,
    Ws,
    Lws,
    Dm,
    Dmda,
    Dmdar,
    /// dmda with priority-sorted queues, head pop.
    Dmdap,
    #[default]
    Dmdas,
    /// dmdas whose decision counts only the queued work that runs before the task.
    Dmdasd,
    /// Buckets per codelet; GPUs take the most accelerated kinds first, CPUs the least.
    Heteroprio,
}

impl Scheduler {
    /// The task priorities the policy keeps, given the ends the user set: StarPU caps every
    /// submitted task's priority into its context's range (`_starpu_task_submit`). A context
    /// starts at [0, 0] but for the ends set by STARPU_MIN_PRIO / STARPU_MAX_PRIO; prio, ws,
    /// lws, dmdap, dmdas and dmdasd widen an unset end to the whole `int` range, heteroprio
    /// widens the range to hold [0, 99], and eager, random, dm, dmda and dmdar leave it: under
    /// them the examples' priorities all become 0.
    pub fn priority_range(self, min: Option<i64>, max: Option<i64>) -> (i64, i64) {
        let (lo, hi) = (min.unwrap_or(0), max.unwrap_or(0));
        match self {
            Scheduler::Prio
            | Scheduler::Ws
            | Scheduler::Lws
            | Scheduler::Dmdap
            | Scheduler::Dmdas
            | Scheduler::Dmdasd => (
                min.unwrap_or(i32::MIN.into()),
                max.unwrap_or(i32::MAX.into()),
            ),
            Scheduler::Heteroprio => (lo.min(0), hi.max(99)),
            Scheduler::Eager
            | Scheduler::Random
            | Scheduler::Dm
            | Scheduler::Dmda
            | Scheduler::Dmdar => (lo, hi),
        }
    }
}

/// A codelet's time on each kind of worker; a kind without a model cannot run it.
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct CodeletModel {
    #[serde(default)]
    pub cpu: Option<TimeModel>,
    #[serde(default)]
    pub cuda: Option<TimeModel>,
    /// The CUDA implementation is synchronous (a StarPU codelet without
    /// `STARPU_CUDA_ASYNC`): the GPU's driver runs it itself and, from its pop to its end,
    /// pops nothing more and submits no copy.
    #[serde(default)]
    pub cuda_sync: bool,
}

/// StarPU's model kinds. Regression coefficients take the size in bytes and give
/// microseconds, as StarPU's files do.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub enum TimeModel {
    Constant(crate::units::Duration),
    /// Mean and standard deviation (sampled only with the switch `perfmodel_noise`).
    Normal {
        mean: crate::units::Duration,
        stddev: crate::units::Duration,
    },
    /// Mean time per size: the entry of the nearest size (a history table).
    Histogram(Vec<(Bytes, crate::units::Duration)>),
    /// a * size^b (us).
    Power {
        a: f64,
        b: f64,
    },
    /// a * size^b + c (us).
    PowerPlus {
        a: f64,
        b: f64,
        c: f64,
    },
}

#[cfg(test)]
mod tests {
    use super::Scheduler::*;

    #[test]
    fn each_policy_keeps_starpus_priority_range() {
        // StarPU 1.4.10: a context starts at [0, 0] (sched_ctx.c); dmdas, prio, ws... set
        // [INT_MIN, INT_MAX] where unset (initialize_dmda_sorted_policy,
        // initialize_ws_policy...); heteroprio raises the max to 99 and the min to 0 at most;
        // eager, random, dm, dmda and dmdar set nothing. StarPU-SimGrid's log of
        // lu_implicit under eager, dmda and dmdar shows every task at priority 0.
        let int = (i64::from(i32::MIN), i64::from(i32::MAX));
        for s in [Prio, Ws, Lws, Dmdap, Dmdas, Dmdasd] {
            assert_eq!(s.priority_range(None, None), int, "{s:?}");
            assert_eq!(s.priority_range(Some(-3), None), (-3, int.1), "{s:?}");
        }
        for s in [Eager, Random, Dm, Dmda, Dmdar] {
            assert_eq!(s.priority_range(None, None), (0, 0), "{s:?}");
            assert_eq!(s.priority_range(Some(-5), Some(5)), (-5, 5), "{s:?}");
        }
        assert_eq!(Heteroprio.priority_range(None, None), (0, 99));
        assert_eq!(Heteroprio.priority_range(Some(4), Some(200)), (0, 200));
    }
}
