//! Allgather: ring, recursive doubling (powers of two), Bruck.

use super::Steps;
use super::selection::Algo;

/// Rank `s.me`'s steps of an allgather of `bytes` per rank by `algo`.
pub(super) fn allgather(s: &mut Steps, algo: Algo, bytes: f64) {
    let p = s.p;
    match algo {
        Algo::RecursiveDoubling if p.is_power_of_two() => rd_allgather(s, bytes),
        Algo::Bruck | Algo::RecursiveDoubling => bruck_allgather(s, bytes),
        _ => ring_allgather(s, bytes),
    }
}

fn rd_allgather(s: &mut Steps, block: f64) {
    let (me, p) = (s.me, s.p);
    let mut d = 1;
    let mut size = block;
    while d < p {
        s.exchange(me ^ d, size, me ^ d, size);
        size *= 2.0;
        d *= 2;
    }
}

fn bruck_allgather(s: &mut Steps, block: f64) {
    let (me, p) = (s.me, s.p);
    let mut d = 1;
    while d < p {
        let blocks = d.min(p - d) as f64;
        s.exchange(
            (me + p - d) % p,
            block * blocks,
            (me + d) % p,
            block * blocks,
        );
        d *= 2;
    }
}

pub(super) fn ring_allgather(s: &mut Steps, block: f64) {
    let (me, p) = (s.me, s.p);
    for _ in 1..p {
        s.exchange((me + 1) % p, block, (me + p - 1) % p, block);
    }
}

#[cfg(test)]
mod tests {
    use crate::mpi::collectives::Algo;
    use crate::mpi::collectives::testing::{balanced, forcing, transfers};
    use crate::mpi::program::Coll;

    #[test]
    fn ring_recursive_doubling_and_bruck_move_what_their_formulas_say() {
        let g = Coll::Allgather { bytes: 100.0 };
        // Ring on 4: 3 exchanges of one block, right out, left in.
        let ring = forcing("allgather", Algo::Ring);
        assert_eq!(
            transfers(g, 1, 4, &ring),
            [('s', 2, 100.0), ('r', 0, 100.0)].repeat(3)
        );
        // Recursive doubling on 4: the partner at distance 1, then 2, with 1 then 2 blocks.
        let rd = forcing("allgather", Algo::RecursiveDoubling);
        assert_eq!(
            transfers(g, 1, 4, &rd),
            [
                ('s', 0, 100.0),
                ('r', 0, 100.0),
                ('s', 3, 200.0),
                ('r', 3, 200.0)
            ]
        );
        // Bruck on 5: distances 1, 2, 4 carrying min(d, p - d) blocks: 1, 2, 1.
        let bruck = forcing("allgather", Algo::Bruck);
        let sent: Vec<f64> = transfers(g, 0, 5, &bruck)
            .into_iter()
            .filter(|t| t.0 == 's')
            .map(|t| t.2)
            .collect();
        assert_eq!(sent, [100.0, 200.0, 100.0]);
        balanced(g, 5, &bruck);
    }
}
