//! The CUDA workload schema: one host thread per GPU enqueues kernels, copies, events and NCCL
//! collectives on the GPU's streams, as a CUDA program does; NCCL's tunables.

use serde::{Deserialize, Serialize};

use crate::units::{Bytes, Duration};

/// GPUs driven by host programs (one process per GPU, the same program on each: SPMD).
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct CudaSpec {
    /// How many GPUs take part: the first ones of the platform, node by node (default all).
    #[serde(default)]
    pub gpus: Option<u32>,
    /// Host time of each call that enqueues work (cudaLaunchKernel, cudaMemcpyAsync,
    /// ncclAllReduce, cudaGraphLaunch): a few microseconds on current systems.
    #[serde(default = "default_launch")]
    pub launch_overhead: Duration,
    /// Copies a GPU runs at once (its copy engines); more wait in order.
    #[serde(default = "two")]
    pub copy_engines: u32,
    #[serde(default)]
    pub nccl: NcclSpec,
    pub program: Vec<CudaOp>,
    /// Run the program this many times.
    #[serde(default = "one")]
    pub repeat: u32,
}

impl CudaSpec {
    /// A program on every GPU with the schema's defaults for everything else.
    pub fn new(program: Vec<CudaOp>) -> Self {
        CudaSpec {
            gpus: None,
            launch_overhead: default_launch(),
            copy_engines: two(),
            nccl: NcclSpec::default(),
            program,
            repeat: one(),
        }
    }
}

fn default_launch() -> Duration {
    Duration(crate::SimTime::from_nanos(4000))
}

fn two() -> u32 {
    2
}

fn one() -> u32 {
    1
}

/// One host call. Streams are numbered per GPU from 0; events are named per GPU.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub enum CudaOp {
    /// A kernel: its duration, or its work against the GPU's peak (flops and memory bytes,
    /// whichever takes longer: a roofline).
    Kernel(Kernel),
    /// An asynchronous copy over the platform's links.
    Copy(Copy),
    /// cudaEventRecord: the event completes when the stream reaches it.
    Record { stream: u32, event: String },
    /// cudaStreamWaitEvent: the stream waits for the event's last record before going on.
    Wait { stream: u32, event: String },
    /// cudaStreamSynchronize: the host waits until the stream is empty.
    StreamSync(u32),
    /// cudaDeviceSynchronize: the host waits until every stream is empty.
    DeviceSync,
    /// Host computation (the host thread is busy, streams go on).
    Host(Duration),
    /// An NCCL collective over every GPU of the workload.
    Nccl(NcclCall),
    /// ncclGroupStart .. ncclGroupEnd: the calls run as one kernel.
    Group { stream: u32, calls: Vec<NcclCall> },
    /// Stream capture into a CUDA graph (cudaStreamBeginCapture .. EndCapture and
    /// instantiate): nothing runs; the ops are recorded in order.
    Capture { graph: String, ops: Vec<CudaOp> },
    /// cudaGraphLaunch, `times` times: one launch overhead each, the graph's ops in order on
    /// the stream.
    Launch {
        stream: u32,
        graph: String,
        #[serde(default = "one")]
        times: u32,
    },
    /// Notes the host time under a name (per GPU, in the report): a timer.
    Mark(String),
}

#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Kernel {
    #[serde(default)]
    pub stream: u32,
    #[serde(default = "kernel_name")]
    pub name: String,
    #[serde(default)]
    pub time: Option<Duration>,
    #[serde(default)]
    pub flops: Option<f64>,
    #[serde(default)]
    pub bytes: Option<Bytes>,
}

fn kernel_name() -> String {
    "kernel".into()
}

#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Copy {
    #[serde(default)]
    pub stream: u32,
    pub kind: CopyKind,
    pub bytes: Bytes,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub enum CopyKind {
    HostToDevice,
    DeviceToHost,
    /// To the GPU `offset` places further in the workload's GPU list (wrapping).
    Peer(i32),
}

/// One NCCL call.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct NcclCall {
    pub op: Coll,
    /// The user buffer: count x type size (the whole gathered buffer for AllGather and
    /// ReduceScatter, what each GPU sends in all for AllToAll, what each sends for SendRecv).
    pub bytes: Bytes,
    #[serde(default)]
    pub stream: u32,
    #[serde(default)]
    pub root: u32,
    /// SendRecv: each GPU sends to the one `peer` places further and receives from the one
    /// `peer` places before.
    #[serde(default = "one_i")]
    pub peer: i32,
}

fn one_i() -> i32 {
    1
}

/// A collective operation.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
pub enum Coll {
    AllReduce,
    Broadcast,
    Reduce,
    AllGather,
    ReduceScatter,
    AllToAll,
    SendRecv,
}

/// NCCL_ALGO values modelled.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
pub enum Algo {
    Ring,
    Tree,
    /// NVLink SHARP: the NVSwitch reduces and multicasts (one node, multicast-capable switch).
    NVLS,
    /// NVLS inside each node, a double binary tree across the nodes (AllReduce).
    NVLSTree,
    /// Parallel Aggregated Trees: log-scaling AllGather and ReduceScatter, one GPU per node.
    PAT,
    /// In-network reduction in the InfiniBand switches (SHARP), every GPU to its NIC.
    CollNetDirect,
    /// In-network reduction, a chain through the node's GPUs to one NIC.
    CollNetChain,
}

/// NCCL_PROTO values.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
pub enum Proto {
    LL,
    LL128,
    Simple,
}

/// NCCL's tunables.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct NcclSpec {
    /// Channels (NCCL_MIN/MAX_NCHANNELS); default: as NCCL's topology search would give.
    #[serde(default)]
    pub channels: Option<u32>,
    /// Forced algorithm (NCCL_ALGO); default: NCCL's cost model chooses.
    #[serde(default)]
    pub algo: Option<Algo>,
    /// Forced protocol (NCCL_PROTO).
    #[serde(default)]
    pub proto: Option<Proto>,
    /// Share of NVLink line rate NCCL's SM copies reach (128-byte payloads: about 20 of 25
    /// GB/s per NVLink, sjeaugey in nccl-tests #149).
    #[serde(default = "nvlink_efficiency")]
    pub nvlink_efficiency: f64,
    /// Share of a NIC's line rate NCCL reaches (about 24 of 25 GB/s per HDR NIC, nccl #412).
    #[serde(default = "net_efficiency")]
    pub net_efficiency: f64,
    /// Simple protocol buffer per channel and peer (NCCL_BUFFSIZE, 4 MiB), in NCCL_STEPS = 8
    /// steps: the pipeline's slice.
    #[serde(default = "buffsize")]
    pub buffsize: Bytes,
    /// The CPUs are AMD (NCCL's model charges 2 us of network overhead instead of 1).
    #[serde(default)]
    pub amd_cpu: bool,
    /// NVLS and NVLSTree where the NVSwitch multicasts (NCCL_NVLS_ENABLE, on by default).
    #[serde(default = "yes")]
    pub nvls: bool,
    /// PAT for AllGather and ReduceScatter at one GPU per node (NCCL_PAT_ENABLE, on).
    #[serde(default = "yes")]
    pub pat: bool,
    /// CollNet: in-network reduction in the InfiniBand switches (NCCL_COLLNET_ENABLE, off by
    /// default as in NCCL).
    #[serde(default)]
    pub collnet: bool,
    /// PXN: a transfer to a GPU on another rail goes over NVLink to the local GPU on that
    /// rail and leaves through its NIC (NCCL_PXN_DISABLE=0, on by default).
    #[serde(default = "yes")]
    pub pxn: bool,
}

fn yes() -> bool {
    true
}

fn nvlink_efficiency() -> f64 {
    0.8
}
fn net_efficiency() -> f64 {
    0.96
}
fn buffsize() -> Bytes {
    Bytes(4.0 * 1024.0 * 1024.0)
}

impl Default for NcclSpec {
    fn default() -> Self {
        NcclSpec {
            channels: None,
            algo: None,
            proto: None,
            nvlink_efficiency: nvlink_efficiency(),
            net_efficiency: net_efficiency(),
            buffsize: buffsize(),
            amd_cpu: false,
            nvls: true,
            pat: true,
            collnet: false,
            pxn: true,
        }
    }
}

impl Coll {
    pub fn name(self) -> &'static str {
        match self {
            Coll::AllReduce => "all_reduce",
            Coll::Broadcast => "broadcast",
            Coll::Reduce => "reduce",
            Coll::AllGather => "all_gather",
            Coll::ReduceScatter => "reduce_scatter",
            Coll::AllToAll => "alltoall",
            Coll::SendRecv => "sendrecv",
        }
    }

    /// Ring steps of the collective on `n` ranks (NCCL's tuning.cc).
    pub fn steps(self, n: u32) -> u32 {
        match self {
            Coll::AllReduce => 2 * (n - 1),
            Coll::AllGather | Coll::ReduceScatter => n - 1,
            _ => n,
        }
    }

    /// nccl-tests' bus bandwidth factor: busbw = algbw x factor.
    pub fn bus_factor(self, n: u32) -> f64 {
        let n = n as f64;
        match self {
            Coll::AllReduce => 2.0 * (n - 1.0) / n,
            Coll::AllGather | Coll::ReduceScatter | Coll::AllToAll => (n - 1.0) / n,
            Coll::Broadcast | Coll::Reduce | Coll::SendRecv => 1.0,
        }
    }
}

impl Algo {
    pub const ALL: [Algo; 7] = [
        Algo::Ring,
        Algo::Tree,
        Algo::NVLS,
        Algo::NVLSTree,
        Algo::PAT,
        Algo::CollNetDirect,
        Algo::CollNetChain,
    ];
    pub fn name(self) -> &'static str {
        match self {
            Algo::Ring => "ring",
            Algo::Tree => "tree",
            Algo::NVLS => "nvls",
            Algo::NVLSTree => "nvlstree",
            Algo::PAT => "pat",
            Algo::CollNetDirect => "collnetdirect",
            Algo::CollNetChain => "collnetchain",
        }
    }
}

impl Proto {
    pub const ALL: [Proto; 3] = [Proto::LL, Proto::LL128, Proto::Simple];
    pub fn name(self) -> &'static str {
        match self {
            Proto::LL => "LL",
            Proto::LL128 => "LL128",
            Proto::Simple => "Simple",
        }
    }
    /// Share of the bytes on the wire that are data: LL sends a 4-byte flag with every 4 bytes
    /// of data, LL128 8 bytes of flag per 128-byte line.
    pub fn wire_efficiency(self) -> f64 {
        match self {
            Proto::LL => 0.5,
            Proto::LL128 => 120.0 / 128.0,
            Proto::Simple => 1.0,
        }
    }
}
