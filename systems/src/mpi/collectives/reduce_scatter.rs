//! Reduce_scatter: recursive halving (powers of two) or pairwise; the ring one serves the ring
//! allreduce.

use super::Steps;
use super::fold::real_of;
use super::selection::Algo;

/// Rank `s.me`'s steps of a reduce_scatter of `bytes` by `algo`.
pub(super) fn reduce_scatter(s: &mut Steps, algo: Algo, bytes: f64) {
    let (me, p) = (s.me, s.p);
    match algo {
        Algo::RecursiveHalving if p.is_power_of_two() => halving_reduce_scatter(s, me, p, bytes),
        _ => pairwise_reduce_scatter(s, bytes),
    }
}

/// Recursive halving among `q` virtual ranks: log2 q steps exchanging half, a quarter, ...
fn halving_reduce_scatter(s: &mut Steps, v: u32, q: u32, bytes: f64) {
    let mut d = q / 2;
    let mut size = bytes / 2.0;
    while d >= 1 {
        let peer = real_of(v ^ d, s.p, q);
        s.exchange(peer, size, peer, size);
        s.reduce(size);
        size /= 2.0;
        d /= 2;
    }
}

pub(super) fn ring_reduce_scatter(s: &mut Steps, bytes: f64) {
    let (me, p) = (s.me, s.p);
    let block = bytes / p as f64;
    for _ in 1..p {
        s.exchange((me + 1) % p, block, (me + p - 1) % p, block);
        s.reduce(block);
    }
}

fn pairwise_reduce_scatter(s: &mut Steps, bytes: f64) {
    let (me, p) = (s.me, s.p);
    let block = bytes / p as f64;
    for step in 1..p {
        s.exchange((me + step) % p, block, (me + p - step) % p, block);
        s.reduce(block);
    }
}

#[cfg(test)]
mod tests {
    use crate::mpi::collectives::Algo;
    use crate::mpi::collectives::testing::{balanced, forcing, transfers};
    use crate::mpi::program::Coll;

    #[test]
    fn recursive_halving_exchanges_half_then_a_quarter_and_pairwise_a_block_each() {
        let r = Coll::ReduceScatter {
            bytes: 800.0,
            flops: 0.0,
        };
        // 4 ranks: distance 2 then 1, exchanging n/2 then n/4.
        let halving = forcing("reduce_scatter", Algo::RecursiveHalving);
        assert_eq!(
            transfers(r, 0, 4, &halving),
            [
                ('s', 2, 400.0),
                ('r', 2, 400.0),
                ('s', 1, 200.0),
                ('r', 1, 200.0)
            ]
        );
        // Pairwise: p - 1 exchanges of n/p.
        let pairwise = forcing("reduce_scatter", Algo::Pairwise);
        assert_eq!(
            transfers(r, 0, 4, &pairwise),
            [
                ('s', 1, 200.0),
                ('r', 3, 200.0),
                ('s', 2, 200.0),
                ('r', 2, 200.0),
                ('s', 3, 200.0),
                ('r', 1, 200.0)
            ]
        );
        balanced(r, 6, &pairwise);
    }
}
