//! Barrier: dissemination (MPICH), or a 0-byte binary-tree reduce then bcast (TraceR).

use super::Steps;
use super::bcast::binary_bcast;
use super::reduce::binary_reduce;
use super::selection::Algo;

/// Rank `s.me`'s steps of a barrier by `algo`.
pub(super) fn barrier(s: &mut Steps, algo: Algo) {
    let (me, p) = (s.me, s.p);
    match algo {
        Algo::TreeBarrier => {
            binary_reduce(s, 0, 0.0);
            binary_bcast(s, 0, 0.0);
        }
        _ => {
            let mut d = 1;
            while d < p {
                s.exchange((me + d) % p, 0.0, (me + p - d) % p, 0.0);
                d *= 2;
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use crate::mpi::collectives::testing::{balanced, forcing, transfers};
    use crate::mpi::collectives::{Algo, expand};
    use crate::mpi::program::{Coll, Op};

    #[test]
    fn dissemination_exchanges_with_me_plus_and_minus_powers_of_two() {
        // 5 ranks: distances 1, 2, 4, so ceil(log2 5) = 3 empty exchanges; rank 1 sends to
        // 2, 3, 0 and receives from 0, 4, 2.
        let policy = forcing("barrier", Algo::Dissemination);
        assert_eq!(
            transfers(Coll::Barrier, 1, 5, &policy),
            [
                ('s', 2, 0.0),
                ('r', 0, 0.0),
                ('s', 3, 0.0),
                ('r', 4, 0.0),
                ('s', 0, 0.0),
                ('r', 2, 0.0)
            ]
        );
        let waits = expand(Coll::Barrier, 1, 5, 0, &policy)
            .iter()
            .filter(|o| matches!(o, Op::Waitall))
            .count();
        assert_eq!(waits, 3);
    }

    #[test]
    fn the_tree_barrier_is_an_empty_reduce_then_bcast_over_the_heap_tree() {
        // TraceR's: rank 1 of 4 waits for its child 3, tells its parent 0, then hears from 0
        // and tells 3.
        let policy = forcing("barrier", Algo::TreeBarrier);
        assert_eq!(
            transfers(Coll::Barrier, 1, 4, &policy),
            [('r', 3, 0.0), ('s', 0, 0.0), ('r', 0, 0.0), ('s', 3, 0.0)]
        );
        balanced(Coll::Barrier, 7, &policy);
    }
}
