//! Allreduce: recursive doubling, Rabenseifner (MPICH's reduce_scatter_allgather), ring
//! (reduce-scatter then allgather), binary tree (TraceR: reduce then bcast); the power-of-two
//! ones fold the extra ranks in first and out last.

use super::Steps;
use super::allgather::ring_allgather;
use super::bcast::binary_bcast;
use super::fold::{Split, doubling_step, folded, halving, real_of};
use super::reduce::binary_reduce;
use super::reduce_scatter::ring_reduce_scatter;
use super::selection::Algo;

/// Rank `s.me`'s steps of an allreduce of `bytes` by `algo`.
pub(super) fn allreduce(s: &mut Steps, algo: Algo, bytes: f64) {
    let p = s.p;
    match algo {
        Algo::BinaryTree => {
            binary_reduce(s, 0, bytes);
            binary_bcast(s, 0, bytes);
        }
        Algo::Ring => {
            ring_reduce_scatter(s, bytes);
            ring_allgather(s, bytes / p as f64);
        }
        Algo::Rabenseifner => folded(s, bytes, |s, v, q| reduce_scatter_allgather(s, v, q, bytes)),
        _ => folded(s, bytes, |s, v, q| {
            let mut d = 1;
            while d < q {
                let peer = real_of(v ^ d, s.p, q);
                s.exchange(peer, bytes, peer, bytes);
                s.reduce(bytes);
                d *= 2;
            }
        }),
    }
}

/// MPICH's allreduce for long vectors among `q` virtual ranks (a power of two): the vector
/// in q blocks of whole bytes (the last takes the remainder); recursive halving, the partner
/// at distance 1 first, each step keeping half of the blocks still held and reducing them;
/// then recursive doubling in reverse (distance q/2 first) gathering the blocks back.
fn reduce_scatter_allgather(s: &mut Steps, v: u32, q: u32, bytes: f64) {
    let blocks = Split::floor(bytes, q);
    let p = s.p;
    let (mut send_idx, mut last_idx) = halving(s, v, q, &blocks, |x| real_of(x, p, q));
    let mut mask = q / 2;
    while mask > 0 {
        let partner = v ^ mask;
        let peer = real_of(partner, s.p, q);
        let (send, recv, recv_idx) =
            doubling_step(v, partner, mask, q, send_idx, &mut last_idx, &blocks);
        s.exchange(peer, send, peer, recv);
        if v > partner {
            send_idx = recv_idx;
        }
        mask >>= 1;
    }
}

#[cfg(test)]
mod tests {
    use crate::mpi::collectives::Algo;
    use crate::mpi::collectives::testing::{forcing, transfers};
    use crate::mpi::program::Coll;

    #[test]
    fn rabenseifner_allreduce_halves_from_distance_one_in_whole_blocks() {
        // MPICH's reduce_scatter_allgather on 4 ranks, n = 10 B: blocks 2, 2, 2, 4 B. Rank 1:
        // distance 1 (rank 0) first, sending its lower half (blocks 0-1, 4 B) and receiving
        // the upper (6 B); then distance 2 (rank 3) sending block 3 (4 B) and receiving block
        // 2 (2 B); the allgather reverses it: distance 2 then 1.
        let policy = forcing("allreduce", Algo::Rabenseifner);
        let coll = Coll::Allreduce {
            bytes: 10.0,
            flops: 0.0,
        };
        assert_eq!(
            transfers(coll, 1, 4, &policy),
            [
                ('s', 0, 4.0),
                ('r', 0, 6.0),
                ('s', 3, 4.0),
                ('r', 3, 2.0),
                ('s', 3, 2.0),
                ('r', 3, 4.0),
                ('s', 0, 6.0),
                ('r', 0, 4.0)
            ]
        );
    }
}
