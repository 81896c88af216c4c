//! Budgets before work: what a scenario will allocate, estimated from its counts before
//! anything is built, against `limits.max_memory` (default: half of this machine's memory).
//! A run past the limit is an input error that names the field, the estimate and the limit,
//! instead of an out-of-memory abort minutes later.
//!
//! The per-item costs are measured upper bounds of the current implementation (release build,
//! peak resident memory): a star cluster node of 4 GPUs, 1 NIC and 20 cores takes 17 KB
//! (100,000 nodes: 1.7 GB); a tiled Cholesky task 1-2 KB (n = 144,000, tile 960: 573 k tasks,
//! 1.1 GB); an MPI rank of the Halo3d generator on Lassen about 300 KB with its share of the
//! platform (480 ranks: 150 MB); a message 2 KB (its records are kept for flows.csv and the
//! timeline). Estimates are rounded up; they are not exact accounts.

use crate::cuda::CudaOp;
use crate::mpi::{MpiSpec, ProgramSpec};
use crate::scenario::{Cluster, Network, NvLinkSpec, PlatformSpec, Scenario, Workload};

/// Bytes per platform element (a GPU, NIC or the node itself, with their links).
const PER_NODE_ELEMENT: f64 = 4096.0;
/// Bytes per CPU core, with its runtime worker when a task graph runs (2 M cores of
/// tests/data/scenarios/mix-pcie.ron: 2.5 GB peak, 1.24 KB per core).
const PER_CORE: f64 = 1536.0;
/// Bytes per pair of a task runtime's memory nodes: its route, bandwidth, latency and
/// whether it copies directly (1,000 GPUs on a node: 249 MB peak; 10,000: 20.9 GB, 209 B
/// a pair, and 204 s to route them).
const PER_MEMORY_PAIR: f64 = 256.0;
/// Bytes per fat-tree switch, with its links.
const PER_SWITCH: f64 = 8192.0;
/// Bytes per task of a task graph (the task, its edges, its trace row).
const PER_TASK: f64 = 2048.0;
/// Bytes per handle and memory node (replica state, allocation records).
const PER_REPLICA: f64 = 256.0;
/// Bytes per MPI rank (its program, queues, matching lists).
const PER_RANK: f64 = 256.0 * 1024.0;
/// Bytes per link of the platform, with its entity and usage records (an NVLink mesh of 600
/// GPUs on each of 2 nodes, 359 k links: 256 MB; a fat-tree of children [1000, 1000], 1 M
/// links: 690 MB).
const PER_LINK: f64 = 1024.0;
/// Bytes per item a CUDA stream runs (a kernel, copy or event): its interval on the
/// timeline, its row in trace.json.
const PER_STREAM_ITEM: f64 = 256.0;
/// Bytes per NCCL call on each GPU: its steps' flows and their records (an AllReduce on 8 to
/// 128 DGX A100 GPUs, recording: 10 to 31 KB; `nccl-tests` on 16 GPUs: 15 KB).
const PER_COLLECTIVE: f64 = 40.0 * 1024.0;
/// Bytes per MPI message over a run: its request records, its flow in flows.csv and, when
/// recording, its intervals (Halo3d on Lassen, 8 ranks: 0.9 KB per message without
/// recording, 1.9 KB with).
const PER_MESSAGE: f64 = 2048.0;

/// Bytes of output files per MPI message, upper bounds of the shipped studies (the sweep,
/// with the most compute intervals per message, writes 2.2 KB of trace.json, 1.0 KB of
/// paje.trace and 0.4 KB of intervals.csv per message; every study 90 B of flows.csv).
const TRACE_JSON_PER_MESSAGE: f64 = 2560.0;
const PAJE_PER_MESSAGE: f64 = 1152.0;
const INTERVALS_PER_MESSAGE: f64 = 512.0;
const FLOWS_CSV_PER_MESSAGE: f64 = 128.0;
/// The default of `limits.max_output`.
pub const DEFAULT_MAX_OUTPUT: f64 = 4.0 * (1u64 << 30) as f64;

/// One estimate: the field that drives it and its bytes.
#[derive(Debug, Clone, PartialEq)]
pub struct Estimate {
    pub field: String,
    pub what: String,
    pub bytes: f64,
}

/// This machine's memory in bytes (Linux: /proc/meminfo), else 8 GiB.
pub fn machine_memory() -> f64 {
    std::fs::read_to_string("/proc/meminfo")
        .ok()
        .and_then(|text| {
            let line = text.lines().find(|l| l.starts_with("MemTotal:"))?;
            let kb: f64 = line.split_whitespace().nth(1)?.parse().ok()?;
            Some(kb * 1024.0)
        })
        .unwrap_or(8.0 * (1u64 << 30) as f64)
}

/// The default of `limits.max_memory`: half of this machine's memory.
pub fn default_max_memory() -> f64 {
    machine_memory() / 2.0
}

/// What the scenario's big counts will allocate.
pub fn estimates(s: &Scenario) -> Vec<Estimate> {
    let mut out = Vec::new();
    if let PlatformSpec::Cluster(c) = &s.platform {
        out.push(cluster_nodes(c));
        if let Some(NvLinkSpec::Pairs(_)) = &c.node.nvlink {
            // One link per GPU pair: quadratic in the GPUs of a node.
            let g = c.node.gpus as f64;
            let links = c.nodes as f64 * g * (g - 1.0).max(0.0) / 2.0;
            out.push(Estimate {
                field: "platform.node.gpus".into(),
                what: format!("{links:.3e} NVLink pairs ({} GPUs per node)", c.node.gpus),
                bytes: links * PER_LINK,
            });
        }
        if let Network::FatTree(ft) = &c.network {
            let taper = |i| ft.taper.get(i).unwrap_or(1.0);
            let switches = fat_tree_switches(&ft.children, taper);
            let links = fat_tree_links(&ft.children, taper);
            out.push(Estimate {
                field: "platform.network.FatTree.children".into(),
                what: format!("{switches:.3e} fat-tree switches and {links:.3e} links"),
                bytes: switches * PER_SWITCH + links * PER_LINK,
            });
        }
    }
    for (path, part) in s.parts() {
        if let (true, PlatformSpec::Cluster(c)) = (part.is_task_graph(), &s.platform) {
            // The runtime's memory nodes (RAM and node 0's GPUs), every pair routed.
            let pairs = (1.0 + f64::from(c.node.gpus)).powi(2);
            out.push(Estimate {
                field: "platform.node.gpus".into(),
                what: format!("{pairs:.3e} pairs of the task runtime's memory nodes"),
                bytes: pairs * PER_MEMORY_PAIR,
            });
        }
        match part {
            Workload::Cholesky(t) | Workload::Lu(t) | Workload::Qr(t) => {
                let tiles = (t.n as f64 / t.tile.max(1) as f64).ceil();
                // Cholesky T^3/6, LU T^3/3, QR T^3/2 tasks, plus lower-order terms.
                let per_cube = match part {
                    Workload::Cholesky(_) => 1.0 / 6.0,
                    Workload::Lu(_) => 1.0 / 3.0,
                    _ => 0.5,
                };
                let tasks = per_cube * tiles.powi(3) + tiles.powi(2) + tiles;
                out.push(Estimate {
                    field: format!("{path}.n"),
                    what: format!("{tasks:.3e} tasks ({tiles} x {tiles} tiles)"),
                    bytes: tasks * PER_TASK + tiles * tiles * 8.0 * PER_REPLICA,
                });
            }
            Workload::Mpi(m) => {
                out.push(Estimate {
                    field: format!("{path}.ranks"),
                    what: format!("{} ranks", m.ranks),
                    bytes: m.ranks as f64 * PER_RANK,
                });
                if let Some((field, messages)) = mpi_messages(m) {
                    out.push(Estimate {
                        field: format!("{path}.{field}"),
                        what: format!("{messages:.3e} messages"),
                        bytes: messages * PER_MESSAGE,
                    });
                }
            }
            Workload::Cuda(c) => {
                let devices = c.gpus.map_or_else(|| cluster_gpus(&s.platform), f64::from);
                let total = cuda_items(&c.program).times(c.repeat as f64 * devices);
                out.push(stream_items(
                    &format!("{path}.repeat"),
                    format!(
                        "{:.3e} stream items and {:.3e} NCCL calls ({} passes)",
                        total.items, total.collectives, c.repeat
                    ),
                    total,
                ));
            }
            _ => {}
        }
    }
    out
}

/// A cluster's nodes with their GPUs, NICs and cores. The field named is the count inside
/// a node when a node's contents outweigh the nodes themselves (100,000 GPUs per node), else
/// the node count. Counts are summed as f64: one near u32::MAX must not wrap.
fn cluster_nodes(c: &Cluster) -> Estimate {
    let n = &c.node;
    let nodes = f64::from(c.nodes);
    let parts = [
        ("platform.node.gpus", f64::from(n.gpus) * PER_NODE_ELEMENT),
        ("platform.node.nics", f64::from(n.nics) * PER_NODE_ELEMENT),
        ("platform.node.cpu_cores", f64::from(n.cpu_cores) * PER_CORE),
    ];
    let per_node = PER_NODE_ELEMENT + parts.iter().map(|p| p.1).sum::<f64>();
    let (inside, heaviest) = parts
        .iter()
        .fold(parts[0], |a, &b| if b.1 > a.1 { b } else { a });
    let field = if heaviest > nodes * PER_NODE_ELEMENT {
        inside
    } else {
        "platform.nodes"
    };
    Estimate {
        field: field.into(),
        what: format!(
            "{} nodes of {} GPUs, {} NICs and {} cores",
            c.nodes, n.gpus, n.nics, n.cpu_cores
        ),
        bytes: nodes * per_node,
    }
}

/// The GPUs of a cluster platform (one for another platform).
fn cluster_gpus(p: &PlatformSpec) -> f64 {
    match p {
        PlatformSpec::Cluster(c) => c.nodes as f64 * c.node.gpus as f64,
        _ => 1.0,
    }
}

/// What CUDA streams run: kernels, copies and events (`items`) and NCCL calls
/// (`collectives`), each counted once per GPU that runs it.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct StreamWork {
    pub items: f64,
    pub collectives: f64,
}

impl StreamWork {
    pub fn times(self, n: f64) -> StreamWork {
        StreamWork {
            items: self.items * n,
            collectives: self.collectives * n,
        }
    }

    fn plus(self, other: StreamWork) -> StreamWork {
        StreamWork {
            items: self.items + other.items,
            collectives: self.collectives + other.collectives,
        }
    }
}

/// The stream work of one pass of a CUDA program on one GPU, graph launches included (each
/// launch runs the captured operations again).
pub fn cuda_items(program: &[CudaOp]) -> StreamWork {
    let graphs: std::collections::BTreeMap<&str, StreamWork> = program
        .iter()
        .filter_map(|op| match op {
            CudaOp::Capture { graph, ops } => Some((graph.as_str(), cuda_items(ops))),
            _ => None,
        })
        .collect();
    let one = |items, collectives| StreamWork { items, collectives };
    program
        .iter()
        .map(|op| match op {
            CudaOp::Capture { .. } => StreamWork::default(),
            CudaOp::Launch { graph, times, .. } => graphs
                .get(graph.as_str())
                .copied()
                .unwrap_or_default()
                .times(*times as f64),
            CudaOp::Nccl { .. } => one(0.0, 1.0),
            _ => one(1.0, 0.0),
        })
        .fold(StreamWork::default(), StreamWork::plus)
}

/// Messages an MPI job sends over its run, and the field that sets the count: a generator's
/// iterations times the messages of one iteration (an allreduce of p ranks: p (ceil(log2 p)
/// + 1) at most), or a trace's lines (a collective's line: ceil(log2 p) + 1 messages).
fn mpi_messages(m: &MpiSpec) -> Option<(String, f64)> {
    let p = m.ranks.max(1);
    let per_coll = (p as f64).log2().ceil() + 1.0;
    match &m.program {
        ProgramSpec::Generator(g) => {
            let (p2p, allreduces) = g.messages_per_iteration(p);
            let per_iteration = p2p + allreduces as f64 * p as f64 * per_coll;
            Some((
                format!("program.Generator.{}.iterations", g.name()),
                g.iterations() as f64 * per_iteration,
            ))
        }
        ProgramSpec::TraceText(texts) => {
            // Point-to-point calls, their waits, and the calls that send nothing.
            let not_collective = [
                "send", "isend", "recv", "irecv", "compute", "sleep", "wait", "waitall", "init",
                "finalize",
            ];
            // Any case, without a lower-cased copy per line.
            let collective = |op: &str| !not_collective.iter().any(|p| op.eq_ignore_ascii_case(p));
            let messages = texts
                .iter()
                .flat_map(|(_, text)| text.lines())
                .filter_map(|l| l.split_whitespace().nth(1))
                .map(|op| if collective(op) { per_coll } else { 1.0 })
                .sum();
            Some(("program".into(), messages))
        }
        ProgramSpec::Trace(_) | ProgramSpec::Otf2(_) => None,
    }
}

/// Switches of an XGFT with `children` per level and `children[i] / taper(i)` parents per
/// level-(i+1) switch (as the platform builder counts them).
pub fn fat_tree_switches(children: &[u32], taper: impl Fn(usize) -> f64) -> f64 {
    fat_tree_levels(children, taper).0.iter().sum()
}

/// An XGFT's switches per level (1..=h) and parents per switch of levels 2..=h: level l has
/// prod(children[l..]) x prod(parents[..l-1]) switches.
fn fat_tree_levels(children: &[u32], taper: impl Fn(usize) -> f64) -> (Vec<f64>, Vec<f64>) {
    let h = children.len();
    let parents: Vec<f64> = (0..h.saturating_sub(1))
        .map(|i| (children[i] as f64 / taper(i)).round().max(1.0))
        .collect();
    let switches = (1..=h)
        .map(|l| {
            let above: f64 = children[l..].iter().map(|&c| c as f64).product();
            let below: f64 = parents[..l - 1].iter().product();
            above * below
        })
        .collect();
    (switches, parents)
}

/// What the run's output files will take, from the counts that drive them: an MPI job's
/// messages, in flows.csv and (when the run records) in trace.json, paje.trace and
/// intervals.csv.
pub fn output_estimates(s: &Scenario, recording: bool) -> Vec<Estimate> {
    let o = &s.output;
    let on = |yes: bool, bytes: f64| if yes { bytes } else { 0.0 };
    let per_message = on(o.flows_csv, FLOWS_CSV_PER_MESSAGE)
        + on(recording && o.trace_json, TRACE_JSON_PER_MESSAGE)
        + on(recording && o.paje, PAJE_PER_MESSAGE)
        + on(recording && o.intervals_csv, INTERVALS_PER_MESSAGE);
    s.parts()
        .into_iter()
        .filter_map(|(path, part)| match part {
            Workload::Mpi(m) => mpi_messages(m).map(|(field, messages)| Estimate {
                field: format!("{path}.{field}"),
                what: format!("{messages:.3e} messages"),
                bytes: messages * per_message,
            }),
            _ => None,
        })
        .collect()
}

/// The first output estimate over `limits.max_output`, as an error naming its field.
pub fn check_outputs(s: &Scenario, recording: bool) -> Result<(), (String, String)> {
    let limit = s.limits.max_output.map_or(DEFAULT_MAX_OUTPUT, |b| b.0);
    for e in output_estimates(s, recording) {
        if over(e.bytes, limit) {
            return Err((
                e.field,
                format!(
                    "{} would write an estimated {} of output files, over limits.max_output = {}; \
                     turn the largest off (--set output.trace_json=false, --set output.paje=false, \
                     or --disable record) or raise limits.max_output",
                    e.what,
                    gib(e.bytes),
                    gib(limit)
                ),
            ));
        }
    }
    Ok(())
}

/// Links of that XGFT between switch levels: each level-l switch (l < h) to its parents.
pub fn fat_tree_links(children: &[u32], taper: impl Fn(usize) -> f64) -> f64 {
    let (switches, parents) = fat_tree_levels(children, taper);
    switches.iter().zip(&parents).map(|(s, p)| s * p).sum()
}

/// The first estimate over `limit` bytes, as an error naming its field.
pub fn check(s: &Scenario, limit: f64) -> Result<(), (String, String)> {
    estimates(s)
        .into_iter()
        .try_for_each(|e| check_estimate(e, limit))
}

/// Whether an estimate passes its limit; NaN (one that overflowed into inf - inf) passes any.
fn over(bytes: f64, limit: f64) -> bool {
    bytes.is_nan() || bytes > limit
}

/// One estimate against `limit` bytes: an error naming its field when over.
pub fn check_estimate(e: Estimate, limit: f64) -> Result<(), (String, String)> {
    if over(e.bytes, limit) {
        return Err((
            e.field,
            format!(
                "{} need an estimated {} of memory, over limits.max_memory = {}; \
                 set limits.max_memory (e.g. --set limits.max_memory=64GiB) to run anyway",
                e.what,
                gib(e.bytes),
                gib(limit)
            ),
        ));
    }
    Ok(())
}

/// What CUDA stream work takes, driven by `field`.
pub fn stream_items(field: &str, what: String, work: StreamWork) -> Estimate {
    Estimate {
        field: field.into(),
        what,
        bytes: work.items * PER_STREAM_ITEM + work.collectives * PER_COLLECTIVE,
    }
}

/// A scenario's memory limit: `limits.max_memory`, else half of this machine's memory.
pub fn limit(s: &Scenario) -> f64 {
    s.limits.max_memory.map_or_else(default_max_memory, |b| b.0)
}

fn gib(bytes: f64) -> String {
    let g = bytes / (1u64 << 30) as f64;
    if g < 1e4 {
        format!("{g:.3} GiB")
    } else {
        format!("{g:.2e} GiB")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_lassen_fat_tree_counts_its_switches() {
        // 3 levels, children [18, 9, 5], taper 1.5 at level 1 and 1 at level 2: 45 leaves,
        // 5 x round(18 / 1.5) = 60 level-2 switches, 12 x 9 = 108 top switches.
        let n = fat_tree_switches(&[18, 9, 5], |i| [1.5, 1.0][i]);
        assert_eq!(n, 45.0 + 60.0 + 108.0);
        // A taper of 1e-300 asks for more switches than any machine holds.
        assert!(fat_tree_switches(&[18, 9, 5], |_| 1e-300) > 1e100);
    }

    #[test]
    fn a_cluster_names_the_count_that_weighs_most_and_never_wraps() {
        let text = r#"Scenario(name: "c", platform: Cluster(nodes: 2, node: NodeSpec(
            cpu_cores: 20, gpus: 4, gpu: GpuSpec(name: "G", memory: "16GiB", speed: "1TFlop/s"),
            pcie: PcieSpec(up: "1GB/s", down: "1GB/s", bus: "1GB/s", latency: 0),
            nic: NicSpec(bandwidth: "1GB/s", latency: 0)),
            network: Star(bandwidth: "1GB/s", latency: 0)), workload: Flows([]))"#;
        let c = |set: &str| {
            let s = crate::load::parse_scenario_with(text, "c.ron", &|_| Err(String::new()), &[]);
            let s = crate::load::apply_overrides(s.unwrap(), &[set.to_string()]).unwrap();
            let PlatformSpec::Cluster(c) = s.platform else {
                unreachable!()
            };
            cluster_nodes(&c)
        };
        // 2 nodes: (1 + 4 GPUs + 1 NIC) x 4 KiB + 20 cores x 1.5 KiB each.
        let small = c("seed=0");
        assert_eq!(small.bytes, 2.0 * (6.0 * 4096.0 + 20.0 * 1536.0));
        // u32::MAX GPUs: 1 + GPUs + NICs wrapped to 1 in u32 arithmetic.
        let gpus = c("platform.node.gpus=4294967295");
        assert!(gpus.bytes > 3e13, "{gpus:?}");
        assert_eq!(gpus.field, "platform.node.gpus");
        assert_eq!(
            c("platform.node.cpu_cores=10000000").field,
            "platform.node.cpu_cores"
        );
        assert_eq!(c("platform.nodes=1000000").field, "platform.nodes");
    }

    #[test]
    fn generators_count_their_messages_from_their_grids() {
        use crate::mpi::Generator;
        use crate::units::{Bytes, Duration};
        let t = Duration(crate::SimTime::ZERO);
        let b = Bytes(1.0);
        // 8 ranks in 2 x 2 x 2: each has 7 neighbours (3 faces, 3 edges, 1 corner) for the
        // forces and the positions, 3 faces for the gradients: 8 x 17 = 136, and one
        // allreduce.
        let halo = Generator::Halo3d {
            iterations: 1,
            side: 1,
            compute: t,
        };
        assert_eq!(halo.messages_per_iteration(8), (136.0, 1));
        // 27 ranks in 3 x 3 x 3: 2 x (7^3 - 27) = 632 (the centre has 26, a corner 7), and
        // 3 axes x 2 x 2 x 9 = 108 face messages.
        assert_eq!(halo.messages_per_iteration(27).0, 740.0);
        // 6 ranks in 3 x 2: 2 x 2 x 2 (along the 3) + 2 x 1 x 3 (along the 2) = 14 pairs,
        // in 1 large and 4 small rounds: 70.
        let stencil = Generator::Stencil {
            iterations: 1,
            large: b,
            small: b,
            small_exchanges: 4,
            compute: t,
        };
        assert_eq!(stencil.messages_per_iteration(6), (70.0, 0));
        // Each of 4 sweeps sends downstream once per block: 7 per sweep on 3 x 2.
        let sweep = Generator::Sweep {
            iterations: 1,
            bytes: b,
            blocks: 2,
            compute: t,
        };
        assert_eq!(sweep.messages_per_iteration(6), (56.0, 0));
    }
}
