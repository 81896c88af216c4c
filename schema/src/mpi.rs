//! The MPI workload schema: ranks on GPUs, their programs, and the point-to-point protocol.

use serde::{Deserialize, Serialize};

use crate::units::{Bytes, Duration, PerByte};

/// MPI ranks, one per GPU, running programs from a trace.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct MpiSpec {
    pub ranks: u32,
    #[serde(default)]
    pub placement: Placement,
    /// GPUs used per node, hence ranks per node (default: every GPU of a node).
    #[serde(default)]
    pub gpus_per_node: Option<u32>,
    pub program: ProgramSpec,
    /// The speed of a trace's `compute` actions (flops), e.g. `"1Gf"` to replay a SimGrid TI
    /// trace as SMPI does at `smpi/host-speed:1Gf` (default: each rank's GPU peak).
    #[serde(default)]
    pub compute_speed: Option<crate::units::FlopRate>,
    /// Where a trace's point-to-point buffers are when its lines do not say (`host` or
    /// `device` at the end of a line): on the GPU by default; `Host` for traces of CPU
    /// programs, such as SMPI's.
    #[serde(default)]
    pub buffers: Buffers,
    #[serde(default)]
    pub protocol: ProtocolSpec,
    #[serde(default)]
    pub collectives: CollectiveSpec,
    /// NCCL's tunables, for programs that call NCCL (`nccl_allreduce` ...).
    #[serde(default)]
    pub nccl: crate::cuda::NcclSpec,
}

/// How collectives pick their algorithm, and what reductions cost.
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct CollectiveSpec {
    #[serde(default)]
    pub select: Select,
    /// Algorithm forced per collective, e.g. `{"allreduce": "ring", "bcast": "binomial"}`
    /// (`hetsim systems` lists the names).
    #[serde(default, deserialize_with = "crate::unique::map")]
    pub force: std::collections::BTreeMap<String, String>,
    /// Time to reduce one byte (a sum of doubles on the GPU), on top of a trace's flops.
    #[serde(default)]
    pub reduce_cost: PerByte,
    /// Where collective buffers live: on the ranks' GPUs (CUDA-aware MPI) or in host memory.
    #[serde(default)]
    pub buffers: Buffers,
}

/// Where a collective's buffers live.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub enum Buffers {
    /// On each rank's GPU: messages take the NVLink, GPUDirect or HostCopy path.
    #[default]
    Device,
    /// In host memory: messages go host to host.
    Host,
}

/// Which library's choices collectives follow.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub enum Select {
    /// MPICH 3.4's default size and process-count thresholds.
    #[default]
    Mpich,
    /// TraceR's: binary trees for bcast, reduce, allreduce and barrier; Bruck or pairwise
    /// alltoall at 512 B; Bruck or ring allgather at 160 KiB in total.
    Tracer,
}

/// Which GPU each rank owns.
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
pub enum Placement {
    /// Ranks fill a node's GPUs before the next node (rank r on node r / ranks_per_node).
    #[default]
    Linear,
    /// Rank r on node r mod nodes_in_use.
    RoundRobin,
    /// One GPU endpoint per rank, e.g. `["node[0].gpu[0]", "node[3].gpu[1]"]`.
    Explicit(Vec<String>),
}

/// The most nearly equal factorisation of `n` into `d` factors, largest first (as
/// MPI_Dims_create does).
pub fn dims_create(n: u32, d: usize) -> Vec<u32> {
    let mut dims = vec![1u32; d];
    let mut factors = Vec::new();
    let (mut m, mut f) = (n, 2);
    while m > 1 {
        while m.is_multiple_of(f) {
            factors.push(f);
            m /= f;
        }
        f += 1;
        if f * f > m && m > 1 {
            factors.push(m);
            break;
        }
    }
    for f in factors.into_iter().rev() {
        let smallest = (0..d).min_by_key(|&i| dims[i]).expect("d > 0");
        dims[smallest] *= f;
    }
    dims.sort_unstable_by(|a, b| b.cmp(a));
    dims
}

/// Where the rank programs come from.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub enum ProgramSpec {
    /// SimGrid time-independent trace files (one for all ranks, or one per rank), relative to
    /// the scenario file; the loader reads them into `TraceText`.
    Trace(Vec<String>),
    /// Trace text inline (what `Trace` files become once read): `(label, text)` pairs.
    TraceText(Vec<(String, String)>),
    /// A synthetic application with the message profile of a known code.
    Generator(Generator),
    /// An OTF2 archive (Score-P), replayed with TraceR's semantics: `Otf2("traces.otf2")` or
    /// `Otf2(path: "traces.otf2", compute_scale: 0.5, buffers: (...))`.
    Otf2(Box<Otf2Program>),
}

/// An OTF2 archive as a rank program, and how to read it.
#[derive(Debug, Clone, Serialize)]
pub struct Otf2Program {
    /// The anchor file (`traces.otf2`), relative to the scenario file.
    pub path: String,
    /// Compute times of the trace are multiplied by this (0.5: processors twice as fast).
    pub compute_scale: f64,
    /// Which point-to-point messages use GPU buffers.
    pub buffers: GpuBuffers,
}

/// Where the buffers of an OTF2 trace's point-to-point calls live (so GPUDirect applies or
/// not). The most specific rule wins: the record's attribute, then its region (MPI call),
/// then its communicator, then the workload's `buffers` (GPU unless it says `Host`).
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct GpuBuffers {
    /// By communicator name (`"MPI_COMM_WORLD"`, `"Comm 3"` ...).
    #[serde(default, deserialize_with = "crate::unique::map")]
    pub comms: std::collections::BTreeMap<String, Buffers>,
    /// By the MPI call's region name (`"MPI_Isend"` ...).
    #[serde(default, deserialize_with = "crate::unique::map")]
    pub regions: std::collections::BTreeMap<String, Buffers>,
    /// An OTF2 attribute on the message record: integer 1 (or any nonzero) is GPU memory, 0
    /// host memory. A tool writes it with the OTF2 writer as an attribute of this name.
    #[serde(default = "gpu_attribute")]
    pub attribute: String,
}

/// The OTF2 attribute hetsim reads a buffer's location from.
pub const GPU_ATTRIBUTE: &str = "hetsim::gpu_buffer";

fn gpu_attribute() -> String {
    GPU_ATTRIBUTE.to_string()
}

impl Default for GpuBuffers {
    fn default() -> Self {
        GpuBuffers {
            comms: Default::default(),
            regions: Default::default(),
            attribute: gpu_attribute(),
        }
    }
}

impl Otf2Program {
    /// The archive at `path` as it is: compute unscaled, no buffer rules.
    pub fn at(path: impl Into<String>) -> Otf2Program {
        Otf2Program {
            path: path.into(),
            compute_scale: 1.0,
            buffers: GpuBuffers::default(),
        }
    }
}

impl<'de> Deserialize<'de> for Otf2Program {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        #[derive(Deserialize)]
        #[serde(deny_unknown_fields)]
        struct Full {
            path: String,
            #[serde(default = "one")]
            compute_scale: f64,
            #[serde(default)]
            buffers: GpuBuffers,
        }
        fn one() -> f64 {
            1.0
        }
        #[derive(Deserialize)]
        #[serde(untagged)]
        enum Form {
            Path(String),
            Full(Full),
        }
        let full = match Form::deserialize(d)? {
            Form::Path(path) => return Ok(Otf2Program::at(path)),
            Form::Full(f) => f,
        };
        if !(full.compute_scale.is_finite() && full.compute_scale >= 0.0) {
            return Err(serde::de::Error::custom(format!(
                "compute_scale: expected a finite factor of zero or more, got {}",
                full.compute_scale
            )));
        }
        Ok(Otf2Program {
            path: full.path,
            compute_scale: full.compute_scale,
            buffers: full.buffers,
        })
    }
}

/// Synthetic applications after the four of the TraceR-CODES GPUDirect study, shaped by the
/// workload facts the study reports (`tests/data/mpi-apps.md`): message sizes and counts,
/// partners and collectives per iteration. `compute` (the GPU kernel time per iteration) sets
/// the communication share; the shipped scenarios set it so that the MPI share under HostCopy
/// on Lassen lands in the range measured on Lassen. Ranks form the most nearly cubic (3-D) or
/// square (2-D) grid, as MPI_Dims_create does; boundaries are not periodic.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub enum Generator {
    /// LULESH-like: a domain of `side`^3 elements per rank (LULESH's `-s`) and LULESH's three
    /// exchanges per iteration, each after a third of `compute`: the nodal forces (3 fields)
    /// and the nodal positions and velocities (6 fields) with up to 26 neighbours (faces of
    /// (side+1)^2 nodes, edges of side+1, corners of 1), and the element gradients of the
    /// monotonic Q (3 fields, side^2 elements) with the 6 face neighbours; then an 8-byte
    /// allreduce (the time step). 8-byte values.
    Halo3d {
        iterations: u32,
        #[serde(default = "lulesh_side")]
        side: u32,
        compute: Duration,
    },
    /// Minisweep-like: a KBA wavefront sweep over a 2-D grid, four sweeps (one per corner)
    /// per iteration, each in `blocks` pipelined blocks: receive from upstream, compute, send
    /// downstream.
    Sweep {
        iterations: u32,
        #[serde(default = "mb4")]
        bytes: Bytes,
        #[serde(default = "one")]
        blocks: u32,
        compute: Duration,
    },
    /// SW4lite-like: a 2-D stencil exchanging, per iteration, one large message (the
    /// solution's ghost planes) and `small_exchanges` rounds of small ones with each of its
    /// 4 neighbours, then computing.
    Stencil {
        iterations: u32,
        #[serde(default = "sw4_large")]
        large: Bytes,
        #[serde(default = "kb64")]
        small: Bytes,
        #[serde(default = "one")]
        small_exchanges: u32,
        compute: Duration,
    },
    /// AmgX-like: one preconditioned Krylov iteration with a multigrid V-cycle of `levels`
    /// levels over a 4-neighbour 2-D grid. Down the cycle each level smooths (one exchange,
    /// then its share of `compute`), up the cycle each level but the coarsest smooths again;
    /// the messages start at `largest` and divide by `coarsening` per coarser level, and the
    /// work by `coarsening`^1.5 (a 3-D volume behind a 2-D face). Then `allreduces` 8-byte
    /// allreduces (the Krylov dot products).
    Solver {
        iterations: u32,
        #[serde(default = "kb600")]
        largest: Bytes,
        #[serde(default = "two")]
        coarsening: f64,
        #[serde(default = "eleven")]
        levels: u32,
        #[serde(default = "two_u32")]
        allreduces: u32,
        compute: Duration,
    },
    /// An all-to-all bound code (FFT transposes, embedding exchanges): per iteration
    /// `compute`, then an MPI_Alltoall of `bytes` to each other rank.
    Alltoall {
        iterations: u32,
        bytes: Bytes,
        compute: Duration,
    },
    /// Data-parallel training: per iteration (a step) `compute` (forward and backward), then
    /// an NCCL AllReduce of the `gradients` over every rank's GPU.
    Training {
        iterations: u32,
        gradients: Bytes,
        compute: Duration,
    },
}

fn one() -> u32 {
    1
}
fn two_u32() -> u32 {
    2
}
fn eleven() -> u32 {
    11
}
fn two() -> f64 {
    2.0
}
/// The study's LULESH mesh, 144^3 elements per rank.
fn lulesh_side() -> u32 {
    144
}
fn kb64() -> Bytes {
    Bytes(64e3)
}
fn kb600() -> Bytes {
    Bytes(600e3)
}
fn mb4() -> Bytes {
    Bytes(4e6)
}
/// The top of SW4lite's large message class in the study (680 KB to 11.5 MB).
fn sw4_large() -> Bytes {
    Bytes(11.5e6)
}

/// The point-to-point protocol's figures (defaults: the TraceR-CODES GPU extension's Table I).
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ProtocolSpec {
    /// Messages up to this size go eagerly; larger ones by rendezvous.
    #[serde(default = "default_eager_limit")]
    pub eager_limit: Bytes,
    /// Fixed cost of a device<->host copy (cudaMemcpy latency).
    #[serde(default = "default_gpu_copy_delay")]
    pub gpu_copy_delay: Duration,
    #[serde(default = "default_gpu_copy_per_byte")]
    pub gpu_copy_per_byte: PerByte,
    /// Pinning cost before a GPUDirect transfer.
    #[serde(default = "default_gpudirect_delay")]
    pub gpudirect_delay: Duration,
    /// Which side pays the HostCopy copies.
    #[serde(default)]
    pub copy_at: CopyAt,
    /// Size of a control message (RTS, CTS).
    #[serde(default = "default_control_size")]
    pub control_size: Bytes,
    /// Software overhead of each MPI call (TraceR's soft_delay: 100-200 ns), counted as
    /// communication time.
    #[serde(default)]
    pub call_overhead: Duration,
    /// Intra-node GPU-to-GPU transfers in flight at once per node (TraceR's node_copy_queues);
    /// more wait their turn.
    #[serde(default = "default_copy_queues")]
    pub copy_queues: u32,
    /// Eager buffers a receiver keeps for each sender (per-peer credits): an eager message
    /// holds one from the start of its data phase until its receive completes; a sender out
    /// of credits queues its eager data until one returns. Default 64, Open MPI's per-peer
    /// receive queue for 64 KiB eager buffers (`receive_queues = P,65536,64`).
    #[serde(default = "default_eager_credits")]
    pub eager_credits: u32,
}

fn default_eager_credits() -> u32 {
    64
}

fn default_copy_queues() -> u32 {
    4
}

/// Which side of a HostCopy message pays device<->host copies.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub enum CopyAt {
    /// Device-to-host at the sender and host-to-device at the receiver.
    #[default]
    Both,
    /// Only at the sender, as TraceR charges it.
    Sender,
}

fn default_eager_limit() -> Bytes {
    Bytes(64000.0)
}
fn default_gpu_copy_delay() -> Duration {
    Duration(crate::SimTime::from_nanos(2000))
}
fn default_gpu_copy_per_byte() -> PerByte {
    PerByte(0.07e-9)
}
fn default_gpudirect_delay() -> Duration {
    Duration(crate::SimTime::from_nanos(4000))
}
fn default_control_size() -> Bytes {
    Bytes(16.0)
}

impl Default for ProtocolSpec {
    fn default() -> Self {
        ProtocolSpec {
            eager_limit: default_eager_limit(),
            gpu_copy_delay: default_gpu_copy_delay(),
            gpu_copy_per_byte: default_gpu_copy_per_byte(),
            gpudirect_delay: default_gpudirect_delay(),
            copy_at: CopyAt::Both,
            control_size: default_control_size(),
            call_overhead: Duration::default(),
            copy_queues: default_copy_queues(),
            eager_credits: default_eager_credits(),
        }
    }
}

impl Generator {
    /// The variant's name, as written in a scenario.
    pub fn name(&self) -> &'static str {
        match self {
            Generator::Halo3d { .. } => "Halo3d",
            Generator::Sweep { .. } => "Sweep",
            Generator::Stencil { .. } => "Stencil",
            Generator::Solver { .. } => "Solver",
            Generator::Alltoall { .. } => "Alltoall",
            Generator::Training { .. } => "Training",
        }
    }

    /// The iteration count.
    pub fn iterations(&self) -> u32 {
        match self {
            Generator::Halo3d { iterations, .. }
            | Generator::Sweep { iterations, .. }
            | Generator::Stencil { iterations, .. }
            | Generator::Solver { iterations, .. }
            | Generator::Alltoall { iterations, .. }
            | Generator::Training { iterations, .. } => *iterations,
        }
    }

    /// Point-to-point messages of one iteration over all `p` ranks, and the allreduces each
    /// rank calls: counted from the grid the generator builds (non-periodic, so a rank at an
    /// edge has fewer neighbours). Summed over a grid, each axis of length d contributes
    /// d + 2(d - 1) own-or-neighbour positions: the 26-neighbour stencil has
    /// prod(3d - 2) - p pairs, the face-neighbour one sum over axes of 2(d - 1) p / d.
    pub fn messages_per_iteration(&self, p: u32) -> (f64, u32) {
        let faces = |dims: &[u32]| -> f64 {
            dims.iter()
                .map(|&d| 2.0 * (d as f64 - 1.0) * p as f64 / d as f64)
                .sum()
        };
        match self {
            Generator::Halo3d { .. } => {
                // Forces and positions with every neighbour, gradients with the faces.
                let dims = dims_create(p, 3);
                let boxes: f64 = dims.iter().map(|&d| 3.0 * d as f64 - 2.0).product();
                (2.0 * (boxes - p as f64) + faces(&dims), 1)
            }
            Generator::Sweep { blocks, .. } => {
                // Four sweeps, each sending downstream along both axes once per block.
                (4.0 * *blocks as f64 * faces(&dims_create(p, 2)) / 2.0, 0)
            }
            Generator::Stencil {
                small_exchanges, ..
            } => (
                (1.0 + *small_exchanges as f64) * faces(&dims_create(p, 2)),
                0,
            ),
            Generator::Solver {
                levels, allreduces, ..
            } => (
                (2 * *levels as u64).saturating_sub(1) as f64 * faces(&dims_create(p, 2)),
                *allreduces,
            ),
            // Pairwise exchange: every rank sends to every other one.
            Generator::Alltoall { .. } => (p as f64 * (p as f64 - 1.0), 0),
            // NCCL's transfers are not MPI messages.
            Generator::Training { .. } => (0.0, 0),
        }
    }
}
