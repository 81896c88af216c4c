//! A communicator and its collectives as transfers (plain data in, a [`Plan`] out): rings
//! and double binary trees per channel, protocols, NCCL's choice of both ([`super::tuning`]).

use super::algos::{self, Transfer};
use super::tuning::{self, Features, Gen, Graph, Hw};
use crate::platform::topology::{Layout, NvLayout};
use crate::platform::{Endpoint, Topology};
use hetsim_schema::cuda::{Algo, Coll, NcclCall, NcclSpec, Proto};

/// NCCL's LL buffer per channel and peer (8 lines x 512 threads x 8 steps x 16 B) and LL128's
/// (120 x 640 x 8 x 8 B), in wire bytes (src/init.cc).
const LL_BUFF: f64 = 524288.0;
const LL128_BUFF: f64 = 4915200.0;
const NCCL_STEPS: f64 = 8.0;
/// The smallest slice a chain pipeline is cut into.
const MIN_SLICE: f64 = 8192.0;
/// NCCL_P2P_LL_THRESHOLD: point-to-point messages up to this size use LL.
const P2P_LL_THRESHOLD: f64 = 16384.0;

/// A communicator over a set of GPUs, ranks in list order.
#[derive(Debug, Clone)]
pub struct Comm {
    pub members: Vec<Endpoint>,
    /// Ranks of each node in the communicator, nodes in order of first appearance.
    nodes: Vec<Vec<u32>>,
    node_of: Vec<u32>,
    pub tune: tuning::Shape,
    spec: NcclSpec,
    /// CollNet was enabled but the switches had no aggregation tree left for it.
    collnet_refused: bool,
}

/// One transfer of a planned collective: `wire_bytes` from rank `from` to rank `to`, at most
/// `cap` bytes/s (infinite: no cap).
#[derive(Debug, Clone, PartialEq)]
pub struct Edge {
    pub from: u32,
    pub to: u32,
    pub wire_bytes: f64,
    pub cap: f64,
}

/// A collective as transfers plus fixed times.
#[derive(Debug, Clone, PartialEq)]
pub struct Plan {
    /// The algorithm and protocol (meaningless when `skipped`).
    pub algo: Algo,
    pub proto: Proto,
    /// NCCL returned at once without launching anything: a collective of count 0.
    pub skipped: bool,
    /// NCCL's latency term, paid before the transfers start.
    pub latency_s: f64,
    /// Pipeline fill of chains, paid after the transfers end.
    pub fill_s: f64,
    pub edges: Vec<Edge>,
    /// What NCCL's cost model predicts, in us (for reports).
    pub predicted_us: f64,
}

impl Plan {
    /// What NCCL does with a collective of count 0: return at once (`taskAppend` drops it,
    /// and no kernel runs); a collective over one rank is a local copy, free here too.
    /// Point-to-point calls of 0 bytes still meet their peer.
    /// Simplified: members are released when the last one arrives, where NCCL would not
    /// make them wait for each other.
    fn skipped() -> Plan {
        Plan {
            algo: Algo::Ring,
            proto: Proto::Simple,
            skipped: true,
            latency_s: 0.0,
            fill_s: 0.0,
            edges: Vec::new(),
            predicted_us: 0.0,
        }
    }
}

impl Comm {
    /// Builds the communicator: reads link bandwidths off the platform's routes and sizes the
    /// channels as NCCL's topology search would, unless `spec.channels` says.
    pub fn new(
        members: Vec<Endpoint>,
        spec: &NcclSpec,
        topo: &mut Topology,
        gpu_model: &str,
    ) -> Result<Comm, String> {
        if members.is_empty() {
            return Err("an NCCL communicator needs at least one GPU".into());
        }
        let Layout::Cluster(layout) = &topo.layout else {
            return Err("NCCL needs a Cluster platform (nodes of GPUs)".into());
        };
        let (nvlink, nics) = (layout.nvlink != NvLayout::None, layout.nics.max(1));
        let multicast = layout.multicast;
        let (nodes, node_of) = group_by_node(&members)?;
        let generation = Gen::of_model(gpu_model);
        let per_node = nodes.iter().map(Vec::len).max().unwrap_or(1) as u32;
        let (intra_total, inter_total) =
            ring_totals(&members, &nodes, spec, topo, nvlink, nics.min(per_node))?;
        let channels = match spec.channels {
            Some(0) => return Err("nccl.channels: expected at least 1".into()),
            Some(c) => c.min(64),
            None => auto_channels(intra_total.min(inter_total), generation, nodes.len(), nics),
        };
        let per_channel = |total: f64| (total / channels as f64).min(generation.max_channel_bw());
        let bw_intra = per_channel(finite_or(intra_total, inter_total));
        let bw_inter = per_channel(finite_or(inter_total, intra_total));
        let intra_hw = if nvlink { Hw::NvLink } else { Hw::Pci };
        let totals = Totals {
            intra: intra_total,
            inter: inter_total,
            heads: nics.min(per_node),
        };
        let more = features(
            spec,
            generation,
            multicast,
            (nodes.len() as u32, per_node),
            totals,
        );
        Ok(Comm {
            tune: tuning::Shape {
                ranks: members.len() as u32,
                nodes: nodes.len() as u32,
                channels,
                bw_intra: if bw_intra.is_finite() { bw_intra } else { 1.0 },
                bw_inter: if bw_inter.is_finite() { bw_inter } else { 1.0 },
                generation,
                intra_hw,
                amd_cpu: spec.amd_cpu,
                ll128: intra_hw == Hw::NvLink,
                more,
            },
            members,
            nodes,
            node_of,
            spec: spec.clone(),
            collnet_refused: false,
        })
    }

    pub fn size(&self) -> u32 {
        self.members.len() as u32
    }

    /// The communicator would run CollNet: it needs an aggregation tree in the switches.
    pub fn wants_collnet(&self) -> bool {
        self.tune.more.collnet.is_some()
    }

    /// The switches have no aggregation tree left: NCCL falls back to its other algorithms,
    /// as it does when SHARP cannot allocate a communicator's resources.
    pub fn refuse_collnet(&mut self) {
        self.tune.more.collnet = None;
        self.collnet_refused = true;
    }

    /// Transfers to a GPU on another rail go through the NVLink peer on that rail (PXN).
    pub fn pxn(&self) -> bool {
        self.spec.pxn
    }

    /// Plans one call: NCCL's choice of algorithm and protocol (or the forced ones), then the
    /// transfers.
    pub fn plan(&self, call: &NcclCall) -> Result<Plan, String> {
        let n = self.size();
        let bytes = call.bytes.0;
        if call.root >= n {
            return Err(format!(
                "NCCL {}: root {} is not a rank (the communicator has {n})",
                call.op.name(),
                call.root
            ));
        }
        // One rank moves nothing across the fabric: NCCL runs a local copy
        // (ncclLaunchOneRank), which this model leaves free, as it leaves reductions free.
        if (bytes == 0.0 && call.op != Coll::SendRecv) || n == 1 {
            return Ok(Plan::skipped());
        }
        if matches!(call.op, Coll::AllToAll | Coll::SendRecv) {
            return Ok(self.plan_p2p(call));
        }
        let (algo, proto, predicted_us) =
            tuning::choose(call.op, bytes, &self.tune, self.spec.algo, self.spec.proto)
                .ok_or_else(|| {
                    let why = if self.collnet_refused {
                        " (the switches hold two CollNet aggregation trees, both taken by \
                         earlier communicators)"
                    } else {
                        ""
                    };
                    format!(
                        "NCCL {} cannot run with algorithm {} and protocol {}{why}",
                        call.op.name(),
                        self.spec.algo.map_or("any", |a| a.name()),
                        self.spec.proto.map_or("any", |p| p.name())
                    )
                })?;
        let tune = tuning::Shape {
            ll128: self.tune.ll128 || proto == Proto::LL128,
            ..self.tune
        };
        let (edges, chain_hops) = match self.switch_transfers(call, algo, &tune) {
            Some(transfers) => (self.transfer_edges(transfers, proto), 0),
            None => self.edges(call, algo, proto, &tune),
        };
        let fill_s = self.fill_s(call.op, bytes, (algo, proto), &tune, chain_hops);
        Ok(Plan {
            algo,
            proto,
            skipped: false,
            latency_s: tuning::latency_us(call.op, algo, proto, &tune) * 1e-6,
            fill_s,
            edges,
            predicted_us,
        })
    }

    /// The transfers of one call by (`algo`, `proto`): per channel, every edge of its ring
    /// (or chain from the root, for Broadcast and Reduce) or both ways along its tree, each
    /// carrying the bytes it carries over the collective; and the hops of the longest chain
    /// (for the pipeline's fill).
    fn edges(
        &self,
        call: &NcclCall,
        algo: Algo,
        proto: Proto,
        tune: &tuning::Shape,
    ) -> (Vec<Edge>, u32) {
        let n = self.size();
        let (ch, per_ch) = (tune.channels, call.bytes.0 / tune.channels as f64);
        let cap_data = tuning::channel_cap(algo, proto, tune) * 1e9;
        let mut edges = Vec::new();
        let push = |edges: &mut Vec<Edge>, from: u32, to: u32, data: f64| {
            let wire = self.wire_factor(from, to, proto);
            edges.push(Edge {
                from,
                to,
                wire_bytes: data * wire,
                cap: cap_data * wire,
            });
        };
        let mut chain_hops = 0u32;
        for c in 0..ch {
            match (algo, call.op) {
                (Algo::Tree, _) => {
                    for (child, parent) in self.tree_edges(c) {
                        push(&mut edges, child, parent, per_ch);
                        push(&mut edges, parent, child, per_ch);
                    }
                    chain_hops = 2 * self.tree_height();
                }
                (Algo::Ring, Coll::Broadcast | Coll::Reduce) => {
                    for w in self.rooted_ring(c, call.root).windows(2) {
                        let (a, b) = if call.op == Coll::Broadcast {
                            (w[0], w[1])
                        } else {
                            (w[1], w[0])
                        };
                        push(&mut edges, a, b, per_ch);
                    }
                    chain_hops = n - 1;
                }
                (_, op) => {
                    let share = ring_share(op, n);
                    let ring = self.ring(c);
                    if n > 1 {
                        for k in 0..ring.len() {
                            push(
                                &mut edges,
                                ring[k],
                                ring[(k + 1) % ring.len()],
                                per_ch * share,
                            );
                        }
                    }
                }
            }
        }
        (edges, chain_hops)
    }

    /// The transfers of NVLS, NVLSTree, PAT and CollNet ([`algos`]); `None` for rings and
    /// trees.
    fn switch_transfers(
        &self,
        call: &NcclCall,
        algo: Algo,
        tune: &tuning::Shape,
    ) -> Option<Vec<Transfer>> {
        let bytes = call.bytes.0;
        let nvls_eff = tune.generation.nvls_efficiency();
        Some(match algo {
            Algo::Ring | Algo::Tree => return None,
            Algo::NVLS if self.nodes.len() > 1 => algos::nvls_collnet(&self.nodes, bytes, nvls_eff),
            Algo::NVLS => algos::nvls(&self.nodes, call.op, bytes, nvls_eff),
            Algo::NVLSTree => algos::nvls_tree(&self.nodes, bytes, nvls_eff),
            Algo::PAT => algos::pat(self.size(), bytes, tuning::PAT_EFFICIENCY),
            Algo::CollNetDirect => algos::collnet_direct(&self.nodes, bytes),
            Algo::CollNetChain => {
                let heads = tune.more.collnet.map_or(1, |g| g.channels);
                algos::collnet_chain(&self.nodes, bytes, heads)
            }
        })
    }

    /// Edges of transfers: their data on the wire at the protocol's, the links' and the
    /// algorithm's efficiency, uncapped.
    fn transfer_edges(&self, transfers: Vec<Transfer>, proto: Proto) -> Vec<Edge> {
        transfers
            .into_iter()
            .map(|t| Edge {
                from: t.from,
                to: t.to,
                wire_bytes: t.data * self.wire_factor(t.from, t.to, proto) / t.efficiency,
                cap: f64::INFINITY,
            })
            .collect()
    }

    /// The pipeline fill of a chain of `chain_hops` hops: the first slice crossing all but
    /// the last hop at one channel's rate (NCCL shrinks the slices of smaller collectives so
    /// the chain stays full).
    fn fill_s(
        &self,
        op: Coll,
        bytes: f64,
        (algo, proto): (Algo, Proto),
        tune: &tuning::Shape,
        chain_hops: u32,
    ) -> f64 {
        let ch = tune.channels;
        let per_ch = bytes / ch as f64;
        let cap_data = tuning::channel_cap(algo, proto, tune) * 1e9;
        let slice = match proto {
            Proto::LL => LL_BUFF / NCCL_STEPS * Proto::LL.wire_efficiency(),
            Proto::LL128 => LL128_BUFF / NCCL_STEPS * Proto::LL128.wire_efficiency(),
            Proto::Simple => self.spec.buffsize.0 / NCCL_STEPS,
        };
        let channel_rate = (tuning::bus_bw(op, algo, proto, tune) / ch as f64 * 1e9).min(cap_data);
        // NCCL shrinks the chunks of smaller collectives so that a chain pipeline stays full
        // (enqueue.cc); halve the slice until the chain holds two slices per hop.
        let mut slice = slice.min(per_ch);
        while per_ch / slice < 2.0 * chain_hops as f64 && slice > MIN_SLICE {
            slice /= 2.0;
        }
        if chain_hops > 1 && channel_rate > 0.0 {
            (chain_hops - 1) as f64 * slice / channel_rate
        } else {
            0.0
        }
    }

    /// Plans a group of calls launched together (`ncclGroupStart/End`): their transfers run at
    /// once, after the longest latency, and the longest fill ends it.
    pub fn plan_group(&self, calls: &[NcclCall]) -> Result<Plan, String> {
        let mut merged: Option<Plan> = None;
        for call in calls {
            let p = self.plan(call)?;
            merged = Some(match merged {
                None => p,
                Some(mut m) => {
                    if m.skipped {
                        (m.algo, m.proto) = (p.algo, p.proto);
                    }
                    m.skipped &= p.skipped;
                    m.latency_s = m.latency_s.max(p.latency_s);
                    m.fill_s = m.fill_s.max(p.fill_s);
                    m.predicted_us = m.predicted_us.max(p.predicted_us);
                    m.edges.extend(p.edges);
                    m
                }
            });
        }
        merged.ok_or_else(|| "an NCCL group needs at least one call".to_string())
    }

    /// AllToAll and SendRecv: NCCL's grouped point-to-point, one transfer per pair, LL up to
    /// 16 KiB per peer and Simple above, no channel cap.
    fn plan_p2p(&self, call: &NcclCall) -> Plan {
        let n = self.size();
        let per_peer = match call.op {
            Coll::AllToAll => call.bytes.0 / n as f64,
            _ => call.bytes.0,
        };
        let proto = self.p2p_proto(per_peer);
        let mut edges = Vec::new();
        let mut push = |from: u32, to: u32| {
            if from != to {
                edges.push(Edge {
                    from,
                    to,
                    wire_bytes: per_peer * self.wire_factor(from, to, proto),
                    cap: f64::INFINITY,
                });
            }
        };
        match call.op {
            Coll::AllToAll => {
                for i in 0..n {
                    for j in 0..n {
                        push(i, j);
                    }
                }
            }
            _ => {
                for i in 0..n {
                    push(i, (i as i64 + call.peer as i64).rem_euclid(n as i64) as u32);
                }
            }
        }
        self.p2p_plan(call.op, proto, edges)
    }

    /// A point-to-point plan: NCCL's latency for `op` with `proto`, then the edges at once;
    /// NCCL's model predicts the busiest edge at the slower of the two bandwidths.
    fn p2p_plan(&self, op: Coll, proto: Proto, edges: Vec<Edge>) -> Plan {
        let latency_us = tuning::latency_us(op, Algo::Ring, proto, &self.tune);
        let busiest = edges
            .iter()
            .map(|e| e.wire_bytes)
            .fold(0.0, f64::max)
            .max(1.0);
        Plan {
            algo: Algo::Ring,
            proto,
            skipped: false,
            latency_s: latency_us * 1e-6,
            fill_s: 0.0,
            predicted_us: latency_us
                + busiest / (1000.0 * self.tune.bw_inter.min(self.tune.bw_intra)),
            edges,
        }
    }

    /// The protocol of a point-to-point transfer of `bytes`: LL up to NCCL_P2P_LL_THRESHOLD,
    /// Simple above, unless forced.
    fn p2p_proto(&self, bytes: f64) -> Proto {
        self.spec.proto.unwrap_or(if bytes <= P2P_LL_THRESHOLD {
            Proto::LL
        } else {
            Proto::Simple
        })
    }

    /// One ncclSend of `bytes` from rank `from` to rank `to` (its ncclRecv posted): one
    /// transfer with NCCL's point-to-point protocol and latency, as in a grouped SendRecv.
    pub fn plan_send(&self, from: u32, to: u32, bytes: f64) -> Result<Plan, String> {
        let n = self.size();
        if from >= n || to >= n {
            return Err(format!(
                "NCCL send from rank {from} to rank {to}: the communicator has {n} ranks"
            ));
        }
        let proto = self.p2p_proto(bytes);
        let edges = if from == to {
            Vec::new()
        } else {
            vec![Edge {
                from,
                to,
                wire_bytes: bytes * self.wire_factor(from, to, proto),
                cap: f64::INFINITY,
            }]
        };
        Ok(self.p2p_plan(Coll::SendRecv, proto, edges))
    }

    /// Channel `c`'s ring: nodes in order, each node's GPUs rotated by `c`.
    pub fn ring(&self, c: u32) -> Vec<u32> {
        let mut ring = Vec::with_capacity(self.members.len());
        for ranks in &self.nodes {
            let k = ranks.len();
            ring.extend((0..k).map(|i| ranks[(i + c as usize) % k]));
        }
        ring
    }

    /// Channel `c`'s ring rotated to start at `root` (a chain from the root, for Broadcast
    /// and Reduce).
    fn rooted_ring(&self, c: u32, root: u32) -> Vec<u32> {
        let n = self.size();
        let ring = self.ring(c);
        let at = ring.iter().position(|&r| r == root).unwrap_or(0);
        (0..n as usize)
            .map(|k| ring[(at + k) % n as usize])
            .collect()
    }

    /// Channel `c`'s tree as (child, parent) pairs: a chain in each node whose head links to
    /// the head of the parent node. The first half of the channels use the heap-ordered binary
    /// tree of nodes, the second half its mirror image, so that a node that is a leaf in one
    /// is inside the other (NCCL's double binary tree); channel `c` and `c + half` share their
    /// chain, hence their head GPU and NIC, so every NIC carries both trees alike.
    pub fn tree_edges(&self, c: u32) -> Vec<(u32, u32)> {
        let half = (self.tune.channels / 2).max(1);
        let (rot, mirrored) = (c % half, (c / half) % 2 == 1);
        let heads: Vec<u32> = self.ring_heads(rot);
        let mut edges = Vec::new();
        for ranks in &self.nodes {
            let k = ranks.len();
            let chain: Vec<u32> = (0..k).map(|i| ranks[(i + rot as usize) % k]).collect();
            for w in chain.windows(2) {
                edges.push((w[1], w[0]));
            }
        }
        for (child, parent) in algos::node_tree(self.nodes.len(), mirrored) {
            edges.push((heads[child], heads[parent]));
        }
        edges
    }

    fn ring_heads(&self, c: u32) -> Vec<u32> {
        self.nodes.iter().map(|r| r[c as usize % r.len()]).collect()
    }

    /// Hops from the deepest GPU to the root: the chain plus the tree of nodes.
    fn tree_height(&self) -> u32 {
        let per_node = self.nodes.iter().map(Vec::len).max().unwrap_or(1) as u32;
        let m = self.nodes.len() as u32;
        per_node - 1 + if m > 1 { m.ilog2() } else { 0 }
    }

    /// Wire bytes per data byte from `from` to `to`: the protocol's flags, and the share of
    /// line rate NCCL's copies reach on NVLink or the network.
    fn wire_factor(&self, from: u32, to: u32, proto: Proto) -> f64 {
        let link = if self.node_of[from as usize] != self.node_of[to as usize] {
            self.spec.net_efficiency
        } else if self.tune.intra_hw == Hw::NvLink {
            self.spec.nvlink_efficiency
        } else {
            1.0
        };
        1.0 / (proto.wire_efficiency() * link)
    }
}

/// The ranks of each node, nodes in order of first appearance, and each rank's node (its
/// index in that order).
fn group_by_node(members: &[Endpoint]) -> Result<(Vec<Vec<u32>>, Vec<u32>), String> {
    let mut nodes: Vec<Vec<u32>> = Vec::new();
    let mut node_ids: Vec<u32> = Vec::new();
    let mut node_of = Vec::with_capacity(members.len());
    for (r, m) in members.iter().enumerate() {
        let Endpoint::Gpu { node, .. } = *m else {
            return Err(format!("NCCL rank {r} is not a GPU"));
        };
        let k = match node_ids.iter().position(|&n| n == node) {
            Some(k) => k,
            None => {
                node_ids.push(node);
                nodes.push(Vec::new());
                nodes.len() - 1
            }
        };
        nodes[k].push(r as u32);
        node_of.push(k as u32);
    }
    Ok((nodes, node_of))
}

/// Whole-ring bandwidth inside a node (between its first two GPUs, at NCCL's NVLink
/// efficiency) and between nodes (first GPUs of the first two nodes, at the network efficiency,
/// times the NIC `rails` a node's GPUs use), in GB/s of data; infinite where there is none.
fn ring_totals(
    members: &[Endpoint],
    nodes: &[Vec<u32>],
    spec: &NcclSpec,
    topo: &mut Topology,
    nvlink: bool,
    rails: u32,
) -> Result<(f64, f64), String> {
    let alone = |topo: &mut Topology, a: Endpoint, b: Endpoint| -> Result<f64, String> {
        let route = topo.route(a, b)?;
        Ok(topo.bottleneck(&route))
    };
    // Whole-ring bandwidth inside a node and between nodes, in GB/s of data.
    let intra_eff = if nvlink { spec.nvlink_efficiency } else { 1.0 };
    let intra_total = match nodes.iter().find(|n| n.len() > 1) {
        Some(n) => alone(topo, members[n[0] as usize], members[n[1] as usize])? * intra_eff / 1e9,
        None => f64::INFINITY,
    };
    let inter_total = if nodes.len() > 1 {
        let a = members[nodes[0][0] as usize];
        let b = members[nodes[1][0] as usize];
        alone(topo, a, b)? * spec.net_efficiency * rails as f64 / 1e9
    } else {
        f64::INFINITY
    };
    Ok((intra_total, inter_total))
}

/// The whole-ring bandwidths a communicator's graphs are built from (GB/s of data; infinite
/// where there is none) and the NIC heads per node.
struct Totals {
    intra: f64,
    inter: f64,
    heads: u32,
}

/// The algorithms beyond ring and tree that `spec` and the platform allow, with their graphs:
/// NVLS where the NVSwitch multicasts and the GPUs have NVLS (Hopper on), with two GPUs or
/// more per node, splitting the node's NVLink and the network over its own channels; CollNet
/// across nodes where enabled, a channel per NIC head at one NIC's rate; PAT where enabled
/// (one GPU per node is checked per call).
fn features(
    spec: &NcclSpec,
    g: Gen,
    multicast: bool,
    (nodes, per_node): (u32, u32),
    t: Totals,
) -> Features {
    let intra = finite_or(t.intra, 1.0);
    let nvls = (spec.nvls && multicast && g.nvls_efficiency() > 0.0 && per_node > 1).then(|| {
        let channels = g.nvls_channels(nodes);
        Graph {
            channels,
            bw_intra: intra / channels as f64,
            bw_inter: finite_or(t.inter, intra) / channels as f64,
        }
    });
    let collnet = (spec.collnet && nodes > 1).then(|| {
        let channels = t.heads.max(1);
        let per_nic = finite_or(t.inter, 1.0) / channels as f64;
        Graph {
            channels,
            bw_intra: per_nic,
            bw_inter: per_nic,
        }
    });
    Features {
        nvls,
        collnet,
        pat: spec.pat,
    }
}

/// `a`, or `b` where `a` is infinite (no such link).
fn finite_or(a: f64, b: f64) -> f64 {
    if a.is_finite() { a } else { b }
}

/// The share of a channel's bytes every ring edge carries: 2(n-1)/n for AllReduce, (n-1)/n
/// for AllGather and ReduceScatter.
fn ring_share(op: Coll, n: u32) -> f64 {
    match op {
        Coll::AllReduce => 2.0 * (n - 1) as f64 / n as f64,
        _ => (n - 1) as f64 / n as f64,
    }
}

/// Channels as NCCL's search sizes them: enough channels of one NVLink's speed to fill the
/// bottleneck, an even count, at least 2, a multiple of the NICs across nodes, at most 32.
fn auto_channels(total_gbps: f64, generation: Gen, nodes: usize, nics: u32) -> u32 {
    let mut c = if total_gbps.is_finite() {
        (total_gbps / generation.nvlink_channel_bw()).ceil() as u32
    } else {
        2
    };
    c = c.max(2).next_multiple_of(2);
    if nodes > 1 {
        c = c.next_multiple_of(nics);
    }
    c.min(32)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::platform::build::topology;
    use hetsim_schema::load::from_ron;
    use hetsim_schema::scenario::PlatformSpec;

    /// `nodes` nodes of `gpus` GPUs on NVLink pairs, one NIC each, on a star.
    fn comm(nodes: u32, gpus: u32, spec: &str) -> Comm {
        let text = format!(
            r#"Cluster(
            nodes: {nodes},
            node: NodeSpec(gpus: {gpus}, nvlink: Pairs(bandwidth: "75GB/s", latency: "1us"),
                           pcie: PcieSpec(up: "12GB/s", down: "11GB/s", bus: "20GB/s", latency: "1us"),
                           nic: NicSpec(bandwidth: "12.5GB/s", latency: "500ns")),
            network: Star(bandwidth: "12.5GB/s", latency: "100ns"),
        )"#
        );
        let platform: PlatformSpec = from_ron(&text, "test", "platform").unwrap();
        let mut topo = topology(&platform).unwrap();
        let members = (0..nodes)
            .flat_map(|node| (0..gpus).map(move |gpu| Endpoint::Gpu { node, gpu }))
            .collect();
        let spec: NcclSpec = from_ron(spec, "test", "nccl").unwrap();
        Comm::new(members, &spec, &mut topo, "A100").unwrap()
    }

    fn allreduce(bytes: f64) -> NcclCall {
        from_ron(&format!("(op: AllReduce, bytes: {bytes})"), "test", "call").unwrap()
    }

    #[test]
    fn a_ring_of_n_gpus_on_c_channels_is_n_times_c_edges_each_carrying_its_share() {
        // 2 nodes x 2 GPUs, 4 channels, ring forced: 4 x 4 edges; an allreduce of 8 MiB
        // moves 2 (n - 1) / n of a channel's quarter over every edge.
        let c = comm(
            2,
            2,
            "(channels: Some(4), algo: Some(Ring), proto: Some(Simple))",
        );
        let bytes = 8.0 * 1048576.0;
        let plan = c.plan(&allreduce(bytes)).unwrap();
        assert_eq!(plan.edges.len(), 16);
        let data = bytes / 4.0 * 2.0 * 3.0 / 4.0;
        for e in &plan.edges {
            let across = c.node_of[e.from as usize] != c.node_of[e.to as usize];
            let eff = if across { 0.96 } else { 0.8 };
            assert!((e.wire_bytes - data / eff).abs() < 1e-6, "{e:?}");
        }
        // Channel 1's ring rotates each node's GPUs: 1 0 3 2.
        assert_eq!(c.ring(1), vec![1, 0, 3, 2]);
    }

    #[test]
    fn the_double_binary_tree_has_a_chain_per_node_and_mirrored_node_trees() {
        // 3 nodes x 2 GPUs, 2 channels: channel 0 is the heap-ordered tree of nodes (1 and 2
        // under 0), channel 1 its mirror image (1 and 0 under 2); each node a chain of 2.
        let c = comm(
            3,
            2,
            "(channels: Some(2), algo: Some(Tree), proto: Some(Simple))",
        );
        assert_eq!(
            c.tree_edges(0),
            vec![(1, 0), (3, 2), (5, 4), (2, 0), (4, 0)]
        );
        assert_eq!(
            c.tree_edges(1),
            vec![(1, 0), (3, 2), (5, 4), (2, 4), (0, 4)]
        );
        // Up and down every (child, parent) pair on both channels.
        let plan = c.plan(&allreduce(1048576.0)).unwrap();
        assert_eq!(plan.edges.len(), 2 * 2 * 5);
    }

    #[test]
    fn a_collective_of_count_zero_is_skipped_but_a_zero_byte_send_still_meets_its_peer() {
        // NCCL's taskAppend returns at once for a collective of count 0: no latency, no
        // transfer. A send/recv of 0 bytes is still a point-to-point task.
        let c = comm(2, 2, "()");
        let plan = c.plan(&allreduce(0.0)).unwrap();
        assert!(plan.skipped && plan.edges.is_empty());
        assert_eq!((plan.latency_s, plan.fill_s), (0.0, 0.0));
        let send: NcclCall =
            from_ron("(op: SendRecv, bytes: 0, root: 0, peer: 1)", "test", "call").unwrap();
        let p2p = c.plan(&send).unwrap();
        assert!(!p2p.skipped && p2p.latency_s > 0.0);
        // A group is skipped only when all its calls are, and takes the others' choice.
        let g = c.plan_group(&[allreduce(0.0), allreduce(1024.0)]).unwrap();
        assert!(!g.skipped && g.latency_s > 0.0);
    }

    #[test]
    fn a_group_runs_its_calls_edges_at_once_after_the_longest_latency() {
        let c = comm(
            1,
            2,
            "(channels: Some(2), algo: Some(Ring), proto: Some(Simple))",
        );
        let (small, big) = (allreduce(1024.0), allreduce(1048576.0));
        let (a, b) = (c.plan(&small).unwrap(), c.plan(&big).unwrap());
        let g = c.plan_group(&[small, big]).unwrap();
        assert_eq!(g.edges.len(), a.edges.len() + b.edges.len());
        assert_eq!(g.latency_s, a.latency_s.max(b.latency_s));
        assert!(c.plan_group(&[]).is_err());
    }
}
