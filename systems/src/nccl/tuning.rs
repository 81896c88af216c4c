//! NCCL's own cost model (src/graph/tuning.cc and src/enqueue.cc of NCCL v2.30.7), which NCCL
//! uses to pick an algorithm and a protocol for each collective: predicted time in us =
//! latency + bytes / (1000 x algorithm bandwidth in GB/s). The tables are NCCL's constants as
//! ../shared/reference/notes/collectives-and-p2p.md section 2 quotes them.
//!
//! The simulator uses this model for two things only: choosing (algorithm, protocol) as NCCL
//! would, and the fixed latency of a collective. Its bandwidth comes from flows on the
//! platform, which see contention this model cannot.
//! Simplified: one pipelined op (numPipeOps = 1), balanced tree pattern, latencyInter 0;
//! CollNet, NVLS and PAT are not modelled.

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

/// `baseLatencies[algo][proto]` in us, {LL, LL128, Simple}.
const BASE_LAT: [[f64; 3]; 2] = [[6.6, 14.0, 8.4], [6.8, 14.0, 8.4]];
/// `hwLatencies[hw][algo][proto]` in us.
const HW_LAT: [[[f64; 3]; 2]; 3] = [
    [[0.6, 1.9, 3.4], [0.6, 1.25, 4.0]],  // NVLink: ring, tree
    [[1.0, 2.5, 5.7], [1.0, 1.9, 4.0]],   // PCI
    [[2.7, 4.0, 14.0], [5.0, 8.5, 14.0]], // NET
];
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

/// Whether NCCL runs `coll` with `algo` at all.
pub fn supported(coll: Coll, algo: Algo) -> bool {
    match algo {
        Algo::Ring => true,
        Algo::Tree => coll == Coll::AllReduce,
    }
}

/// Latency in us of `coll` with (algo, proto), for one pipelined op.
pub fn latency_us(coll: Coll, algo: Algo, p: Proto, c: &Shape) -> f64 {
    let a = algo as usize;
    let base = BASE_LAT[a][p as usize];
    let intra_hw = c.intra_hw as usize;
    let n = c.ranks;
    let nsteps = coll.steps(n) as f64;
    match algo {
        Algo::Ring => {
            let intra = HW_LAT[intra_hw][0][p as usize].max(c.net_overhead(p));
            let inter_hw_algo = if c.nodes > 1 && c.per_node() == 1 {
                1
            } else {
                0
            };
            let inter = HW_LAT[Hw::Net as usize][inter_hw_algo][p as usize];
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
        Algo::Tree => {
            let intra = HW_LAT[intra_hw][1][p as usize];
            let inter = HW_LAT[Hw::Net as usize][1][p as usize];
            let depth = (c.nodes.max(1) as f64).log2().floor();
            base + 2.0 * ((c.per_node() - 1) as f64 * intra + depth * inter)
        }
    }
}

/// Bus bandwidth in GB/s (nccl-tests' busbw units) NCCL's model expects; 0 when disabled.
pub fn bus_bw(algo: Algo, p: Proto, c: &Shape) -> f64 {
    if p == Proto::LL128 && !c.ll128 {
        return 0.0;
    }
    let bw = if c.nodes <= 2 { c.bw_intra } else { c.bw_inter };
    let ch = c.channels as f64;
    let mut bus = ch * bw;
    let (g, col) = (c.generation.idx(), c.col());
    match (algo, p) {
        (Algo::Ring, Proto::LL) => bus = c.ll_max_bw().min(0.5 * bus),
        (Algo::Ring, Proto::LL128) => bus = (0.92 * bus).min(ch * PER_CH_MAX_RING_LL128_BW[g][col]),
        (Algo::Ring, Proto::Simple) => {}
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
    }
    bus
}

/// Most data one channel moves per second along one edge, GB/s: NCCL's per-channel maxima
/// (for Ring Simple, the fastest per-channel speed its topology search tries).
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
    }
}

/// Algorithm bandwidth in GB/s: bytes of the user buffer per second.
pub fn alg_bw(coll: Coll, algo: Algo, p: Proto, c: &Shape) -> f64 {
    let bus = bus_bw(algo, p, c);
    match algo {
        Algo::Ring => bus * c.ranks as f64 / coll.steps(c.ranks) as f64,
        Algo::Tree => bus * 0.5,
    }
}

/// Predicted time in us of `coll` on `bytes` (the whole buffer: count x type size, times the
/// ranks for AllGather and ReduceScatter), or `None` when NCCL would not use the pair.
pub fn predict_us(coll: Coll, algo: Algo, p: Proto, bytes: f64, c: &Shape) -> Option<f64> {
    if !supported(coll, algo) {
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
/// ring, tree and LL, LL128, Simple order.
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
        assert_eq!(bus_bw(Algo::Ring, Proto::LL128, &pci), 0.0);
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
}
