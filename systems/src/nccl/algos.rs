//! The transfers of NCCL's switch and log-scaling algorithms (plain data in, transfers out):
//! NVLS, NVLSTree, PAT and CollNet, each as the bytes every GPU pair exchanges over the whole
//! collective (the plugin streams each at once, as it does ring edges).
//!
//! NVLS is the NVSwitch reading, reducing and multicasting: a GPU's switch port carries what
//! the switch reads from it up and what it writes to it down. An AllReduce reads the whole
//! buffer S and writes S (reduce-scatter then all-gather through the switch: S + S/k each way
//! on k GPUs, the GPU's own share read for the reduction and written by the multicast); an
//! AllGather writes S to each GPU (its own share included) and reads S/k; a ReduceScatter reads
//! S and writes S/k. One transfer per GPU to the next GPU of its node carries the larger
//! direction, so each port carries it up and down. Simplified: the smaller direction is
//! charged as much as the larger one.
//!
//! NVLSTree: NVLS inside each node (S + S/k per port), and for each local GPU g its share S/k
//! over a double binary tree of the nodes' g-th GPUs (the same rail), half per tree, up and
//! down; NVLS across nodes (with CollNet) sends that share to the reducing switches instead.
//! PAT at one GPU per node: step d = 1, 2, 4, ... sends min(d, n - d) shares to the rank
//! d further, all steps streaming at once. CollNet: the switches reduce; each node's share per
//! NIC goes up once and comes back once. Simplified: that is drawn as a transfer to the same
//! GPU of the next node, which loads every NIC as SHARP does but crosses fewer upper links of
//! the fat-tree than the real aggregation tree.

use hetsim_schema::cuda::Coll;

/// `data` bytes from rank `from` to rank `to`, at `efficiency` of what the links give NCCL's
/// copies (NVLS's efficiency through the switch, PAT's, or 1).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Transfer {
    pub from: u32,
    pub to: u32,
    pub data: f64,
    pub efficiency: f64,
}

/// The (child, parent) pairs of the binary tree over `m` nodes in heap order, or its mirror
/// image (NCCL's second tree): a node that is a leaf in one is inside the other.
pub fn node_tree(m: usize, mirrored: bool) -> impl Iterator<Item = (usize, usize)> {
    (1..m).map(move |i| {
        if mirrored {
            (m - 1 - i, m - 1 - (i - 1) / 2)
        } else {
            (i, (i - 1) / 2)
        }
    })
}

/// What one GPU's switch port carries in NVLS on `k` GPUs of a node, each way: see the
/// module's words.
pub fn nvls_port_bytes(coll: Coll, bytes: f64, k: usize) -> f64 {
    match coll {
        Coll::AllReduce => bytes * (1.0 + 1.0 / k as f64),
        _ => bytes,
    }
}

/// NVLS inside every node of two GPUs or more: GPU i to the next GPU of its node.
pub fn nvls(nodes: &[Vec<u32>], coll: Coll, bytes: f64, efficiency: f64) -> Vec<Transfer> {
    let mut out = Vec::new();
    for ranks in nodes.iter().filter(|r| r.len() > 1) {
        let data = nvls_port_bytes(coll, bytes, ranks.len());
        for (i, &from) in ranks.iter().enumerate() {
            let to = ranks[(i + 1) % ranks.len()];
            out.push(Transfer {
                from,
                to,
                data,
                efficiency,
            });
        }
    }
    out
}

/// NVLSTree's AllReduce: NVLS in each node, and per local GPU a double binary tree across
/// the nodes carrying its share.
pub fn nvls_tree(nodes: &[Vec<u32>], bytes: f64, efficiency: f64) -> Vec<Transfer> {
    let mut out = nvls(nodes, Coll::AllReduce, bytes, efficiency);
    let k = nodes.iter().map(Vec::len).max().unwrap_or(1);
    let half = bytes / k as f64 / 2.0;
    for g in 0..k {
        let head = |node: usize| nodes[node][g % nodes[node].len()];
        for mirrored in [false, true] {
            for (child, parent) in node_tree(nodes.len(), mirrored) {
                let (c, p) = (head(child), head(parent));
                out.push(plain(c, p, half));
                out.push(plain(p, c, half));
            }
        }
    }
    out
}

/// PAT on `n` ranks (one per node): step d sends min(d, n - d) of the n shares d ranks on.
pub fn pat(n: u32, bytes: f64, efficiency: f64) -> Vec<Transfer> {
    let mut out = Vec::new();
    let share = bytes / n as f64;
    let mut d = 1;
    while d < n {
        for i in 0..n {
            out.push(Transfer {
                from: i,
                to: (i + d) % n,
                data: d.min(n - d) as f64 * share,
                efficiency,
            });
        }
        d *= 2;
    }
    out
}

/// CollNet Direct's AllReduce: a reduce-scatter and all-gather inside each node (2 (k-1)/k S
/// per GPU), and each GPU's share S/k through its NIC to the switches and back.
pub fn collnet_direct(nodes: &[Vec<u32>], bytes: f64) -> Vec<Transfer> {
    let mut out = Vec::new();
    for ranks in nodes.iter().filter(|r| r.len() > 1) {
        let k = ranks.len();
        let data = 2.0 * (k - 1) as f64 / k as f64 * bytes;
        for i in 0..k {
            out.push(plain(ranks[i], ranks[(i + 1) % k], data));
        }
    }
    out.extend(through_the_switches(nodes, bytes));
    out
}

/// NVLS across nodes (NCCL's CollNet+NVLS): NVLS inside each node, and each GPU's reduced
/// share through its NIC to the switches and back.
pub fn nvls_collnet(nodes: &[Vec<u32>], bytes: f64, efficiency: f64) -> Vec<Transfer> {
    let mut out = nvls(nodes, Coll::AllReduce, bytes, efficiency);
    out.extend(through_the_switches(nodes, bytes));
    out
}

/// Each GPU's share S/k of its node's data up to the reducing switches and back, drawn as a
/// transfer to the same GPU of the next node (see the module's words).
fn through_the_switches(nodes: &[Vec<u32>], bytes: f64) -> impl Iterator<Item = Transfer> + '_ {
    nodes.iter().enumerate().flat_map(move |(a, ranks)| {
        let next = &nodes[(a + 1) % nodes.len()];
        let share = bytes / ranks.len() as f64;
        ranks
            .iter()
            .enumerate()
            .map(move |(g, &from)| plain(from, next[g % next.len()], share))
    })
}

/// CollNet Chain's AllReduce on `heads` channels: per channel a chain through each node's GPUs
/// (reduced up, broadcast down) whose head sends the node's 1/heads of the buffer to the
/// switches and gets it back.
pub fn collnet_chain(nodes: &[Vec<u32>], bytes: f64, heads: u32) -> Vec<Transfer> {
    let mut out = Vec::new();
    let per = bytes / heads.max(1) as f64;
    for c in 0..heads.max(1) as usize {
        for (a, ranks) in nodes.iter().enumerate() {
            let k = ranks.len();
            let chain: Vec<u32> = (0..k).map(|i| ranks[(i + c) % k]).collect();
            for w in chain.windows(2) {
                out.push(plain(w[1], w[0], per));
                out.push(plain(w[0], w[1], per));
            }
            let next = &nodes[(a + 1) % nodes.len()];
            out.push(plain(chain[0], next[c % next.len()], per));
        }
    }
    out
}

fn plain(from: u32, to: u32, data: f64) -> Transfer {
    Transfer {
        from,
        to,
        data,
        efficiency: 1.0,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_node_tree_and_its_mirror_put_every_node_inside_one_of_them() {
        let heap: Vec<_> = node_tree(4, false).collect();
        let mirror: Vec<_> = node_tree(4, true).collect();
        assert_eq!(heap, vec![(1, 0), (2, 0), (3, 1)]);
        assert_eq!(mirror, vec![(2, 3), (1, 3), (0, 2)]);
        // Node 2 and 3 are leaves of the heap tree and parents in the mirror.
        let parents = |t: &[(usize, usize)]| t.iter().map(|e| e.1).collect::<Vec<_>>();
        assert!(parents(&mirror).contains(&3) && parents(&mirror).contains(&2));
    }

    #[test]
    fn an_nvls_allreduce_port_carries_s_plus_a_share_each_way() {
        // 4 GPUs, 1 MB: the switch reads S and the GPU's share (1.25 MB) from each GPU and
        // writes as much back: one transfer per GPU to the next, a shift by one.
        let t = nvls(&[vec![0, 1, 2, 3]], Coll::AllReduce, 1e6, 0.85);
        assert_eq!(t.len(), 4);
        assert_eq!((t[3].from, t[3].to), (3, 0));
        assert!(t.iter().all(|x| x.data == 1.25e6 && x.efficiency == 0.85));
        // All-gather: S written to every port.
        let g = nvls(&[vec![0, 1]], Coll::AllGather, 1e6, 0.85);
        assert!(g.iter().all(|x| x.data == 1e6));
        // A node of one GPU has no switch traffic.
        assert!(nvls(&[vec![0]], Coll::AllReduce, 1e6, 0.85).is_empty());
    }

    #[test]
    fn nvls_tree_sends_each_local_gpus_share_along_its_rail_up_and_down_both_trees() {
        // 2 nodes x 2 GPUs, 8 MB: 4 NVLS transfers of 8 x 1.5 = 12 MB; per local GPU g the two
        // trees over 2 nodes have one pair each, both ways, 8 / 2 / 2 = 2 MB.
        let t = nvls_tree(&[vec![0, 1], vec![2, 3]], 8e6, 0.85);
        assert_eq!(t.len(), 4 + 2 * 2 * 2);
        assert!(t[..4].iter().all(|x| x.data == 12e6));
        for x in &t[4..] {
            assert_eq!(x.data, 2e6);
            assert_eq!(x.from % 2, x.to % 2, "same rail: {x:?}");
        }
        // What crosses the network per GPU and direction: 2 x 2 MB = S / k.
        let out0: f64 = t[4..].iter().filter(|x| x.from == 0).map(|x| x.data).sum();
        assert_eq!(out0, 4e6);
    }

    #[test]
    fn pat_sends_n_minus_1_shares_per_rank_in_log_steps() {
        // 5 ranks: d = 1, 2, 4 carry 1, 2, 1 shares: 4 of 5 shares per rank.
        let t = pat(5, 5e6, 0.75);
        assert_eq!(t.len(), 3 * 5);
        let from0: f64 = t.iter().filter(|x| x.from == 0).map(|x| x.data).sum();
        assert_eq!(from0, 4e6);
        assert_eq!(t[14].to, (4 + 4) % 5);
    }

    #[test]
    fn collnet_sends_each_share_through_the_nic_once_each_way() {
        // 2 nodes x 2 GPUs, 4 MB: inside a node 2 x 1/2 x 4 = 4 MB per GPU, and 2 MB per GPU
        // to the same GPU of the other node.
        let t = collnet_direct(&[vec![0, 1], vec![2, 3]], 4e6);
        assert_eq!(t.len(), 8);
        assert!(t[..4].iter().all(|x| x.data == 4e6));
        assert!(
            t[4..]
                .iter()
                .all(|x| x.data == 2e6 && x.to % 2 == x.from % 2)
        );
        // Chain over 2 heads: per channel a chain of 2 per node (2 edges) and one head edge.
        let c = collnet_chain(&[vec![0, 1], vec![2, 3]], 4e6, 2);
        assert_eq!(c.len(), 2 * 2 * 3);
        assert!(c.iter().all(|x| x.data == 2e6));
    }

    use proptest::prelude::*;

    proptest! {
        /// PAT on any n: every rank sends and receives n - 1 of the n shares, in
        /// ceil(log2 n) steps.
        #[test]
        fn pat_moves_n_minus_1_shares_each_way_for_any_n(n in 2u32..300) {
            let t = pat(n, n as f64, 0.75);
            prop_assert_eq!(t.len() as u32, n * (32 - (n - 1).leading_zeros()));
            for r in 0..n {
                let out: f64 = t.iter().filter(|x| x.from == r).map(|x| x.data).sum();
                let inn: f64 = t.iter().filter(|x| x.to == r).map(|x| x.data).sum();
                prop_assert_eq!(out, (n - 1) as f64);
                prop_assert_eq!(inn, (n - 1) as f64);
            }
        }

        /// Both node trees are trees: every node but one root has one parent, and no node is
        /// a leaf of both when there are more than two.
        #[test]
        fn both_node_trees_span_the_nodes_with_one_parent_each(m in 1usize..200) {
            for mirrored in [false, true] {
                let mut parents = vec![0; m];
                for (child, parent) in node_tree(m, mirrored) {
                    prop_assert!(child < m && parent < m && child != parent);
                    parents[child] += 1;
                }
                prop_assert_eq!(parents.iter().filter(|&&p| p == 0).count(), 1);
                prop_assert!(parents.iter().all(|&p| p <= 1));
            }
            if m > 2 {
                let inner = |mirrored| {
                    let mut has_child = vec![false; m];
                    for (_, p) in node_tree(m, mirrored) {
                        has_child[p] = true;
                    }
                    has_child
                };
                let (a, b) = (inner(false), inner(true));
                prop_assert!((0..m).all(|i| a[i] || b[i] || m % 2 == 1 && i == m / 2),
                    "a node is a leaf in both trees");
            }
        }

        /// NVLSTree: what each GPU sends across nodes equals what it receives, at most 2 S/k
        /// (interior in one tree, a leaf in the other).
        #[test]
        fn nvls_tree_network_bytes_are_balanced(m in 2usize..40, k in 1usize..9) {
            let nodes: Vec<Vec<u32>> =
                (0..m).map(|a| (0..k).map(|g| (a * k + g) as u32).collect()).collect();
            let s = 1e6;
            let t = nvls_tree(&nodes, s, 0.85);
            let net = |x: &Transfer| x.from as usize / k != x.to as usize / k;
            for r in 0..(m * k) as u32 {
                let out: f64 = t.iter().filter(|x| net(x) && x.from == r).map(|x| x.data).sum();
                let inn: f64 = t.iter().filter(|x| net(x) && x.to == r).map(|x| x.data).sum();
                prop_assert!((out - inn).abs() < 1e-6);
                prop_assert!(out <= 2.0 * s / k as f64 + 1e-6, "{out}");
            }
        }
    }
}
