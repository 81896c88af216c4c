//! What a trace holds: nodes per type, compute time (GPU kernels and CPU operators), bytes
//! and time per collective kind and process group, and the longest path through the data
//! dependencies (the critical path of the compute DAG, weighted by each node's duration).

use std::collections::{BTreeMap, HashMap};

use crate::{CollectiveCommType, EtFile, NodeType};

#[derive(Debug, Clone, Default, PartialEq)]
pub struct Stats {
    /// Nodes by type name (unknown types as `type N`).
    pub nodes: BTreeMap<String, u64>,
    /// GPU kernels (COMP_NODE without `is_cpu_op`): count and microseconds.
    pub kernels: (u64, u64),
    /// CPU operators (COMP_NODE with `is_cpu_op`): count and microseconds.
    pub cpu_ops: (u64, u64),
    /// Collectives by kind and process group (`pg_name`, "" when absent): count, bytes, the
    /// largest size, microseconds as traced. CPU-side collective nodes without a
    /// `comm_type` are under the kind `host op`.
    pub collectives: BTreeMap<(String, String), (u64, u64, u64, u64)>,
    /// Point-to-point nodes (send and receive): count and bytes.
    pub p2p: (u64, u64),
    /// The longest path through `data_deps` in microseconds, and its nodes.
    pub critical_path: (u64, usize),
    /// Dependencies on ids no node has.
    pub dangling: u64,
}

fn type_name(k: &Result<NodeType, i32>) -> String {
    match k {
        Ok(t) => t.name().to_string(),
        Err(n) => format!("type {n}"),
    }
}

/// The statistics of one rank's trace; an unknown `comm_type` value is an error naming the
/// node.
pub fn stats(et: &EtFile) -> Result<Stats, String> {
    let mut s = Stats::default();
    for (i, n) in et.nodes.iter().enumerate() {
        *s.nodes.entry(type_name(&n.kind)).or_default() += 1;
        match n.kind {
            Ok(NodeType::CompNode) if n.is_cpu_op() => {
                s.cpu_ops.0 += 1;
                s.cpu_ops.1 += n.duration_micros;
            }
            Ok(NodeType::CompNode) => {
                s.kernels.0 += 1;
                s.kernels.1 += n.duration_micros;
            }
            Ok(NodeType::CommCollNode) => {
                let kind = n
                    .comm_type()
                    .map_err(|v| {
                        format!(
                            "node {i} (id {}): comm_type {v} is not a Chakra collective",
                            n.id
                        )
                    })?
                    .map_or("host op".to_string(), |c: CollectiveCommType| {
                        c.name().to_string()
                    });
                let pg = n.string("pg_name").unwrap_or("").to_string();
                let bytes = n.comm_size().unwrap_or(0).max(0) as u64;
                let e = s.collectives.entry((kind, pg)).or_default();
                e.0 += 1;
                e.1 += bytes;
                e.2 = e.2.max(bytes);
                e.3 += n.duration_micros;
            }
            Ok(NodeType::CommSendNode | NodeType::CommRecvNode) => {
                s.p2p.0 += 1;
                s.p2p.1 += n.comm_size().unwrap_or(0).max(0) as u64;
            }
            _ => {}
        }
    }
    (s.critical_path, s.dangling) = critical_path(et);
    Ok(s)
}

/// The longest path through `data_deps`, each node weighing its duration: (microseconds,
/// nodes on it), and how many dependencies name no node. Nodes are visited in dependency
/// order whatever their order in the file; a cycle leaves its nodes out.
fn critical_path(et: &EtFile) -> ((u64, usize), u64) {
    let index: HashMap<u64, usize> = et
        .nodes
        .iter()
        .enumerate()
        .map(|(i, n)| (n.id, i))
        .collect();
    let n = et.nodes.len();
    let mut indegree = vec![0u32; n];
    let mut children: Vec<Vec<usize>> = vec![Vec::new(); n];
    let mut dangling = 0;
    for (i, node) in et.nodes.iter().enumerate() {
        for d in &node.data_deps {
            match index.get(d) {
                Some(&j) => {
                    children[j].push(i);
                    indegree[i] += 1;
                }
                None => dangling += 1,
            }
        }
    }
    let mut best: Vec<(u64, usize)> = et.nodes.iter().map(|x| (x.duration_micros, 1)).collect();
    let mut ready: Vec<usize> = (0..n).filter(|&i| indegree[i] == 0).collect();
    let mut longest = (0, 0);
    while let Some(j) = ready.pop() {
        longest = longest.max(best[j]);
        for &c in &children[j] {
            let via = (best[j].0 + et.nodes[c].duration_micros, best[j].1 + 1);
            if via > best[c] {
                best[c] = via;
            }
            indegree[c] -= 1;
            if indegree[c] == 0 {
                ready.push(c);
            }
        }
    }
    (longest, dangling)
}
