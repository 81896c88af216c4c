//! A rank's trace as the executor reads it: each node's work, plain data, and the
//! dependencies between nodes, in the order ASTRA-sim's feeder issues them (by node id).
//!
//! Rules, each written once here:
//! - A node depends on its `data_deps` (the Chakra feeder's dependencies); `ctrl_deps` name
//!   the parent operator in PyTorch-converted traces, not an order, and are not read.
//! - COMP_NODE: a CPU operator of `duration_micros` when `is_cpu_op`, else a GPU kernel of
//!   `duration_micros`, or when that is 0 and `num_ops` is given, a roofline time:
//!   max(num_ops / peak flops, tensor_size / memory bandwidth).
//! - COMM_COLL_NODE with `comm_type`: an NCCL collective of `comm_size` bytes (NCCL's user
//!   buffer: the whole gathered buffer for all-gather and reduce-scatter, what each rank sends
//!   for all-to-all), over the group `pg_name` names; BARRIER is PyTorch's, an all-reduce of
//!   one 4-byte element; GATHER and SCATTER are not NCCL collectives (an error). Without a
//!   `comm_type`, a CPU-side node (`is_cpu_op`) is a host operator of its duration.
//! - COMM_SEND_NODE / COMM_RECV_NODE: `comm_dst` / `comm_src`, `comm_size`, `comm_tag` (0).
//! - MEM_LOAD_NODE / MEM_STORE_NODE: a host-to-device / device-to-host copy of `tensor_size`.
//! - METADATA_NODE and types this reader does not know: nothing to run, counted.

use std::collections::{BTreeMap, HashMap};

use chakra::{CollectiveCommType, EtFile, Node, NodeType};
use hetsim_schema::cuda::Coll;

/// What one node asks of its rank.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Work {
    /// A GPU kernel of this many seconds (before `compute_scale`).
    Kernel(f64),
    /// A CPU operator on the rank's host thread, seconds.
    Host(f64),
    /// An NCCL collective over group `group` (an index into [`Graph::groups`]).
    Coll {
        op: Coll,
        bytes: f64,
        root: u32,
        group: u32,
    },
    Send {
        peer: u32,
        bytes: f64,
        tag: i64,
    },
    Recv {
        peer: u32,
        bytes: f64,
        tag: i64,
    },
    /// MEM_LOAD (to the device) or MEM_STORE (to the host).
    Copy {
        to_device: bool,
        bytes: f64,
    },
    /// Nothing to run: done as soon as its dependencies are.
    Nothing,
}

/// A trace ready to run: nodes sorted by id (the issue order), dependencies as counts and
/// children lists.
#[derive(Debug, Clone, Default)]
pub struct Graph {
    pub names: Vec<String>,
    pub work: Vec<Work>,
    /// Dependencies of each node.
    pub deps: Vec<u32>,
    /// Children of node i: `children[child_at[i]..child_at[i + 1]]`.
    children: Vec<u32>,
    child_at: Vec<u32>,
    /// The process groups collectives name (`pg_name`; "" when absent), in order of first use.
    pub groups: Vec<String>,
    /// Nodes with nothing to run, by type name.
    pub skipped: BTreeMap<String, u64>,
    /// Attributes the rules do not read, by name: how many nodes carry each.
    pub ignored: BTreeMap<String, u64>,
}

/// The attributes the rules read; any other is counted in [`Graph::ignored`].
pub const READ_ATTRIBUTES: [&str; 10] = [
    "is_cpu_op",
    "comm_type",
    "comm_size",
    "comm_src",
    "comm_dst",
    "comm_tag",
    "pg_name",
    "root",
    "num_ops",
    "tensor_size",
];

/// The GPU's peaks a roofline time is read against: flop/s and memory bytes/s.
#[derive(Debug, Clone, Copy)]
pub struct Peaks {
    pub flops: f64,
    pub mem_bw: f64,
}

impl Graph {
    pub fn len(&self) -> usize {
        self.work.len()
    }

    pub fn is_empty(&self) -> bool {
        self.work.is_empty()
    }

    pub fn children(&self, node: u32) -> &[u32] {
        let (a, b) = (
            self.child_at[node as usize],
            self.child_at[node as usize + 1],
        );
        &self.children[a as usize..b as usize]
    }

    /// Reads a trace; errors name the file and the node.
    pub fn build(et: &EtFile, ranks: u32, peaks: Peaks) -> Result<Graph, String> {
        let file = et.path.display();
        let mut order: Vec<usize> = (0..et.nodes.len()).collect();
        order.sort_by_key(|&i| et.nodes[i].id);
        let mut index = HashMap::with_capacity(order.len());
        for (k, &i) in order.iter().enumerate() {
            if index.insert(et.nodes[i].id, k as u32).is_some() {
                return Err(format!(
                    "{file}, node {i}: id {} appears twice",
                    et.nodes[i].id
                ));
            }
        }
        let mut g = Graph::default();
        let mut edges = Vec::new();
        for (k, &i) in order.iter().enumerate() {
            let node = &et.nodes[i];
            let work = work_of(node, ranks, peaks, &mut g.groups)
                .map_err(|e| format!("{file}, node {i} (id {}, {:?}): {e}", node.id, node.name))?;
            if work == Work::Nothing {
                let kind = node
                    .kind
                    .map_or_else(|t| format!("type {t}"), |t| t.name().into());
                *g.skipped.entry(kind).or_default() += 1;
            }
            for (name, _) in &node.attrs {
                if !READ_ATTRIBUTES.contains(&name.as_str()) {
                    *g.ignored.entry(name.clone()).or_default() += 1;
                }
            }
            for dep in &node.data_deps {
                let &d = index.get(dep).ok_or_else(|| {
                    format!(
                        "{file}, node {i} (id {}): data_deps names node {dep}, which the trace does not hold",
                        node.id
                    )
                })?;
                edges.push((d, k as u32));
            }
            g.names.push(node.name.clone());
            g.work.push(work);
        }
        g.link(edges);
        g.check_acyclic().map_err(|k| {
            format!(
                "{file}: node id {} is on a dependency cycle",
                et.nodes[order[k as usize]].id
            )
        })?;
        Ok(g)
    }

    /// Dependency counts and children lists from (parent, child) pairs.
    fn link(&mut self, mut edges: Vec<(u32, u32)>) {
        let n = self.work.len();
        edges.sort_unstable();
        edges.dedup();
        self.deps = vec![0; n];
        self.child_at = vec![0; n + 1];
        for &(p, c) in &edges {
            self.deps[c as usize] += 1;
            self.child_at[p as usize + 1] += 1;
        }
        for i in 0..n {
            self.child_at[i + 1] += self.child_at[i];
        }
        self.children = edges.iter().map(|&(_, c)| c).collect();
    }

    /// Kahn's algorithm; Err(a node left over) when some nodes can never issue.
    fn check_acyclic(&self) -> Result<(), u32> {
        let mut left = self.deps.clone();
        let mut ready: Vec<u32> = (0..self.len() as u32)
            .filter(|&i| left[i as usize] == 0)
            .collect();
        let mut seen = 0;
        while let Some(i) = ready.pop() {
            seen += 1;
            for &c in self.children(i) {
                left[c as usize] -= 1;
                if left[c as usize] == 0 {
                    ready.push(c);
                }
            }
        }
        if seen == self.len() {
            return Ok(());
        }
        Err(left.iter().position(|&l| l > 0).unwrap_or(0) as u32)
    }
}

fn micros(node: &Node) -> f64 {
    node.duration_micros as f64 / 1e6
}

/// A non-negative integer attribute, required.
fn amount(node: &Node, name: &str) -> Result<f64, String> {
    match node.int(name) {
        Some(v) if v >= 0 => Ok(v as f64),
        Some(v) => Err(format!("{name} = {v}: expected 0 or more")),
        None => Err(format!("no {name} attribute")),
    }
}

/// A rank number attribute, required and below `ranks`.
fn rank_attr(node: &Node, name: &str, ranks: u32) -> Result<u32, String> {
    match node.int(name) {
        Some(v) if (0..ranks as i64).contains(&v) => Ok(v as u32),
        Some(v) => Err(format!(
            "{name} = {v}: not a rank (the workload has {ranks})"
        )),
        None => Err(format!("no {name} attribute")),
    }
}

/// The work of one node (the rules in the module's doc).
pub fn work_of(
    node: &Node,
    ranks: u32,
    peaks: Peaks,
    groups: &mut Vec<String>,
) -> Result<Work, String> {
    let Ok(kind) = node.kind else {
        return Ok(Work::Nothing);
    };
    Ok(match kind {
        NodeType::CompNode if node.is_cpu_op() => Work::Host(micros(node)),
        NodeType::CompNode => Work::Kernel(kernel_secs(node, peaks)),
        NodeType::CommCollNode => return collective(node, ranks, groups),
        NodeType::CommSendNode => Work::Send {
            peer: rank_attr(node, "comm_dst", ranks)?,
            bytes: amount(node, "comm_size")?,
            tag: node.int("comm_tag").unwrap_or(0),
        },
        NodeType::CommRecvNode => Work::Recv {
            peer: rank_attr(node, "comm_src", ranks)?,
            bytes: amount(node, "comm_size")?,
            tag: node.int("comm_tag").unwrap_or(0),
        },
        NodeType::MemLoadNode | NodeType::MemStoreNode => Work::Copy {
            to_device: kind == NodeType::MemLoadNode,
            bytes: amount(node, "tensor_size")?,
        },
        _ => Work::Nothing,
    })
}

/// A kernel's time: as traced, or from its work against the GPU's peaks (a roofline).
fn kernel_secs(node: &Node, peaks: Peaks) -> f64 {
    match (node.duration_micros, node.int("num_ops")) {
        (0, Some(ops)) if ops > 0 => {
            let bytes = node.int("tensor_size").unwrap_or(0).max(0) as f64;
            (ops as f64 / peaks.flops).max(bytes / peaks.mem_bw)
        }
        _ => micros(node),
    }
}

fn collective(node: &Node, ranks: u32, groups: &mut Vec<String>) -> Result<Work, String> {
    let kind = node
        .comm_type()
        .map_err(|v| format!("comm_type = {v}: not a collective Chakra defines"))?;
    let Some(kind) = kind else {
        if node.is_cpu_op() {
            return Ok(Work::Host(micros(node)));
        }
        return Err("a GPU-side collective without comm_type".into());
    };
    use CollectiveCommType as C;
    let (op, bytes) = match kind {
        C::AllReduce => (Coll::AllReduce, amount(node, "comm_size")?),
        C::Reduce => (Coll::Reduce, amount(node, "comm_size")?),
        C::AllGather => (Coll::AllGather, amount(node, "comm_size")?),
        C::Broadcast => (Coll::Broadcast, amount(node, "comm_size")?),
        C::AllToAll => (Coll::AllToAll, amount(node, "comm_size")?),
        C::ReduceScatter | C::ReduceScatterBlock => {
            (Coll::ReduceScatter, amount(node, "comm_size")?)
        }
        // c10d's barrier on NCCL: an all-reduce of one 4-byte element.
        C::Barrier => (Coll::AllReduce, 4.0),
        C::Gather | C::Scatter => {
            return Err(format!(
                "{} is not an NCCL collective (PyTorch runs it as sends and receives); not modelled",
                kind.name()
            ));
        }
    };
    let root = match node.int("root") {
        None => 0,
        Some(_) => rank_attr(node, "root", ranks)?,
    };
    let name = node.string("pg_name").unwrap_or("");
    let group = match groups.iter().position(|g| g == name) {
        Some(g) => g,
        None => {
            groups.push(name.to_string());
            groups.len() - 1
        }
    } as u32;
    Ok(Work::Coll {
        op,
        bytes,
        root,
        group,
    })
}

/// A node for unit tests: `n{id}`, `micros` long, with its data dependencies and attributes.
#[cfg(test)]
pub fn test_node(
    id: u64,
    kind: NodeType,
    micros: u64,
    deps: &[u64],
    attrs: &[(&str, chakra::AttrValue)],
) -> Node {
    Node {
        id,
        name: format!("n{id}"),
        kind: Ok(kind),
        data_deps: deps.to_vec(),
        ctrl_deps: vec![],
        start_micros: 0,
        duration_micros: micros,
        attrs: attrs
            .iter()
            .map(|(k, v)| (k.to_string(), v.clone()))
            .collect(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use chakra::AttrValue;

    const PEAKS: Peaks = Peaks {
        flops: 1e12,
        mem_bw: 1e11,
    };

    fn node(id: u64, kind: NodeType, deps: &[u64], attrs: &[(&str, AttrValue)]) -> Node {
        test_node(id, kind, 10, deps, attrs)
    }

    fn et(nodes: Vec<Node>) -> EtFile {
        EtFile {
            path: "t.0.et".into(),
            version: String::new(),
            metadata: vec![],
            nodes,
        }
    }

    fn work(n: &Node) -> Result<Work, String> {
        work_of(n, 8, PEAKS, &mut Vec::new())
    }

    #[test]
    fn compute_nodes_are_kernels_or_host_operators_by_is_cpu_op() {
        let k = node(1, NodeType::CompNode, &[], &[]);
        assert_eq!(work(&k), Ok(Work::Kernel(10e-6)));
        let c = node(
            1,
            NodeType::CompNode,
            &[],
            &[("is_cpu_op", AttrValue::Bool(true))],
        );
        assert_eq!(work(&c), Ok(Work::Host(10e-6)));
    }

    #[test]
    fn a_kernel_without_a_duration_takes_its_roofline_time() {
        let mut k = node(
            1,
            NodeType::CompNode,
            &[],
            &[
                ("num_ops", AttrValue::Int(2_000_000)),
                ("tensor_size", AttrValue::Int(1_000_000)),
            ],
        );
        k.duration_micros = 0;
        // 2e6 flop / 1e12 = 2 us; 1e6 B / 1e11 = 10 us: memory-bound.
        assert_eq!(work(&k), Ok(Work::Kernel(1e-5)));
    }

    #[test]
    fn collectives_map_to_nccl_and_name_their_group() {
        let mut groups = Vec::new();
        let ar = node(
            1,
            NodeType::CommCollNode,
            &[],
            &[
                ("comm_type", AttrValue::Int(0)),
                ("comm_size", AttrValue::Int(1024)),
                ("pg_name", AttrValue::Str("tp".into())),
            ],
        );
        let w = work_of(&ar, 8, PEAKS, &mut groups).unwrap();
        assert_eq!(
            w,
            Work::Coll {
                op: Coll::AllReduce,
                bytes: 1024.0,
                root: 0,
                group: 0
            }
        );
        assert_eq!(groups, vec!["tp".to_string()]);
        let barrier = node(
            1,
            NodeType::CommCollNode,
            &[],
            &[("comm_type", AttrValue::Int(9))],
        );
        assert!(matches!(
            work(&barrier),
            Ok(Work::Coll {
                op: Coll::AllReduce,
                bytes: 4.0,
                ..
            })
        ));
        let gather = node(
            1,
            NodeType::CommCollNode,
            &[],
            &[("comm_type", AttrValue::Int(3))],
        );
        assert!(
            work(&gather)
                .unwrap_err()
                .contains("GATHER is not an NCCL collective")
        );
    }

    #[test]
    fn a_cpu_side_collective_without_a_type_is_a_host_operator() {
        let c = node(
            1,
            NodeType::CommCollNode,
            &[],
            &[("is_cpu_op", AttrValue::Bool(true))],
        );
        assert_eq!(work(&c), Ok(Work::Host(10e-6)));
        let g = node(1, NodeType::CommCollNode, &[], &[]);
        assert!(work(&g).unwrap_err().contains("without comm_type"));
    }

    #[test]
    fn sends_and_receives_need_a_peer_that_is_a_rank() {
        let s = node(
            1,
            NodeType::CommSendNode,
            &[],
            &[
                ("comm_dst", AttrValue::Int(3)),
                ("comm_size", AttrValue::Int(64)),
            ],
        );
        assert_eq!(
            work(&s),
            Ok(Work::Send {
                peer: 3,
                bytes: 64.0,
                tag: 0
            })
        );
        let r = node(
            1,
            NodeType::CommRecvNode,
            &[],
            &[
                ("comm_src", AttrValue::Int(9)),
                ("comm_size", AttrValue::Int(64)),
            ],
        );
        assert!(work(&r).unwrap_err().contains("comm_src = 9: not a rank"));
    }

    #[test]
    fn memory_nodes_are_copies_and_metadata_is_nothing() {
        let l = node(
            1,
            NodeType::MemLoadNode,
            &[],
            &[("tensor_size", AttrValue::Int(8))],
        );
        assert_eq!(
            work(&l),
            Ok(Work::Copy {
                to_device: true,
                bytes: 8.0
            })
        );
        let m = node(1, NodeType::MetadataNode, &[], &[]);
        assert_eq!(work(&m), Ok(Work::Nothing));
    }

    #[test]
    fn nodes_run_in_id_order_with_their_data_dependencies() {
        let g = Graph::build(
            &et(vec![
                node(7, NodeType::CompNode, &[3], &[]),
                node(3, NodeType::CompNode, &[], &[]),
                node(5, NodeType::MetadataNode, &[3], &[]),
            ]),
            1,
            PEAKS,
        )
        .unwrap();
        assert_eq!(g.names, vec!["n3", "n5", "n7"]);
        assert_eq!(g.deps, vec![0, 1, 1]);
        assert_eq!(g.children(0), &[1, 2]);
        assert_eq!(g.skipped.get("METADATA_NODE"), Some(&1));
        assert!(g.ignored.is_empty());
        let mut odd = node(1, NodeType::CompNode, &[], &[("fw_tid", AttrValue::Int(3))]);
        odd.attrs.push(("is_cpu_op".into(), AttrValue::Bool(false)));
        let g = Graph::build(&et(vec![odd]), 1, PEAKS).unwrap();
        assert_eq!(g.ignored.get("fw_tid"), Some(&1));
        assert_eq!(g.ignored.len(), 1);
    }

    #[test]
    fn a_missing_dependency_or_a_cycle_is_an_error_naming_the_node() {
        let e =
            Graph::build(&et(vec![node(1, NodeType::CompNode, &[4], &[])]), 1, PEAKS).unwrap_err();
        assert!(
            e.contains("t.0.et, node 0 (id 1): data_deps names node 4"),
            "{e}"
        );
        let e = Graph::build(
            &et(vec![
                node(1, NodeType::CompNode, &[2], &[]),
                node(2, NodeType::CompNode, &[1], &[]),
            ]),
            1,
            PEAKS,
        )
        .unwrap_err();
        assert!(e.contains("is on a dependency cycle"), "{e}");
    }
}
