//! Bcast: binomial tree, binary tree (TraceR), or scatter then recursive-doubling or ring
//! allgather (van de Geijn, as MPICH cuts the parts).

use super::Steps;
use super::fold::Split;
use super::selection::Algo;

/// Rank `s.me`'s steps of a bcast of `bytes` from `root` by `algo`.
pub(super) fn bcast(s: &mut Steps, algo: Algo, bytes: f64, root: u32) {
    let p = s.p;
    match algo {
        Algo::BinaryTree => binary_bcast(s, root, bytes),
        Algo::ScatterRdAllgather | Algo::ScatterRingAllgather => {
            let parts = Split::ceil(bytes, p);
            binomial_scatter(s, root, parts);
            if algo == Algo::ScatterRdAllgather && p.is_power_of_two() {
                bcast_rd_allgather(s, root, parts);
            } else {
                bcast_ring_allgather(s, root, parts);
            }
        }
        _ => binomial_bcast(s, root, bytes),
    }
}

fn binomial_bcast(s: &mut Steps, root: u32, bytes: f64) {
    let (me, p) = (s.me, s.p);
    let rel = (me + p - root) % p;
    let mut mask = 1;
    while mask < p {
        if rel & mask != 0 {
            s.recv((rel - mask + root) % p, bytes);
            break;
        }
        mask <<= 1;
    }
    // Children below that bit, farthest first, one after the other (MPICH's blocking sends).
    mask >>= 1;
    while mask > 0 {
        if rel + mask < p {
            s.send((rel + mask + root) % p, bytes);
        }
        mask >>= 1;
    }
}

/// MPICH's scatter for bcast: each rank receives its subtree's parts from its parent, then
/// hands each child the parts of the child's subtree, farthest child first. Empty parts are
/// neither sent nor received.
fn binomial_scatter(s: &mut Steps, root: u32, parts: Split) {
    let (me, p) = (s.me, s.p);
    let rel = (me + p - root) % p;
    let mut mask = 1;
    while mask < p && rel & mask == 0 {
        mask <<= 1;
    }
    let mine = parts.of(rel, mask);
    if rel != 0 && mine > 0.0 {
        s.recv((rel - mask + root) % p, mine);
    }
    let mut c = mask >> 1;
    while c > 0 {
        let part = parts.of(rel + c, c);
        if rel + c < p && part > 0.0 {
            s.send((rel + c + root) % p, part);
        }
        c >>= 1;
    }
}

/// The recursive-doubling allgather of a scattered bcast (p a power of two): each step swaps
/// the parts of the two halves of a group twice as large (empty parts still make a message).
fn bcast_rd_allgather(s: &mut Steps, root: u32, parts: Split) {
    let (me, p) = (s.me, s.p);
    let rel = (me + p - root) % p;
    let mut mask = 1;
    while mask < p {
        let mine = rel & !(mask - 1);
        let theirs = mine ^ mask;
        let peer = (rel ^ mask) + root;
        s.exchange(
            peer % p,
            parts.of(mine, mask),
            peer % p,
            parts.of(theirs, mask),
        );
        mask <<= 1;
    }
}

/// The ring allgather of a scattered bcast: p - 1 steps, each passing one rank's part to the
/// right (empty parts still make a message).
fn bcast_ring_allgather(s: &mut Steps, root: u32, parts: Split) {
    let (me, p) = (s.me, s.p);
    let rel = (me + p - root) % p;
    for i in 0..p - 1 {
        let send = parts.of((rel + p - i) % p, 1);
        let recv = parts.of((rel + 2 * p - i - 1) % p, 1);
        s.exchange((me + 1) % p, send, (me + p - 1) % p, recv);
    }
}

/// TraceR's binary (heap) tree: children 2i+1 and 2i+2 of relative index i.
pub(super) fn binary_bcast(s: &mut Steps, root: u32, bytes: f64) {
    let (me, p) = (s.me, s.p);
    let rel = (me + p - root) % p;
    if rel != 0 {
        s.recv(((rel - 1) / 2 + root) % p, bytes);
    }
    for c in [2 * rel + 1, 2 * rel + 2] {
        if c < p {
            s.send((c + root) % p, bytes);
        }
    }
}

#[cfg(test)]
mod tests {
    use crate::mpi::collectives::testing::{forcing, transfers};
    use crate::mpi::collectives::{Algo, expand};
    use crate::mpi::program::{Coll, Op};

    #[test]
    fn binomial_bcast_reaches_everyone_once_in_ceil_log2_p_sends_from_the_root() {
        let policy = forcing("bcast", Algo::Binomial);
        for p in [2u32, 3, 5, 8, 13] {
            let root = 2 % p;
            let root_sends = expand(Coll::Bcast { bytes: 8.0, root }, root, p, 0, &policy)
                .iter()
                .filter(|o| matches!(o, Op::Send { .. }))
                .count();
            assert_eq!(root_sends, (p as f64).log2().ceil() as usize, "p={p}");
        }
    }

    #[test]
    fn a_scattered_bcast_splits_into_whole_bytes_and_skips_empty_parts() {
        // MPICH: 8 B over 16 ranks in parts of ceil(8/16) = 1 B; ranks 8..15 get nothing, so
        // the root's farthest child (rank 8) is not sent to: the root sends 4 B to rank 4,
        // 2 B to rank 2, 1 B to rank 1. Rank 8 only joins the allgather: 0 B with rank 9
        // first, then its group's parts (still empty) with 10, 12 and 0 (which sends 8 B).
        let policy = forcing("bcast", Algo::ScatterRdAllgather);
        let coll = Coll::Bcast {
            bytes: 8.0,
            root: 0,
        };
        let t = |me| transfers(coll, me, 16, &policy);
        assert_eq!(t(0)[..3], [('s', 4, 4.0), ('s', 2, 2.0), ('s', 1, 1.0)]);
        assert_eq!(
            t(8),
            [
                ('s', 9, 0.0),
                ('r', 9, 0.0),
                ('s', 10, 0.0),
                ('r', 10, 0.0),
                ('s', 12, 0.0),
                ('r', 12, 0.0),
                ('s', 0, 0.0),
                ('r', 0, 8.0)
            ]
        );
        // 1000 B over 3 ranks: parts of 334, 334 and 332 B.
        let coll = Coll::Bcast {
            bytes: 1000.0,
            root: 0,
        };
        let ring = forcing("bcast", Algo::ScatterRingAllgather);
        assert_eq!(
            transfers(coll, 0, 3, &ring),
            [
                ('s', 2, 332.0),
                ('s', 1, 334.0),
                ('s', 1, 334.0),
                ('r', 2, 332.0),
                ('s', 1, 332.0),
                ('r', 2, 334.0)
            ]
        );
    }
}
