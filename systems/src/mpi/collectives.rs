//! Collectives expanded into point-to-point steps, per rank, when the rank reaches them.
//!
//! Each collective instance gets its own tag (below every user tag, never matched by an
//! any-tag receive), so collective traffic never mixes with the program's own messages.
//! Algorithms (the common defaults of MPICH for mid-size messages; a selector by size and
//! process count is a later step):
//! - barrier: dissemination, ceil(log2 p) rounds of 0-byte exchanges;
//! - bcast: binomial tree from the root, ceil(log2 p) rounds;
//! - reduce: binomial tree towards the root, with the reduction's computation per receive;
//! - allreduce: recursive doubling when p is a power of two and the vector is small (at most
//!   2 KiB), else ring (reduce-scatter then allgather: 2(p-1) steps of size/p);
//! - allgather: ring, p-1 steps of the per-rank block;
//! - alltoall: pairwise exchange, p-1 steps;
//! - reduce_scatter: ring, p-1 steps of size/p with the reduction's computation.

use super::program::{Coll, Loc, Op};

/// Tags of collective instance `seq` (one per call, counted per rank: every rank calls the
/// collectives in the same order).
pub fn coll_tag(seq: u64) -> i64 {
    -2 - seq as i64
}

const SMALL_ALLREDUCE: f64 = 2048.0;

/// The operations rank `me` of `p` runs for one collective.
pub fn expand(coll: Coll, me: u32, p: u32, seq: u64) -> Vec<Op> {
    let tag = coll_tag(seq);
    let mut ops = Vec::new();
    if p <= 1 {
        return ops;
    }
    let send = |dst: u32, bytes: f64| Op::Isend {
        dst,
        tag,
        bytes,
        loc: Loc::Device,
    };
    let recv = |src: u32, bytes: f64| Op::Irecv {
        src: src as i64,
        tag,
        bytes,
        loc: Loc::Device,
    };
    match coll {
        Coll::Barrier => {
            let mut d = 1;
            while d < p {
                ops.push(send((me + d) % p, 0.0));
                ops.push(recv((me + p - d) % p, 0.0));
                ops.push(Op::Waitall);
                d *= 2;
            }
        }
        Coll::Bcast { bytes, root } => binomial_bcast(&mut ops, me, p, root, bytes, tag),
        Coll::Reduce { bytes, flops, root } => {
            binomial_reduce(&mut ops, me, p, root, bytes, flops, tag)
        }
        Coll::Allreduce { bytes, flops } => {
            if p.is_power_of_two() && bytes <= SMALL_ALLREDUCE {
                let mut d = 1;
                while d < p {
                    let peer = me ^ d;
                    ops.push(send(peer, bytes));
                    ops.push(recv(peer, bytes));
                    ops.push(Op::Waitall);
                    if flops > 0.0 {
                        ops.push(Op::Compute { flops });
                    }
                    d *= 2;
                }
            } else {
                ring(&mut ops, me, p, bytes / p as f64, flops / p as f64, tag);
                ring(&mut ops, me, p, bytes / p as f64, 0.0, tag);
            }
        }
        Coll::Allgather { bytes } => ring(&mut ops, me, p, bytes, 0.0, tag),
        Coll::Alltoall { bytes } => {
            for step in 1..p {
                ops.push(send((me + step) % p, bytes));
                ops.push(recv((me + p - step) % p, bytes));
                ops.push(Op::Waitall);
            }
        }
        Coll::ReduceScatter { bytes, flops } => {
            ring(&mut ops, me, p, bytes / p as f64, flops / p as f64, tag)
        }
    }
    ops
}

/// p-1 steps: send a block to the right neighbour, receive one from the left, then reduce it.
fn ring(ops: &mut Vec<Op>, me: u32, p: u32, block: f64, flops: f64, tag: i64) {
    for _ in 1..p {
        ops.push(Op::Isend {
            dst: (me + 1) % p,
            tag,
            bytes: block,
            loc: Loc::Device,
        });
        ops.push(Op::Irecv {
            src: ((me + p - 1) % p) as i64,
            tag,
            bytes: block,
            loc: Loc::Device,
        });
        ops.push(Op::Waitall);
        if flops > 0.0 {
            ops.push(Op::Compute { flops });
        }
    }
}

fn binomial_bcast(ops: &mut Vec<Op>, me: u32, p: u32, root: u32, bytes: f64, tag: i64) {
    let rel = (me + p - root) % p;
    // Receive from the parent: the rank that differs in rel's lowest set bit.
    let mut mask = 1;
    while mask < p {
        if rel & mask != 0 {
            let parent = (rel - mask + root) % p;
            ops.push(Op::Recv {
                src: parent as i64,
                tag,
                bytes,
                loc: Loc::Device,
            });
            break;
        }
        mask <<= 1;
    }
    // Then send to the children below that bit, farthest first, one after the other (as
    // MPICH's binomial bcast does with blocking sends).
    mask >>= 1;
    while mask > 0 {
        if rel + mask < p {
            ops.push(Op::Send {
                dst: (rel + mask + root) % p,
                tag,
                bytes,
                loc: Loc::Device,
            });
        }
        mask >>= 1;
    }
}

fn binomial_reduce(
    ops: &mut Vec<Op>,
    me: u32,
    p: u32,
    root: u32,
    bytes: f64,
    flops: f64,
    tag: i64,
) {
    let rel = (me + p - root) % p;
    let mut mask = 1;
    while mask < p {
        if rel & mask != 0 {
            ops.push(Op::Send {
                dst: (rel - mask + root) % p,
                tag,
                bytes,
                loc: Loc::Device,
            });
            return;
        }
        if rel + mask < p {
            ops.push(Op::Recv {
                src: ((rel + mask + root) % p) as i64,
                tag,
                bytes,
                loc: Loc::Device,
            });
            if flops > 0.0 {
                ops.push(Op::Compute { flops });
            }
        }
        mask <<= 1;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn rounds_of_receives(ops: &[Op]) -> usize {
        ops.iter()
            .filter(|o| matches!(o, Op::Recv { .. } | Op::Irecv { .. }))
            .count()
    }

    #[test]
    fn binomial_bcast_reaches_everyone_once() {
        // Every non-root rank receives exactly once; the root sends ceil(log2 p) times.
        for p in [2u32, 3, 5, 8, 13] {
            let mut received = vec![0; p as usize];
            for me in 0..p {
                for op in expand(
                    Coll::Bcast {
                        bytes: 8.0,
                        root: 2 % p,
                    },
                    me,
                    p,
                    0,
                ) {
                    if let Op::Send { dst, .. } = op {
                        received[dst as usize] += 1;
                    }
                }
            }
            for (r, n) in received.iter().enumerate() {
                assert_eq!(*n, if r as u32 == 2 % p { 0 } else { 1 }, "p={p} rank {r}");
            }
            let root_sends = expand(
                Coll::Bcast {
                    bytes: 8.0,
                    root: 2 % p,
                },
                2 % p,
                p,
                0,
            )
            .iter()
            .filter(|o| matches!(o, Op::Send { .. }))
            .count();
            assert_eq!(root_sends, (p as f64).log2().ceil() as usize, "p={p}");
        }
    }

    #[test]
    fn ring_allreduce_is_two_p_minus_one_steps_of_size_over_p() {
        let ops = expand(
            Coll::Allreduce {
                bytes: 8e6,
                flops: 0.0,
            },
            1,
            4,
            0,
        );
        assert_eq!(rounds_of_receives(&ops), 6);
        assert!(ops.iter().all(|o| match o {
            Op::Isend { bytes, .. } => *bytes == 2e6,
            _ => true,
        }));
    }

    #[test]
    fn small_power_of_two_allreduce_is_recursive_doubling() {
        let ops = expand(
            Coll::Allreduce {
                bytes: 8.0,
                flops: 0.0,
            },
            5,
            8,
            0,
        );
        assert_eq!(rounds_of_receives(&ops), 3);
    }
}
