//! Alltoall: pairwise (XOR partners for powers of two), Bruck, or scattered (all at once).

use super::Steps;
use super::selection::Algo;
use crate::mpi::program::Op;

/// Rank `s.me`'s steps of an alltoall of `bytes` per pair by `algo`.
pub(super) fn alltoall(s: &mut Steps, algo: Algo, bytes: f64) {
    let (me, p) = (s.me, s.p);
    match algo {
        Algo::Bruck => {
            let mut d = 1;
            while d < p {
                // Blocks whose index has this bit set: about half of them.
                let blocks = (0..p).filter(|i| i & d != 0).count() as f64;
                s.exchange(
                    (me + d) % p,
                    bytes * blocks,
                    (me + p - d) % p,
                    bytes * blocks,
                );
                d *= 2;
            }
        }
        Algo::Scattered => {
            for step in 1..p {
                s.irecv((me + p - step) % p, bytes);
            }
            for step in 1..p {
                s.isend((me + step) % p, bytes);
            }
            s.ops.push(Op::Waitall);
        }
        _ => {
            for step in 1..p {
                let (to, from) = if p.is_power_of_two() {
                    (me ^ step, me ^ step)
                } else {
                    ((me + step) % p, (me + p - step) % p)
                };
                s.exchange(to, bytes, from, bytes);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use crate::mpi::collectives::testing::{forcing, transfers};
    use crate::mpi::collectives::{Algo, expand};
    use crate::mpi::program::{Coll, Op};

    #[test]
    fn pairwise_pairs_by_xor_on_powers_of_two_and_by_shifts_otherwise() {
        let a = Coll::Alltoall { bytes: 10.0 };
        let pairwise = forcing("alltoall", Algo::Pairwise);
        let peers = |me, p| -> Vec<i64> {
            transfers(a, me, p, &pairwise)
                .into_iter()
                .filter(|t| t.0 == 's')
                .map(|t| t.1)
                .collect()
        };
        // 4 ranks: rank 1 meets 1^1 = 0, 1^2 = 3, 1^3 = 2.
        assert_eq!(peers(1, 4), [0, 3, 2]);
        // 3 ranks: rank 1 sends to 2 then 0.
        assert_eq!(peers(1, 3), [2, 0]);
        // Scattered posts every receive, then every send, then waits once.
        let scattered = forcing("alltoall", Algo::Scattered);
        let ops = expand(a, 0, 4, 0, &scattered);
        assert_eq!(ops.len(), 3 + 3 + 1);
        assert!(matches!(ops.last(), Some(Op::Waitall)));
    }
}
