//! Collectives expanded into point-to-point steps, per rank, when the rank reaches them.
//!
//! Each collective instance gets its own tag (below every user tag, never matched by an
//! any-tag receive), so collective traffic never mixes with the program's own messages.
//! A reduction charges, per reduced block of b bytes of an n-byte vector, b x `reduce_cost`
//! seconds plus its share b/n of the flops the trace gives.
//!
//! Algorithms (costs in MPICH's alpha-beta-gamma terms: Thakur, Rabenseifner and Gropp,
//! IJHPCA 2005): bcast binomial, binary tree (TraceR), scatter + recursive-doubling or ring
//! allgather (van de Geijn); reduce binomial, binary tree, Rabenseifner (MPICH's
//! reduce_scatter_gather: recursive-halving reduce-scatter, then the reverse pairs gather
//! to the root); allreduce recursive doubling, Rabenseifner, ring, binary tree (TraceR: reduce
//! then bcast); allgather ring, recursive doubling, Bruck; alltoall pairwise, Bruck,
//! scattered (all at once); reduce_scatter recursive halving, pairwise; barrier
//! dissemination, or a 0-byte binary-tree allreduce (TraceR). Algorithms for powers of two
//! fold the extra ranks in first and out last, as MPICH does.
//!
//! Selection: `Mpich` (MPICH 3.4's default thresholds), `Tracer` (TraceR's choices), or an
//! algorithm forced per collective.

mod allgather;
mod allreduce;
mod alltoall;
mod barrier;
mod bcast;
mod fold;
mod reduce;
mod reduce_scatter;
mod selection;

use super::program::{Coll, Op};
pub use selection::{Algo, Policy};

/// Tags of collective instance `seq` (one per call, counted per rank: every rank calls the
/// collectives in the same order).
pub fn coll_tag(seq: u64) -> i64 {
    -2 - seq as i64
}

/// Builds one rank's steps.
pub(super) struct Steps<'a> {
    pub(super) me: u32,
    pub(super) p: u32,
    pub(super) tag: i64,
    pub(super) ops: Vec<Op>,
    pub(super) policy: &'a Policy,
    /// The vector's size and total flops, for reduction costs.
    pub(super) n: f64,
    pub(super) flops: f64,
}

impl Steps<'_> {
    pub(super) fn isend(&mut self, dst: u32, bytes: f64) {
        self.ops.push(Op::Isend {
            dst,
            tag: self.tag,
            bytes,
            loc: self.policy.loc,
        });
    }
    pub(super) fn irecv(&mut self, src: u32, bytes: f64) {
        self.ops.push(Op::Irecv {
            src: src as i64,
            tag: self.tag,
            bytes,
            loc: self.policy.loc,
        });
    }
    pub(super) fn send(&mut self, dst: u32, bytes: f64) {
        self.ops.push(Op::Send {
            dst,
            tag: self.tag,
            bytes,
            loc: self.policy.loc,
        });
    }
    pub(super) fn recv(&mut self, src: u32, bytes: f64) {
        self.ops.push(Op::Recv {
            src: src as i64,
            tag: self.tag,
            bytes,
            loc: self.policy.loc,
        });
    }
    /// Send to one rank and receive from another at the same time.
    pub(super) fn exchange(&mut self, to: u32, sbytes: f64, from: u32, rbytes: f64) {
        self.isend(to, sbytes);
        self.irecv(from, rbytes);
        self.ops.push(Op::Waitall);
    }
    /// The cost of reducing `bytes` of the vector.
    pub(super) fn reduce(&mut self, bytes: f64) {
        if self.policy.reduce_cost > 0.0 && bytes > 0.0 {
            self.ops.push(Op::ComputeFor {
                secs: bytes * self.policy.reduce_cost,
            });
        }
        if self.flops > 0.0 && self.n > 0.0 {
            self.ops.push(Op::Compute {
                flops: self.flops * bytes / self.n,
            });
        }
    }
}

/// The operations rank `me` of `p` runs for one collective.
pub fn expand(coll: Coll, me: u32, p: u32, seq: u64, policy: &Policy) -> Vec<Op> {
    if p <= 1 {
        return Vec::new();
    }
    let (n, flops) = match coll {
        Coll::Reduce { bytes, flops, .. }
        | Coll::Allreduce { bytes, flops }
        | Coll::ReduceScatter { bytes, flops } => (bytes, flops),
        _ => (0.0, 0.0),
    };
    let mut s = Steps {
        me,
        p,
        tag: coll_tag(seq),
        ops: Vec::new(),
        policy,
        n,
        flops,
    };
    let algo = policy.choose(&coll, p);
    match coll {
        Coll::Barrier => barrier::barrier(&mut s, algo),
        Coll::Bcast { bytes, root } => bcast::bcast(&mut s, algo, bytes, root),
        Coll::Reduce { bytes, root, .. } => reduce::reduce(&mut s, algo, bytes, root),
        Coll::Allreduce { bytes, .. } => allreduce::allreduce(&mut s, algo, bytes),
        Coll::Allgather { bytes } => allgather::allgather(&mut s, algo, bytes),
        Coll::Alltoall { bytes } => alltoall::alltoall(&mut s, algo, bytes),
        Coll::ReduceScatter { bytes, .. } => reduce_scatter::reduce_scatter(&mut s, algo, bytes),
    }
    s.ops
}

/// What the collectives' tests share: a rank's transfers, a forced algorithm, and the check
/// that every byte sent is received.
#[cfg(test)]
pub(crate) mod testing {
    use super::*;

    /// Bytes each rank sends and receives, summed over ranks, must balance.
    pub(crate) fn balanced(coll: Coll, p: u32, policy: &Policy) {
        let mut sent = vec![vec![0.0f64; p as usize]; p as usize];
        let mut recv = vec![vec![0.0f64; p as usize]; p as usize];
        for me in 0..p {
            for (kind, peer, bytes) in transfers(coll, me, p, policy) {
                match kind {
                    's' => sent[me as usize][peer as usize] += bytes,
                    _ => recv[peer as usize][me as usize] += bytes,
                }
            }
        }
        for a in 0..p as usize {
            for b in 0..p as usize {
                assert!(
                    (sent[a][b] - recv[a][b]).abs() < 1e-6,
                    "{coll:?} p={p} {:?}: {a}->{b} sent {} received {}",
                    policy.choose(&coll, p),
                    sent[a][b],
                    recv[a][b]
                );
            }
        }
    }

    /// The default policy with `algo` forced for collective `coll`.
    pub(crate) fn forcing(coll: &str, algo: Algo) -> Policy {
        Policy {
            force: vec![(coll.to_string(), algo)],
            ..Default::default()
        }
    }

    /// A rank's sends ('s') and receives ('r'), in order, with their peer and size.
    pub(crate) fn transfers(coll: Coll, me: u32, p: u32, policy: &Policy) -> Vec<(char, i64, f64)> {
        expand(coll, me, p, 0, policy)
            .into_iter()
            .filter_map(|op| match op {
                Op::Isend { dst, bytes, .. } | Op::Send { dst, bytes, .. } => {
                    Some(('s', dst as i64, bytes))
                }
                Op::Irecv { src, bytes, .. } | Op::Recv { src, bytes, .. } => {
                    Some(('r', src, bytes))
                }
                _ => None,
            })
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::testing::{balanced, forcing};
    use super::*;

    #[test]
    fn every_algorithm_sends_what_its_peers_receive() {
        let colls = [
            Coll::Barrier,
            Coll::Bcast {
                bytes: 1e6,
                root: 1,
            },
            Coll::Reduce {
                bytes: 1e6,
                flops: 0.0,
                root: 2,
            },
            Coll::Allreduce {
                bytes: 1e6,
                flops: 0.0,
            },
            Coll::Allgather { bytes: 1e5 },
            Coll::Alltoall { bytes: 1e3 },
            Coll::ReduceScatter {
                bytes: 1e6,
                flops: 0.0,
            },
        ];
        for coll in colls {
            for &algo in Algo::for_collective(coll.name()) {
                let policy = forcing(coll.name(), algo);
                for p in [2, 3, 4, 5, 8, 12, 16] {
                    // A root is a rank (traces are checked so).
                    let coll = match coll {
                        Coll::Bcast { bytes, root } => Coll::Bcast {
                            bytes,
                            root: root % p,
                        },
                        Coll::Reduce { bytes, flops, root } => Coll::Reduce {
                            bytes,
                            flops,
                            root: root % p,
                        },
                        c => c,
                    };
                    balanced(coll, p, &policy);
                }
            }
        }
    }
}
