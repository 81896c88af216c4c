//! NCCL's own cost model (src/graph/tuning.cc and src/enqueue.cc of NCCL v2.30.7), which NCCL
//! uses to pick an algorithm and a protocol for each collective: predicted time in us =
//! latency + bytes / (1000 x algorithm bandwidth in GB/s). The tables are NCCL's constants as
//! ../shared/reference/notes/collectives-and-p2p.md section 2 quotes them.
//!
//! The simulator uses this model for two things only: choosing (algorithm, protocol) as NCCL
//! would, and the fixed latency of a collective. Its bandwidth comes from flows on the
//! platform, which see contention this model cannot.
//! Simplified: one pipelined op (numPipeOps = 1), balanced tree pattern, latencyInter 0.

pub use hetsim_schema::cuda::{Algo, Coll, Proto};

/// GPU generation: which row of NCCL's bandwidth tables applies.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Gen {
    Volta,
    Ampere,
    Hopper,
    Blackwell,
}

impl Gen {
    /// From a GPU model name (`"V100"`, `"A100-SXM4"`, `"H100"`, `"B200"`); unknown: Volta.
    pub fn of_model(name: &str) -> Gen {
        let n = name.to_ascii_uppercase();
        if n.starts_with('B') || n.starts_with("GB") {
            Gen::Blackwell
        } else if n.starts_with('H') {
            Gen::Hopper
        } else if n.starts_with('A') {
            Gen::Ampere
        } else {
            Gen::Volta
        }
    }
    fn idx(self) -> usize {
        self as usize
    }
    /// Compute capability 8.0 or newer (the ring "plateau" factor 1.4 instead of 1.9).
    fn sm80_or_newer(self) -> bool {
        self != Gen::Volta
    }
    /// Bandwidth NCCL's topology search assumes per NVLink (topo.h, GB/s): the per-channel
    /// speed the auto channel count aims at.
    pub fn nvlink_channel_bw(self) -> f64 {
        match self {
            Gen::Volta | Gen::Ampere => 20.0,
            Gen::Hopper => 20.6,
            Gen::Blackwell => 40.1,
        }
    }
    /// NVLS's efficiency in NCCL's model (nvlsEfficiency): 0.85 on Hopper, 0.74 on Blackwell,
    /// none before (no NVLink SHARP).
    pub fn nvls_efficiency(self) -> f64 {
        match self {
            Gen::Hopper => 0.85,
            Gen::Blackwell => 0.74,
            Gen::Volta | Gen::Ampere => 0.0,
        }
    }
    /// NVLS channels (nvlsChannels): 16 on SM90; on SM100 24 on one node, 32 across nodes.
    pub fn nvls_channels(self, nodes: u32) -> u32 {
        match (self, nodes) {
            (Gen::Blackwell, 0 | 1) => 24,
            (Gen::Blackwell, _) => 32,
            _ => 16,
        }
    }
    /// Fastest per-channel speed NCCL's search tries (search.cc speed lists, GB/s).
    pub fn max_channel_bw(self) -> f64 {
        match self {
            Gen::Volta | Gen::Ampere => 40.0,
            Gen::Hopper | Gen::Blackwell => 60.0,
        }
    }
}

/// What carries traffic between two GPUs.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Hw {
    NvLink,
    Pci,
    Net,
}

/// `baseLatencies[algo][proto]` in us, {LL, LL128, Simple}, algorithms in [`Algo`]'s order.
const BASE_LAT: [[f64; 3]; 7] = [
    [6.6, 14.0, 8.4], // ring
    [6.8, 14.0, 8.4], // tree
    [0.0, 0.0, 0.0],  // NVLS
    [0.0, 0.0, 0.0],  // NVLSTree
    [8.0, 8.0, 8.0],  // PAT
    [0.0, 0.0, 0.0],  // CollNetDirect
    [0.0, 0.0, 0.0],  // CollNetChain
];
/// `hwLatencies[hw][algo][proto]` in us.
const HW_LAT: [[[f64; 3]; 7]; 3] = [
    [
        [0.6, 1.9, 3.4],
        [0.6, 1.25, 4.0],
        [0.0, 0.0, 25.0],
        [0.0, 0.0, 25.0],
        [0.0, 0.0, 4.0],
        [0.0, 0.0, 3.7],
        [0.0, 0.0, 2.8],
    ], // NVLink
    [
        [1.0, 2.5, 5.7],
        [1.0, 1.9, 4.0],
        [0.0, 0.0, 0.0],
        [0.0, 0.0, 0.0],
        [0.0, 0.0, 4.0],
        [0.0, 0.0, 3.7],
        [0.0, 0.0, 2.8],
    ], // PCI
    [
        [2.7, 4.0, 14.0],
        [5.0, 8.5, 14.0],
        [0.0, 0.0, 18.0],
        [0.0, 0.0, 20.9],
        [0.0, 0.0, 14.0],
        [0.0, 0.0, 31.0],
        [0.0, 0.0, 30.0],
    ], // NET
];
fn hw_lat(hw: Hw, algo: Algo, p: Proto) -> f64 {
    HW_LAT[hw as usize][algo as usize][p as usize]
}

/// `llMaxBws[row][min(nodes,3)-1]`: the row is the GPU generation on one node, the CPU vendor
/// (0 Intel, 1 AMD) across nodes.
const LL_MAX_BW: [[f64; 3]; 4] = [
    [39.0, 39.0, 20.4],
    [87.7, 22.5, 19.0],
    [141.0, 45.0, 35.0],
    [282.0, 90.0, 70.0],
];
const PER_CH_MAX_RING_LL128_BW: [[f64; 3]; 4] = [
    [20.0, 20.0, 20.0],
    [20.0, 20.0, 20.0],
    [36.7, 36.7, 36.7],
    [40.0, 40.0, 40.0],
];
const PER_CH_MAX_TREE_LL128_BW: [[f64; 3]; 4] = [
    [20.0, 20.0, 20.0],
    [20.0, 20.0, 20.0],
    [36.7, 36.7, 29.0],
    [55.6, 31.67, 20.0],
];
const PER_CH_MAX_TREE_BW: [[f64; 3]; 4] = [
    [26.5, 18.5, 10.0],
    [24.0, 23.6, 17.8],
    [38.7, 41.4, 36.0],
    [70.0, 42.8, 24.0],
];
/// `perChMaxNVLSTreeBws`: an NVLSTree channel's most, GB/s.
const PER_CH_MAX_NVLS_TREE_BW: [[f64; 3]; 4] = [
    [26.5, 18.5, 10.0],
    [24.0, 23.6, 17.8],
    [0.0, 57.7, 45.5],
    [0.0, 96.0, 80.0],
];
/// PAT reaches 0.75 of the bandwidth its graph gives (NCCL's model).
pub const PAT_EFFICIENCY: f64 = 0.75;

/// Tree AllReduce bandwidth correction by size: index floor(log2(bytes >> 6)).
const TREE_CORRECTION: [[f64; 23]; 3] = [
    [
        1.0, 1.0, 1.0, 1.0, 0.9, 0.8, 0.7, 0.7, 0.7, 0.7, 0.6, 0.5, 0.4, 0.4, 0.5, 0.6, 0.7, 0.8,
        0.9, 1.0, 1.0, 1.0, 1.0,
    ],
    [
        1.0, 1.0, 1.0, 1.0, 1.0, 0.9, 0.8, 0.8, 0.8, 0.7, 0.6, 0.6, 0.6, 0.6, 0.6, 0.6, 0.8, 0.9,
        0.9, 0.9, 0.9, 1.0, 1.0,
    ],
    [
        0.9, 0.9, 0.9, 0.9, 0.9, 0.9, 0.9, 0.8, 0.7, 0.6, 0.6, 0.5, 0.5, 0.5, 0.5, 0.6, 0.7, 0.8,
        0.7, 0.7, 0.8, 0.9, 0.9,
    ],
];

/// What NCCL's model knows of a communicator: its shape.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Shape {
    pub ranks: u32,
    pub nodes: u32,
    pub channels: u32,
    /// Per-channel bandwidth inside a node and between nodes, GB/s (the graphs' bwIntra and
    /// bwInter).
    pub bw_intra: f64,
    pub bw_inter: f64,
    pub generation: Gen,
    /// NVLink or PCI between the GPUs of a node.
    pub intra_hw: Hw,
    pub amd_cpu: bool,
    /// LL128 is enabled (NCCL enables it where 128-byte stores stay whole: NVLink paths).
    pub ll128: bool,
    /// The algorithms beyond ring and tree this communicator can run.
    pub more: Features,
}

/// What a communicator has beyond rings and trees: NVLS's graph where the NVSwitch
/// multicasts, CollNet's where the switches reduce, PAT at one GPU per node.
#[derive(Debug, Clone, Copy, PartialEq, Default)]
pub struct Features {
    pub nvls: Option<Graph>,
    pub collnet: Option<Graph>,
    pub pat: bool,
}

/// An algorithm's own channels and per-channel bandwidths (GB/s), as NCCL's search finds them.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Graph {
    pub channels: u32,
    pub bw_intra: f64,
    pub bw_inter: f64,
}

impl Shape {
    fn per_node(&self) -> u32 {
        (self.ranks / self.nodes.max(1)).max(1)
    }
    fn col(&self) -> usize {
        (self.nodes.clamp(1, 3) - 1) as usize
    }
    fn ll_max_bw(&self) -> f64 {
        let row = if self.nodes <= 1 {
            self.generation.idx()
        } else {
            usize::from(self.amd_cpu)
        };
        LL_MAX_BW[row][self.col()]
    }
    /// NCCL_NET_OVERHEAD: CPU cost per network step, x3 for Simple; 0 on one node.
    fn net_overhead(&self, p: Proto) -> f64 {
        if self.nodes <= 1 {
            return 0.0;
        }
        let o = if self.amd_cpu { 2.0 } else { 1.0 };
        if p == Proto::Simple { 3.0 * o } else { o }
    }
}

/// Whether NCCL runs `coll` with `algo` at all on `c` (tuning.cc's enables): NVLS on one
/// node whose switch multicasts (across nodes only with CollNet), NVLSTree across such nodes, PAT for AllGather and
/// ReduceScatter at one GPU per node, CollNet for AllReduce across nodes where enabled.
pub fn supported(coll: Coll, algo: Algo, c: &Shape) -> bool {
    if !algorithms(coll).contains(&algo) {
        return false;
    }
    match algo {
        Algo::Ring | Algo::Tree => true,
        // Across nodes NVLS reduces in the network switches too (CollNet+NVLS).
        Algo::NVLS if c.nodes > 1 => {
            c.more.nvls.is_some() && c.more.collnet.is_some() && coll == Coll::AllReduce
        }
        Algo::NVLS => c.more.nvls.is_some(),
        Algo::NVLSTree => c.more.nvls.is_some() && c.nodes > 1,
        Algo::PAT => c.more.pat && c.nodes > 1 && c.ranks == c.nodes,
        Algo::CollNetDirect | Algo::CollNetChain => {
            c.more.collnet.is_some() && c.nodes > 1 && coll == Coll::AllReduce
        }
    }
}

/// The algorithms NCCL has for `coll` on any machine: Broadcast and Reduce run rings only,
/// AllGather and ReduceScatter also NVLS, PAT and CollNet Direct, AllReduce all but PAT;
/// point-to-point calls have no collective algorithm (listed as ring).
pub fn algorithms(coll: Coll) -> &'static [Algo] {
    match coll {
        Coll::AllReduce => &[
            Algo::Ring,
            Algo::Tree,
            Algo::NVLS,
            Algo::NVLSTree,
            Algo::CollNetDirect,
            Algo::CollNetChain,
        ],
        Coll::AllGather | Coll::ReduceScatter => {
            &[Algo::Ring, Algo::NVLS, Algo::PAT, Algo::CollNetDirect]
        }
        _ => &[Algo::Ring],
    }
}

/// Latency in us of `coll` with (algo, proto), for one pipelined op.
pub fn latency_us(coll: Coll, algo: Algo, p: Proto, c: &Shape) -> f64 {
    let base = BASE_LAT[algo as usize][p as usize];
    let intra = hw_lat(c.intra_hw, algo, p);
    // Across nodes at one GPU per node NCCL charges the tree's network latency.
    let inter = if c.per_node() == 1 {
        hw_lat(Hw::Net, Algo::Tree, p)
    } else {
        hw_lat(Hw::Net, algo, p)
    };
    let depth = (c.nodes.max(1) as f64).log2().floor();
    let ppn = (c.per_node() - 1) as f64;
    match algo {
        Algo::Ring => ring_latency_us(coll, p, c, base, inter),
        Algo::Tree => base + 2.0 * (ppn * intra + depth * inter),
        Algo::NVLS if c.nodes > 1 => intra + hw_lat(Hw::Net, algo, p),
        Algo::NVLS => intra,
        Algo::NVLSTree => base + intra + 2.0 * depth * inter,
        Algo::PAT => base + depth * inter / 3.5 + 2.8 * c.ranks as f64,
        Algo::CollNetDirect => base + 2.0 * (ppn.min(1.0) * intra + ppn * 0.4) + inter,
        Algo::CollNetChain => base + 2.0 * ppn * intra + inter,
    }
}

/// The ring's latency: `nsteps` hops, those across nodes at the network's latency `inter`.
fn ring_latency_us(coll: Coll, p: Proto, c: &Shape, base: f64, inter: f64) -> f64 {
    let n = c.ranks;
    let nsteps = coll.steps(n) as f64;
    let intra = hw_lat(c.intra_hw, Algo::Ring, p).max(c.net_overhead(p));
    match coll {
        Coll::AllReduce | Coll::AllGather | Coll::ReduceScatter => {
            let n_inter = match (c.nodes, coll) {
                (0 | 1, _) => 0.0,
                (k, Coll::AllReduce) => 2.0 * (k - 1) as f64,
                (k, _) => (k - 1) as f64,
            };
            base + (nsteps - n_inter) * intra + n_inter * inter
        }
        // Point-to-point: one hop, over the network when the GPUs span nodes.
        Coll::SendRecv | Coll::AllToAll => base + if c.nodes > 1 { inter } else { intra },
        // Chains from a root: one hop latency per hop of the chain.
        _ => {
            let hops = (n - 1) as f64;
            let n_inter = c.nodes.saturating_sub(1) as f64;
            base + (hops - n_inter) * intra + n_inter * inter
        }
    }
}

/// Bus bandwidth in GB/s (nccl-tests' busbw units) NCCL's model expects; 0 when disabled.
pub fn bus_bw(coll: Coll, algo: Algo, p: Proto, c: &Shape) -> f64 {
    if p == Proto::LL128 && !c.ll128 {
        return 0.0;
    }
    match algo {
        Algo::Ring | Algo::Tree => ring_tree_bus_bw(algo, p, c),
        // The newer algorithms run Simple only.
        _ if p != Proto::Simple => 0.0,
        Algo::NVLS | Algo::NVLSTree => c.more.nvls.map_or(0.0, |g| nvls_bus_bw(coll, algo, g, c)),
        Algo::PAT => {
            let bw = if c.nodes <= 2 { c.bw_intra } else { c.bw_inter };
            c.channels as f64 * bw * PAT_EFFICIENCY
        }
        Algo::CollNetDirect | Algo::CollNetChain => c.more.collnet.map_or(0.0, |g| {
            let bus = g.channels as f64 * g.bw_intra;
            if algo == Algo::CollNetChain {
                return bus;
            }
            // Every GPU wants a NIC of its own: more GPUs than NICs share them.
            let mut factor = c.per_node() as f64 / g.channels.max(1) as f64;
            factor -= (factor - 1.0) / 2.0;
            let hopper = matches!(c.generation, Gen::Hopper | Gen::Blackwell);
            bus / factor * if hopper { 0.85 } else { 1.0 }
        }),
    }
}

fn ring_tree_bus_bw(algo: Algo, p: Proto, c: &Shape) -> f64 {
    let bw = if c.nodes <= 2 { c.bw_intra } else { c.bw_inter };
    let ch = c.channels as f64;
    let mut bus = ch * bw;
    let (g, col) = (c.generation.idx(), c.col());
    match (algo, p) {
        (Algo::Ring, Proto::LL) => bus = c.ll_max_bw().min(0.5 * bus),
        (Algo::Ring, Proto::LL128) => bus = (0.92 * bus).min(ch * PER_CH_MAX_RING_LL128_BW[g][col]),
        (Algo::Tree, _) => {
            bus = (0.92 * bus).min(ch * PER_CH_MAX_TREE_BW[g][col]);
            match p {
                Proto::LL => bus = (bus / 3.8).min(c.ll_max_bw()),
                Proto::LL128 => {
                    let f = if c.nodes == 1 {
                        7.0 / 9.0
                    } else {
                        120.0 / 128.0
                    };
                    bus = (bus * f).min(ch * PER_CH_MAX_TREE_LL128_BW[g][col]);
                }
                Proto::Simple => {}
            }
        }
        _ => {}
    }
    bus
}

/// NVLS and NVLSTree: the switch's share of NVLink (NVLS efficiency, one channel of the
/// graph's kept back), twice for AllReduce (busbw's ring factor against what NVLS moves),
/// bounded by the network across nodes and NVLSTree's per-channel most.
fn nvls_bus_bw(coll: Coll, algo: Algo, g: Graph, c: &Shape) -> f64 {
    let ch = g.channels as f64;
    let ppn = c.per_node() as f64;
    let k = if coll == Coll::AllReduce {
        2.0
    } else {
        (ppn - 1.0) / ppn
    };
    let mut per = g.bw_intra * c.generation.nvls_efficiency() * (ch - 1.0) / ch * k;
    if c.nodes > 1 {
        let net = if algo == Algo::NVLSTree && c.nodes <= 2 {
            2.0
        } else {
            1.0
        };
        per = per.min(g.bw_inter * net);
    }
    if algo == Algo::NVLSTree {
        per = per.min(PER_CH_MAX_NVLS_TREE_BW[c.generation.idx()][c.col()]);
    }
    ch * per
}

/// Most data one channel moves per second along one edge, GB/s: NCCL's per-channel maxima
/// (for Ring Simple, the fastest per-channel speed its topology search tries); the newer
/// algorithms' transfers are not held per channel (infinite).
pub fn channel_cap(algo: Algo, p: Proto, c: &Shape) -> f64 {
    let (g, col) = (c.generation.idx(), c.col());
    let ch = c.channels.max(1) as f64;
    match (algo, p) {
        (Algo::Ring, Proto::Simple) => c.generation.max_channel_bw(),
        (Algo::Ring, Proto::LL128) => PER_CH_MAX_RING_LL128_BW[g][col],
        (Algo::Ring, Proto::LL) => c.ll_max_bw() / ch,
        (Algo::Tree, Proto::Simple) => PER_CH_MAX_TREE_BW[g][col],
        (Algo::Tree, Proto::LL128) => PER_CH_MAX_TREE_LL128_BW[g][col],
        (Algo::Tree, Proto::LL) => (PER_CH_MAX_TREE_BW[g][col] / 3.8).min(c.ll_max_bw() / ch),
        _ => f64::INFINITY,
    }
}

/// Algorithm bandwidth in GB/s: bytes of the user buffer per second. Ring, NVLS and NVLSTree
/// convert by n / nsteps, tree and CollNet by half; other algorithms' AllGather and
/// ReduceScatter keep their bus bandwidth.
pub fn alg_bw(coll: Coll, algo: Algo, p: Proto, c: &Shape) -> f64 {
    let bus = bus_bw(coll, algo, p, c);
    let gather = matches!(coll, Coll::AllGather | Coll::ReduceScatter);
    match algo {
        Algo::Ring => bus * c.ranks as f64 / coll.steps(c.ranks) as f64,
        _ if gather => bus,
        Algo::NVLS | Algo::NVLSTree => bus * c.ranks as f64 / coll.steps(c.ranks) as f64,
        _ => bus * 0.5,
    }
}

/// Predicted time in us of `coll` on `bytes` (the whole buffer: count x type size, times the
/// ranks for AllGather and ReduceScatter), or `None` when NCCL would not use the pair.
pub fn predict_us(coll: Coll, algo: Algo, p: Proto, bytes: f64, c: &Shape) -> Option<f64> {
    if !supported(coll, algo, c) {
        return None;
    }
    let mut bw = alg_bw(coll, algo, p, c);
    if bw <= 0.0 {
        return None;
    }
    let mut lat = latency_us(coll, algo, p, c);
    if algo == Algo::Tree && coll == Coll::AllReduce {
        let chunk = (bytes as u64) >> 6;
        if chunk > 0 {
            let i = chunk.ilog2() as usize;
            if i < 23 {
                bw *= TREE_CORRECTION[p as usize][i];
            }
        }
    }
    if algo == Algo::Ring
        && p == Proto::Simple
        && coll == Coll::AllReduce
        && c.nodes > 1
        && bytes / (c.channels as f64 * c.ranks as f64) >= 64.0
    {
        lat *= if c.generation.sm80_or_newer() {
            1.4
        } else {
            1.9
        };
    }
    Some(lat + bytes / (1000.0 * bw))
}

/// The (algorithm, protocol) NCCL picks: the smallest predicted time among those allowed
/// (`None` = any, like an unset NCCL_ALGO / NCCL_PROTO). Ties go to the first in
/// [`Algo::ALL`]'s order (ring, tree, then the newer ones) and LL, LL128, Simple order.
pub fn choose(
    coll: Coll,
    bytes: f64,
    c: &Shape,
    algo: Option<Algo>,
    proto: Option<Proto>,
) -> Option<(Algo, Proto, f64)> {
    let mut best: Option<(Algo, Proto, f64)> = None;
    for a in Algo::ALL {
        if algo.is_some_and(|x| x != a) {
            continue;
        }
        for p in Proto::ALL {
            if proto.is_some_and(|x| x != p) {
                continue;
            }
            // A forced LL128 runs even where NCCL would not enable it by default.
            let comm = Shape {
                ll128: c.ll128 || proto == Some(Proto::LL128),
                ..*c
            };
            if let Some(t) = predict_us(coll, a, p, bytes, &comm)
                && best.is_none_or(|b| t < b.2)
            {
                best = Some((a, p, t));
            }
        }
    }
    best
}

#[cfg(test)]
mod tests {
    use super::*;

    fn close(a: f64, b: f64, tol: f64) {
        assert!((a - b).abs() <= tol, "{a} vs {b}");
    }

    // Worked examples of ../shared/reference/notes/collectives-and-p2p.md, section 2.7,
    // computed from NCCL v2.30.7's tuning.cc with the stated inputs (2 decimals).

    fn example_a() -> Shape {
        Shape {
            ranks: 8,
            nodes: 1,
            channels: 24,
            bw_intra: 10.0,
            bw_inter: 10.0,
            generation: Gen::Ampere,
            intra_hw: Hw::NvLink,
            amd_cpu: false,
            ll128: true,
            more: Features::default(),
        }
    }

    #[test]
    fn example_a_single_node_nvlink_latencies_and_bandwidths() {
        let c = example_a();
        let want = [
            (Algo::Ring, Proto::LL, 15.00, 50.11),
            (Algo::Ring, Proto::LL128, 40.60, 126.17),
            (Algo::Ring, Proto::Simple, 56.00, 137.14),
            (Algo::Tree, Proto::LL, 15.20, 29.05),
            (Algo::Tree, Proto::LL128, 31.50, 85.87),
            (Algo::Tree, Proto::Simple, 64.40, 110.40),
        ];
        for (a, p, lat, bw) in want {
            close(latency_us(Coll::AllReduce, a, p, &c), lat, 0.005);
            close(alg_bw(Coll::AllReduce, a, p, &c), bw, 0.005);
        }
    }

    #[test]
    fn example_a_choices_by_size() {
        let c = example_a();
        let want = [
            (8.0, Proto::LL, 15.00),
            (65536.0, Proto::LL, 16.31),
            (1048576.0, Proto::LL, 35.92),
            (16777216.0, Proto::LL128, 173.57),
            (268435456.0, Proto::Simple, 2013.34),
        ];
        for (bytes, p, t) in want {
            let (a, q, got) = choose(Coll::AllReduce, bytes, &c, None, None).unwrap();
            assert_eq!((a, q), (Algo::Ring, p), "at {bytes} B");
            close(got, t, 0.006);
        }
    }

    #[test]
    fn example_b_two_gpus_on_pcie_volta() {
        let c = Shape {
            ranks: 2,
            nodes: 1,
            channels: 2,
            bw_intra: 12.0,
            bw_inter: 12.0,
            generation: Gen::Volta,
            intra_hw: Hw::Pci,
            amd_cpu: false,
            ll128: true, // the worked example keeps LL128 on to check its formula
            more: Features::default(),
        };
        let want = [
            (Algo::Ring, Proto::LL, 8.60, 12.00),
            (Algo::Ring, Proto::LL128, 19.00, 22.08),
            (Algo::Ring, Proto::Simple, 19.80, 24.00),
            (Algo::Tree, Proto::LL, 8.80, 2.91),
            (Algo::Tree, Proto::LL128, 17.80, 8.59),
            (Algo::Tree, Proto::Simple, 16.40, 11.04),
        ];
        for (a, p, lat, bw) in want {
            close(latency_us(Coll::AllReduce, a, p, &c), lat, 0.005);
            close(alg_bw(Coll::AllReduce, a, p, &c), bw, 0.006);
        }
        let (a, p, t) = choose(Coll::AllReduce, 1048576.0, &c, None, None).unwrap();
        assert_eq!((a, p), (Algo::Ring, Proto::Simple));
        close(t, 63.49, 0.005);
        // By default NCCL disables LL128 over PCI.
        let pci = Shape { ll128: false, ..c };
        assert_eq!(bus_bw(Coll::AllReduce, Algo::Ring, Proto::LL128, &pci), 0.0);
    }

    #[test]
    fn example_c_four_nodes_of_eight() {
        let c = Shape {
            ranks: 32,
            nodes: 4,
            channels: 8,
            bw_intra: 24.0,
            bw_inter: 24.0,
            generation: Gen::Ampere,
            intra_hw: Hw::NvLink,
            amd_cpu: false,
            ll128: true,
            more: Features::default(),
        };
        let want = [
            (Algo::Ring, Proto::LL, 78.80, 10.53),
            (Algo::Ring, Proto::LL128, 144.40, 82.58),
            (Algo::Ring, Proto::Simple, 282.80, 99.10),
            (Algo::Tree, Proto::LL, 35.20, 10.20),
            (Algo::Tree, Proto::LL128, 65.50, 66.75),
            (Algo::Tree, Proto::Simple, 120.40, 71.20),
        ];
        for (a, p, lat, bw) in want {
            close(latency_us(Coll::AllReduce, a, p, &c), lat, 0.005);
            close(alg_bw(Coll::AllReduce, a, p, &c), bw, 0.005);
        }
        let want = [
            (8.0, Algo::Tree, Proto::LL, 35.20),
            (1048576.0, Algo::Tree, Proto::LL128, 91.68),
            (16777216.0, Algo::Tree, Proto::LL128, 344.77),
            (268435456.0, Algo::Ring, Proto::Simple, 3104.74),
        ];
        for (bytes, a, p, t) in want {
            let got = choose(Coll::AllReduce, bytes, &c, None, None).unwrap();
            assert_eq!((got.0, got.1), (a, p), "at {bytes} B");
            close(got.2, t, 0.006);
        }
    }

    #[test]
    fn protocol_crossover_ll_small_simple_large_and_tree_wins_latency_at_scale() {
        let c = example_a();
        let small = choose(Coll::AllReduce, 8.0, &c, Some(Algo::Ring), None).unwrap();
        let large = choose(Coll::AllReduce, 1e9, &c, Some(Algo::Ring), None).unwrap();
        assert_eq!(small.1, Proto::LL);
        assert_eq!(large.1, Proto::Simple);
        // 128 nodes of 8: ring latency grows with 2(n-1) steps, tree with log2(nodes).
        let big = Shape {
            ranks: 1024,
            nodes: 128,
            channels: 16,
            bw_inter: 12.0,
            ..c
        };
        for p in Proto::ALL {
            assert!(
                latency_us(Coll::AllReduce, Algo::Tree, p, &big)
                    < latency_us(Coll::AllReduce, Algo::Ring, p, &big) / 10.0
            );
        }
    }

    /// One DGX H100 as NCCL's model sees it: 8 GPUs, 360 GB/s of NVLink data per GPU (450 x
    /// 0.8) over 16 ring channels, NVLS on its own 16 channels.
    fn h100_node() -> Shape {
        Shape {
            ranks: 8,
            nodes: 1,
            channels: 16,
            bw_intra: 22.5,
            bw_inter: 22.5,
            generation: Gen::Hopper,
            intra_hw: Hw::NvLink,
            amd_cpu: false,
            ll128: true,
            more: Features {
                nvls: Some(Graph {
                    channels: 16,
                    bw_intra: 22.5,
                    bw_inter: 22.5,
                }),
                collnet: None,
                pat: true,
            },
        }
    }

    #[test]
    fn nvls_latency_and_bandwidth_follow_nccl_2_30() {
        let c = h100_node();
        // Latency: NVLink NVLS Simple hardware latency, base ignored: 25 us.
        close(
            latency_us(Coll::AllReduce, Algo::NVLS, Proto::Simple, &c),
            25.0,
            1e-9,
        );
        // busBw = 16 x 22.5 x 0.85 x 15/16 x 2 = 573.75; algBw = busBw x 8 / 14 = 327.86.
        close(
            bus_bw(Coll::AllReduce, Algo::NVLS, Proto::Simple, &c),
            573.75,
            1e-9,
        );
        close(
            alg_bw(Coll::AllReduce, Algo::NVLS, Proto::Simple, &c),
            327.857,
            1e-3,
        );
        // AllGather: x (ppn - 1)/ppn = 7/8 instead of 2, and kept as algBw: 251.02.
        close(
            alg_bw(Coll::AllGather, Algo::NVLS, Proto::Simple, &c),
            251.016,
            1e-3,
        );
        // NVLS runs Simple only.
        assert_eq!(bus_bw(Coll::AllReduce, Algo::NVLS, Proto::LL, &c), 0.0);
    }

    #[test]
    fn nccl_picks_ring_ll_for_small_and_nvls_for_large_allreduce_on_an_h100_node() {
        let c = h100_node();
        assert_eq!(
            choose(Coll::AllReduce, 8.0, &c, None, None).unwrap().0,
            Algo::Ring
        );
        let big = choose(Coll::AllReduce, 1073741824.0, &c, None, None).unwrap();
        assert_eq!((big.0, big.1), (Algo::NVLS, Proto::Simple));
        // 25 us + 1 GiB / (1000 x 327.857 GB/s) = 3300.0 us.
        close(big.2, 25.0 + 1073741824.0 / 327857.14, 0.01);
        // Without multicast (or NCCL_NVLS_ENABLE=0) the ring takes it, and NVLS is refused.
        let plain = Shape {
            more: Features::default(),
            ..c
        };
        assert_eq!(
            choose(Coll::AllReduce, 1073741824.0, &plain, None, None)
                .unwrap()
                .0,
            Algo::Ring
        );
        assert!(choose(Coll::AllReduce, 1e9, &plain, Some(Algo::NVLS), None).is_none());
        // AllGather: ring's algBw (360 x 8/7) beats NVLS's 251.
        assert_eq!(
            choose(Coll::AllGather, 1e9, &c, None, None).unwrap().0,
            Algo::Ring
        );
    }

    #[test]
    fn nvls_runs_on_one_node_and_nvls_tree_across_nodes_allreduce_only() {
        let one = h100_node();
        let two = Shape {
            ranks: 16,
            nodes: 2,
            ..one
        };
        assert!(supported(Coll::AllReduce, Algo::NVLS, &one));
        assert!(!supported(Coll::AllReduce, Algo::NVLSTree, &one));
        assert!(!supported(Coll::AllReduce, Algo::NVLS, &two));
        assert!(supported(Coll::AllReduce, Algo::NVLSTree, &two));
        assert!(!supported(Coll::AllGather, Algo::NVLSTree, &two));
        assert!(!supported(Coll::Broadcast, Algo::NVLS, &one));
        // NVLSTree latency: 25 + 2 x log2(2) x 20.9 (NET NVLSTree Simple) = 66.8 us.
        close(
            latency_us(Coll::AllReduce, Algo::NVLSTree, Proto::Simple, &two),
            66.8,
            1e-9,
        );
        // NVLSTree bandwidth on 2 nodes: per channel min(22.5 x 0.85 x 15/16 x 2 = 35.86,
        // 2 x bwInter, 57.7): busBw 573.75, algBw x 16/30.
        close(
            alg_bw(Coll::AllReduce, Algo::NVLSTree, Proto::Simple, &two),
            306.0,
            1e-9,
        );
    }

    #[test]
    fn pat_runs_at_one_gpu_per_node_for_allgather_and_reducescatter() {
        let c = Shape {
            ranks: 4,
            nodes: 4,
            channels: 2,
            bw_intra: 20.0,
            bw_inter: 20.0,
            intra_hw: Hw::Pci,
            ..h100_node()
        };
        assert!(supported(Coll::AllGather, Algo::PAT, &c));
        assert!(supported(Coll::ReduceScatter, Algo::PAT, &c));
        assert!(!supported(Coll::AllReduce, Algo::PAT, &c));
        let eight = Shape { ranks: 8, ..c };
        assert!(
            !supported(Coll::AllGather, Algo::PAT, &eight),
            "2 GPUs per node"
        );
        let off = Shape {
            more: Features {
                pat: false,
                ..c.more
            },
            ..c
        };
        assert!(!supported(Coll::AllGather, Algo::PAT, &off));
        // Latency: 8 + floor(log2 4) x 14 / 3.5 + 2.8 x 4 = 27.2 us (one GPU per node: the
        // network's tree latency). Bandwidth: 2 x 20 x 0.75 = 30, kept as algBw.
        close(
            latency_us(Coll::AllGather, Algo::PAT, Proto::Simple, &c),
            27.2,
            1e-9,
        );
        close(
            alg_bw(Coll::AllGather, Algo::PAT, Proto::Simple, &c),
            30.0,
            1e-9,
        );
        assert_eq!(bus_bw(Coll::AllGather, Algo::PAT, Proto::LL, &c), 0.0);
    }

    #[test]
    fn collnet_runs_only_where_enabled_and_costs_as_nccl_says() {
        let c = Shape {
            ranks: 16,
            nodes: 2,
            ..h100_node()
        };
        assert!(
            !supported(Coll::AllReduce, Algo::CollNetDirect, &c),
            "off by default"
        );
        let on = Shape {
            more: Features {
                collnet: Some(Graph {
                    channels: 8,
                    bw_intra: 48.0,
                    bw_inter: 48.0,
                }),
                ..c.more
            },
            ..c
        };
        assert!(supported(Coll::AllReduce, Algo::CollNetDirect, &on));
        assert!(supported(Coll::AllReduce, Algo::CollNetChain, &on));
        // Direct: 2 x (1 x 3.7 + 7 x 0.4) + 31 = 44 us; 8 x 48 x 0.85 (Hopper), halved.
        close(
            latency_us(Coll::AllReduce, Algo::CollNetDirect, Proto::Simple, &on),
            44.0,
            1e-9,
        );
        close(
            alg_bw(Coll::AllReduce, Algo::CollNetDirect, Proto::Simple, &on),
            163.2,
            1e-9,
        );
        // Chain: 2 x 7 x 2.8 + 30 = 69.2 us.
        close(
            latency_us(Coll::AllReduce, Algo::CollNetChain, Proto::Simple, &on),
            69.2,
            1e-9,
        );
        // With CollNet, NVLS runs across nodes (CollNet+NVLS): 25 + 18 (NET NVLS) = 43 us;
        // bounded by the network's 22.5 per channel: busBw 360, algBw x 16/30 = 192.
        assert!(supported(Coll::AllReduce, Algo::NVLS, &on));
        assert!(!supported(Coll::AllGather, Algo::NVLS, &on));
        close(
            latency_us(Coll::AllReduce, Algo::NVLS, Proto::Simple, &on),
            43.0,
            1e-9,
        );
        close(
            alg_bw(Coll::AllReduce, Algo::NVLS, Proto::Simple, &on),
            192.0,
            1e-9,
        );
    }
}
