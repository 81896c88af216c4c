//! The scenario schema: what a RON scenario file may say.
//!
//! Every struct denies unknown fields, so a typo is an error with its path, never ignored.
//! Quantities accept units (see [`crate::units`]). The loader that reads files, resolves
//! platform includes and applies `--set` overrides is in [`crate::load`].

use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

use crate::units::{Bandwidth, Bytes, Duration, FlopRate};

/// One simulation: a platform, what runs on it, and how.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Scenario {
    pub name: String,
    #[serde(default)]
    pub seed: u64,
    pub platform: PlatformSpec,
    /// What runs on the whole machine; absent when `jobs` says it.
    #[serde(default = "no_workload", skip_serializing_if = "Workload::is_none")]
    pub workload: Workload,
    /// Several jobs, each on nodes of its own, sharing the fabric (instead of `workload`).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub jobs: Vec<crate::jobs::JobSpec>,
    /// Model components switched on (`true`) or off (`false`); see `hetsim systems`.
    #[serde(default, deserialize_with = "crate::unique::map")]
    pub switches: BTreeMap<String, bool>,
    #[serde(default)]
    pub output: OutputSpec,
    #[serde(default)]
    pub limits: Limits,
    /// The task runtime's settings (task-graph workloads).
    #[serde(default)]
    pub runtime: crate::tasks::RuntimeSpec,
    /// Settings of the network model (the machine itself is in `platform`).
    #[serde(default)]
    pub network_model: NetworkModel,
}

fn no_workload() -> Workload {
    Workload::Mix(Vec::new())
}

impl Scenario {
    /// Every workload that runs with its field path: the scenario's own
    /// ([`Workload::parts`]) and each job's (`jobs[1].workload.Mpi`).
    pub fn parts(&self) -> Vec<(String, &Workload)> {
        let mut out = self.workload.parts();
        for (i, job) in self.jobs.iter().enumerate() {
            out.extend(job_parts(i, job.workload.parts()));
        }
        out
    }

    /// [`Scenario::parts`], to be changed in place.
    pub fn parts_mut(&mut self) -> Vec<(String, &mut Workload)> {
        let mut out = self.workload.parts_mut();
        for (i, job) in self.jobs.iter_mut().enumerate() {
            out.extend(job_parts(i, job.workload.parts_mut()));
        }
        out
    }
}

fn job_parts<T>(i: usize, parts: Vec<(String, T)>) -> impl Iterator<Item = (String, T)> {
    parts
        .into_iter()
        .map(move |(path, w)| (format!("jobs[{i}].{path}"), w))
}

/// How the network model trades exactness for speed.
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct NetworkModel {
    /// Re-share bandwidth at most once per this much simulated time: a flow whose latency is
    /// paid joins the sharing, and a flow whose last byte is through leaves it, at the next
    /// multiple of the quantum. `0` (the default) re-shares at every start and end, exactly.
    /// Each flow may thus start up to one quantum late and hold its share up to one quantum
    /// after its last byte; in exchange, starts and ends that fall in one quantum cost one
    /// re-solve instead of many.
    #[serde(default)]
    pub quantum: Duration,
}

/// The machine: included from a file, a cluster of identical nodes, or links listed by hand.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub enum PlatformSpec {
    /// A platform file, relative to the scenario file (`File("platforms/lassen.ron")`).
    File(String),
    /// A platform hetsim ships, by name (`Named("lassen")`): the files under
    /// `scenarios/platforms/`, built into the binary, so the scenario works from any folder.
    Named(String),
    Cluster(Box<Cluster>),
    Explicit(Explicit),
    /// A machine StarPU calibrated: its bus files and codelet models under `dir`
    /// (`dir/bus/<hostname>.*`, `dir/codelets/45/<symbol>.<hostname>`), relative to the
    /// scenario file.
    StarpuMachine(StarpuMachine),
}

/// A StarPU-calibrated machine and how much of it to use.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct StarpuMachine {
    pub dir: String,
    pub hostname: String,
    /// GPUs to use (STARPU_NCUDA; default all the platform file lists).
    #[serde(default)]
    pub ncuda: Option<u32>,
    /// CPU workers (STARPU_NCPU; default the CPUs left after one per GPU).
    #[serde(default)]
    pub ncpu: Option<u32>,
    /// Memory of each GPU StarPU may use, MB (STARPU_LIMIT_CUDA_MEM; default 90 % of the
    /// GPU's memory in whole MiB).
    #[serde(default)]
    pub limit_cuda_mem_mb: Option<f64>,
    /// The files, read by the loader (bus platform and matrices, codelet models) as
    /// (label, text) by name relative to `dir`.
    #[serde(skip)]
    pub files: BTreeMap<String, (String, String)>,
}

/// `nodes` copies of one node template joined by an inter-node network.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Cluster {
    pub nodes: u32,
    pub node: NodeSpec,
    pub network: Network,
}

/// What one node holds and how its parts are wired.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct NodeSpec {
    #[serde(default = "one")]
    pub cpu_cores: u32,
    #[serde(default = "default_host_memory")]
    pub host_memory: Bytes,
    #[serde(default)]
    pub gpus: u32,
    #[serde(default)]
    pub gpu: GpuSpec,
    #[serde(default)]
    pub pcie: PcieSpec,
    #[serde(default)]
    pub nvlink: Option<NvLinkSpec>,
    /// The NVSwitch reduces and multicasts (NVLink SHARP: third-generation NVSwitch and later,
    /// H100/H200/B200/GB200 systems); NCCL's NVLS algorithms need it. Only with `Switch`.
    #[serde(default)]
    pub multicast: bool,
    #[serde(default = "one")]
    pub nics: u32,
    #[serde(default)]
    pub nic: NicSpec,
}

fn one() -> u32 {
    1
}

fn default_host_memory() -> Bytes {
    Bytes(64.0 * 1024.0 * 1024.0 * 1024.0)
}

/// A GPU model.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct GpuSpec {
    pub name: String,
    pub memory: Bytes,
    /// Peak compute rate, e.g. `"15.7TFlop/s"`.
    pub speed: FlopRate,
    /// Device memory bandwidth (kernels given in bytes run at it).
    #[serde(default = "default_hbm")]
    pub memory_bandwidth: Bandwidth,
}

fn default_hbm() -> Bandwidth {
    // V100 SXM2 HBM2 (NVIDIA V100 datasheet).
    Bandwidth(900e9)
}

impl Default for GpuSpec {
    fn default() -> Self {
        // NVIDIA V100 SXM2 16 GB, double precision peak (NVIDIA V100 datasheet).
        GpuSpec {
            name: "V100".into(),
            memory: Bytes(16.0 * 1073741824.0),
            speed: FlopRate(7.8e12),
            memory_bandwidth: default_hbm(),
        }
    }
}

/// The PCIe model of the StarPU-SimGrid paper: per GPU an up link (host to GPU) and a down
/// link (GPU to host), plus one shared host link that every PCIe transfer crosses.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct PcieSpec {
    /// Host to GPU bandwidth of each GPU's own link.
    pub up: Bandwidth,
    /// GPU to host bandwidth of each GPU's own link.
    pub down: Bandwidth,
    /// The shared host link (root complex / memory bus) all transfers cross, both directions.
    pub bus: Bandwidth,
    pub latency: Duration,
    /// GPUs copy to each other directly over PCIe (CUDA peer access); false: a copy between
    /// two GPUs without NVLink goes through host memory (the task runtime's two hops).
    #[serde(default = "yes")]
    pub peer_access: bool,
}

impl Default for PcieSpec {
    fn default() -> Self {
        // PCIe 3.0 x16: 15.75 GB/s raw, about 12 GB/s achieved by cudaMemcpy.
        PcieSpec {
            up: Bandwidth(12e9),
            down: Bandwidth(12e9),
            bus: Bandwidth(24e9),
            latency: Duration(crate::SimTime::from_nanos(1000)),
            peer_access: true,
        }
    }
}

/// GPU-to-GPU links inside a node.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub enum NvLinkSpec {
    /// One link per GPU pair (each direction its own capacity).
    Pairs(LinkSpec),
    /// Every GPU has one link to an NVSwitch; GPU pairs cross two links.
    Switch(LinkSpec),
}

/// A network interface card.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct NicSpec {
    pub bandwidth: Bandwidth,
    pub latency: Duration,
    #[serde(default)]
    pub attach: NicAttach,
}

impl Default for NicSpec {
    fn default() -> Self {
        // InfiniBand EDR: 100 Gb/s.
        NicSpec {
            bandwidth: Bandwidth(12.5e9),
            latency: Duration(crate::SimTime::from_nanos(500)),
            attach: NicAttach::Host,
        }
    }
}

/// Where a NIC sits on the node's PCIe tree.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub enum NicAttach {
    /// On the host's root complex: its traffic crosses the shared PCIe host link.
    #[default]
    Host,
    /// Beside the GPUs (one PCIe switch per NIC): GPU traffic reaches it without the host link.
    GpuSwitch,
}

/// A link's figures.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct LinkSpec {
    pub bandwidth: Bandwidth,
    #[serde(default)]
    pub latency: Duration,
    #[serde(default)]
    pub sharing: Sharing,
}

/// How a link's capacity is shared between the flows crossing it.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub enum Sharing {
    /// One capacity for both directions.
    Shared,
    /// One capacity per direction (full duplex).
    #[default]
    SplitDuplex,
    /// No sharing: each flow may use the whole bandwidth.
    FatPipe,
}

/// The network between nodes.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub enum Network {
    /// Nodes are not connected (a single-node platform).
    None,
    /// Every NIC has one link to one central switch.
    Star(LinkSpec),
    FatTree(FatTreeSpec),
}

/// A k-level fat-tree (an extended generalized fat-tree, XGFT) with d-mod-k routing.
///
/// `children[0]` nodes hang under each leaf switch, `children[1]` leaves under each level-2
/// switch, and so on; the top level's count is the number of top subtrees. `taper[i]` is the
/// ratio of down links to up links of a level-(i+1) switch (1.5 for Lassen's 1.5:1): each
/// level-(i+1) switch has `round(children[i] / taper[i])` parents.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct FatTreeSpec {
    pub children: Vec<u32>,
    #[serde(default = "PerLevel::unit")]
    pub taper: PerLevel<f64>,
    /// Bandwidth of the links above level i (level 0: node to leaf).
    pub bandwidth: PerLevel<Bandwidth>,
    #[serde(default)]
    pub latency: PerLevel<Duration>,
    #[serde(default)]
    pub sharing: Sharing,
    /// Rail-optimised (the DGX SuperPOD way): NIC k of every node hangs under rail k's own
    /// leaf switches, so the tree's level-0 elements are NICs, not nodes; `children[0]` nodes
    /// share each rail's leaf. False: a node's NICs all hang under one leaf and the links
    /// above carry the node's rails lumped together.
    #[serde(default)]
    pub rails: bool,
}

/// One value for every level, or one value per level.
#[derive(Debug, Clone, Serialize)]
#[serde(untagged)]
pub enum PerLevel<T> {
    All(T),
    Each(Vec<T>),
}

/// A list is `Each`; anything else is one value read as `T`, so that `T`'s own error (a
/// negative latency, a bandwidth without a unit) reaches the user instead of "one value, or a
/// list".
impl<'de, T: Deserialize<'de>> Deserialize<'de> for PerLevel<T> {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        use serde::de::{self, IntoDeserializer, SeqAccess, Visitor};
        use std::marker::PhantomData;

        struct PerLevelVisitor<T>(PhantomData<T>);

        impl<'de, T: Deserialize<'de>> PerLevelVisitor<T> {
            fn one<E: de::Error, V: IntoDeserializer<'de, de::value::Error>>(
                v: V,
            ) -> Result<PerLevel<T>, E> {
                T::deserialize(v.into_deserializer())
                    .map(PerLevel::All)
                    .map_err(E::custom)
            }
        }

        impl<'de, T: Deserialize<'de>> Visitor<'de> for PerLevelVisitor<T> {
            type Value = PerLevel<T>;

            fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
                f.write_str("one value, or a list with one value per level")
            }

            fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Self::Value, A::Error> {
                let mut all = Vec::new();
                while let Some(v) = seq.next_element::<T>()? {
                    all.push(v);
                }
                Ok(PerLevel::Each(all))
            }

            fn visit_str<E: de::Error>(self, v: &str) -> Result<Self::Value, E> {
                Self::one(v.to_string())
            }

            fn visit_string<E: de::Error>(self, v: String) -> Result<Self::Value, E> {
                Self::one(v)
            }

            fn visit_f64<E: de::Error>(self, v: f64) -> Result<Self::Value, E> {
                Self::one(v)
            }

            fn visit_i64<E: de::Error>(self, v: i64) -> Result<Self::Value, E> {
                Self::one(v)
            }

            fn visit_u64<E: de::Error>(self, v: u64) -> Result<Self::Value, E> {
                Self::one(v)
            }
        }

        d.deserialize_any(PerLevelVisitor(PhantomData))
    }
}

impl<T: Default> Default for PerLevel<T> {
    fn default() -> Self {
        PerLevel::All(T::default())
    }
}

impl PerLevel<f64> {
    fn unit() -> Self {
        PerLevel::All(1.0)
    }
}

impl<T: Clone> PerLevel<T> {
    /// The value for level `i`, or `None` when a list is too short.
    pub fn get(&self, i: usize) -> Option<T> {
        match self {
            PerLevel::All(v) => Some(v.clone()),
            PerLevel::Each(vs) => vs.get(i).cloned(),
        }
    }
}

/// Links and routes listed by hand (also what `hetsim flows` builds from a flow case).
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Explicit {
    pub links: Vec<NamedLink>,
    #[serde(default)]
    pub routes: Vec<RouteSpec>,
}

#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct NamedLink {
    pub name: String,
    pub bandwidth: Bandwidth,
    #[serde(default)]
    pub latency: Duration,
    #[serde(default = "shared")]
    pub sharing: Sharing,
}

fn shared() -> Sharing {
    Sharing::Shared
}

/// A route between two named endpoints: link names, each optionally `NAME:up` or `NAME:down`.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RouteSpec {
    pub src: String,
    pub dst: String,
    pub links: Vec<String>,
    /// Also route `dst` to `src` over the same links in reverse, directions swapped.
    #[serde(default = "yes")]
    pub symmetric: bool,
}

fn yes() -> bool {
    true
}

/// What drives the run.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub enum Workload {
    /// Explicit transfers.
    Flows(Vec<FlowSpec>),
    /// MPI ranks on GPUs running rank programs.
    Mpi(crate::mpi::MpiSpec),
    /// Host programs driving CUDA streams and NCCL collectives, one per GPU.
    Cuda(crate::cuda::CudaSpec),
    /// Chakra execution traces (ASTRA-sim's workload format), one rank per GPU.
    Chakra(crate::chakra::ChakraSpec),
    /// Tiled Cholesky factorisation on the task runtime.
    Cholesky(crate::tasks::Tiled),
    /// Tiled LU factorisation (no pivoting) on the task runtime.
    Lu(crate::tasks::Tiled),
    /// Tiled QR factorisation on the task runtime.
    Qr(crate::tasks::Tiled),
    /// A task graph given by hand.
    Dag(crate::tasks::DagSpec),
    /// Several workloads at once on one platform, sharing its links: at most one of each kind
    /// (flows, MPI, CUDA, a task graph), none of them a `Mix`.
    Mix(Vec<Workload>),
}

impl Workload {
    /// The workloads that run, with their field paths (`workload.Mpi`, or
    /// `workload.Mix[1].Mpi` inside a mix).
    pub fn parts(&self) -> Vec<(String, &Workload)> {
        match self {
            Workload::Mix(parts) => parts
                .iter()
                .enumerate()
                .map(|(i, w)| (format!("workload.Mix[{i}].{}", w.kind()), w))
                .collect(),
            w => vec![(format!("workload.{}", w.kind()), w)],
        }
    }

    /// [`Workload::parts`], to be changed in place.
    pub fn parts_mut(&mut self) -> Vec<(String, &mut Workload)> {
        match self {
            Workload::Mix(parts) => parts
                .iter_mut()
                .enumerate()
                .map(|(i, w)| (format!("workload.Mix[{i}].{}", w.kind()), w))
                .collect(),
            w => vec![(format!("workload.{}", w.kind()), w)],
        }
    }

    /// An empty mix: no workload given (a scenario of `jobs`).
    pub fn is_none(&self) -> bool {
        matches!(self, Workload::Mix(parts) if parts.is_empty())
    }

    /// The variant's name as scenario files spell it.
    pub fn kind(&self) -> &'static str {
        match self {
            Workload::Flows(_) => "Flows",
            Workload::Mpi(_) => "Mpi",
            Workload::Cuda(_) => "Cuda",
            Workload::Chakra(_) => "Chakra",
            Workload::Cholesky(_) => "Cholesky",
            Workload::Lu(_) => "Lu",
            Workload::Qr(_) => "Qr",
            Workload::Dag(_) => "Dag",
            Workload::Mix(_) => "Mix",
        }
    }

    /// A task graph for the task runtime (Cholesky, LU, QR or a DAG).
    pub fn is_task_graph(&self) -> bool {
        matches!(
            self,
            Workload::Cholesky(_) | Workload::Lu(_) | Workload::Qr(_) | Workload::Dag(_)
        )
    }
}

/// One transfer: between two named endpoints (routed on the platform) or over listed links.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct FlowSpec {
    #[serde(default)]
    pub id: Option<String>,
    #[serde(default)]
    pub src: Option<String>,
    #[serde(default)]
    pub dst: Option<String>,
    /// Links to cross, as in [`RouteSpec::links`] (instead of `src`/`dst` routing).
    #[serde(default)]
    pub route: Option<Vec<String>>,
    pub size: Bytes,
    #[serde(default)]
    pub start: Duration,
}

/// Which output files to write (`summary.json` always).
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct OutputSpec {
    /// Where to write; `--out` wins; default `results/<scenario name>/`.
    #[serde(default)]
    pub dir: Option<String>,
    #[serde(default = "yes")]
    pub flows_csv: bool,
    #[serde(default = "yes")]
    pub links_csv: bool,
    /// `timeline.svg` and `timeline.png`: a Gantt chart, one row per resource.
    #[serde(default = "yes")]
    pub timeline: bool,
    /// `link_utilisation.svg` and `.png`: utilisation over time of the busiest links.
    #[serde(default = "yes")]
    pub link_plot: bool,
    /// `trace.json` in the Chrome trace-event format (Perfetto, chrome://tracing).
    #[serde(default = "yes")]
    pub trace_json: bool,
    /// `paje.trace` for ViTE.
    #[serde(default = "yes")]
    pub paje: bool,
    /// `intervals.csv`: every state interval, one row each.
    #[serde(default = "yes")]
    pub intervals_csv: bool,
    /// For a task runtime: StarPU's `tasks.rec`, `data.rec` and `dag.dot` (what
    /// `starpu_fxt_tool` writes, read by StarVZ and pmtool).
    #[serde(default = "yes")]
    pub starpu_traces: bool,
    /// For a task runtime: `runtime-log.txt`, one line per data event (request made, copy
    /// started, eviction, an eviction's write-back beginning and ending, push into a worker's
    /// queue, pop, task start, a fetch short of memory looking for a buffer to take over) in
    /// the format of the
    /// StarPU-SimGrid oracle's log (`tools/starpu-simgrid/xlog.patch`), to compare the two
    /// line by line. Off by default.
    #[serde(default)]
    pub runtime_log: bool,
    /// Width of the timeline pictures in pixels; what falls into one pixel column is aggregated.
    #[serde(default = "default_width")]
    pub width: u32,
}

fn default_width() -> u32 {
    1600
}

impl OutputSpec {
    /// The summary and the tables only: nothing that needs recording (studies, flow cases,
    /// `hetsim p2p` read summaries and need no timeline).
    pub fn tables_only() -> Self {
        OutputSpec {
            timeline: false,
            link_plot: false,
            trace_json: false,
            paje: false,
            intervals_csv: false,
            ..OutputSpec::default()
        }
    }

    /// Whether any requested output needs the recorder.
    pub fn needs_recording(&self) -> bool {
        self.timeline || self.link_plot || self.trace_json || self.paje || self.intervals_csv
    }
}

impl Default for OutputSpec {
    fn default() -> Self {
        OutputSpec {
            dir: None,
            flows_csv: true,
            links_csv: true,
            timeline: true,
            link_plot: true,
            trace_json: true,
            paje: true,
            intervals_csv: true,
            starpu_traces: true,
            runtime_log: false,
            width: default_width(),
        }
    }
}

/// Where a run stops even if work remains.
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Limits {
    /// Stop (with an error) when simulated time would pass this.
    #[serde(default)]
    pub max_time: Option<Duration>,
    /// Stop (with an error) after this many events.
    #[serde(default)]
    pub max_events: Option<u64>,
    /// Refuse (before building anything) a scenario whose estimated memory is larger
    /// (default: half of this machine's memory; see `budget.rs`).
    #[serde(default)]
    pub max_memory: Option<Bytes>,
    /// Refuse (before running) a scenario whose output files would be larger, as estimated
    /// (default 4 GiB; see `budget.rs`).
    #[serde(default)]
    pub max_output: Option<Bytes>,
}
