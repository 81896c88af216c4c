//! Reduce: binomial tree, binary tree (TraceR), Rabenseifner (MPICH's
//! reduce_scatter_gather), or Rabenseifner's original (SMPI's `rab`).

use super::Steps;
use super::fold::{Split, doubling_step, halving};
use super::selection::Algo;
use super::selection::prev_pow2;

/// Rank `s.me`'s steps of a reduce of `bytes` to `root` by `algo`.
pub(super) fn reduce(s: &mut Steps, algo: Algo, bytes: f64, root: u32) {
    match algo {
        Algo::BinaryTree => binary_reduce(s, root, bytes),
        Algo::Rabenseifner => reduce_scatter_gather(s, root, bytes),
        Algo::Rab => rab(s, root, bytes),
        _ => binomial_reduce(s, root, bytes),
    }
}

fn binomial_reduce(s: &mut Steps, root: u32, bytes: f64) {
    let (me, p) = (s.me, s.p);
    let rel = (me + p - root) % p;
    let mut mask = 1;
    while mask < p {
        if rel & mask != 0 {
            s.send((rel - mask + root) % p, bytes);
            return;
        }
        if rel + mask < p {
            s.recv((rel + mask + root) % p, bytes);
            s.reduce(bytes);
        }
        mask <<= 1;
    }
}

pub(super) fn binary_reduce(s: &mut Steps, root: u32, bytes: f64) {
    let (me, p) = (s.me, s.p);
    let rel = (me + p - root) % p;
    for c in [2 * rel + 1, 2 * rel + 2] {
        if c < p {
            s.recv((c + root) % p, bytes);
            s.reduce(bytes);
        }
    }
    if rel != 0 {
        s.send(((rel - 1) / 2 + root) % p, bytes);
    }
}

/// MPICH's reduce_scatter_gather (reduce_intra_reduce_scatter_gather.c): the odd ranks
/// below 2(p - q) hand their vector to the even rank below them; the q others halve it in
/// whole-byte blocks (the remainder one byte each to the first blocks), then gather the
/// blocks back in reverse to the root. An odd root that dropped out takes the place of
/// virtual rank 0, which first hands it block 0.
fn reduce_scatter_gather(s: &mut Steps, root: u32, bytes: f64) {
    let (me, p) = (s.me, s.p);
    let q = prev_pow2(p);
    let rem = p - q;
    let real = |v: u32| if v < rem { 2 * v } else { v + rem };
    let blocks = Split::front(bytes, q);
    let mut virt = if me < 2 * rem && me % 2 == 1 {
        s.send(me - 1, bytes);
        None
    } else if me < 2 * rem {
        s.recv(me + 1, bytes);
        s.reduce(bytes);
        Some(me / 2)
    } else {
        Some(me - rem)
    };
    let (mut send_idx, mut last_idx) = match virt {
        Some(v) => halving(s, v, q, &blocks, real),
        None => (0, q),
    };
    let odd_root = root < 2 * rem && root % 2 == 1;
    let vroot = if odd_root {
        0
    } else if root < 2 * rem {
        root / 2
    } else {
        root - rem
    };
    if odd_root && me == root {
        s.recv(0, blocks.bytes(0, 1));
        (virt, send_idx, last_idx) = (Some(0), 0, 2);
    } else if odd_root && virt == Some(0) {
        s.send(root, blocks.bytes(0, 1));
        return;
    }
    let Some(v) = virt else { return };
    let mut mask = q / 2;
    while mask > 0 {
        let partner = v ^ mask;
        let peer = if partner == 0 && odd_root {
            root
        } else {
            real(partner)
        };
        let (send, recv, recv_idx) =
            doubling_step(v, partner, mask, q, send_idx, &mut last_idx, &blocks);
        // The half of the tree holding the root receives; the other half sends and is done.
        let subtree = |x: u32| x & !(mask - 1);
        if subtree(partner) == subtree(vroot) {
            s.send(peer, send);
            return;
        }
        s.recv(peer, recv);
        if v > partner {
            send_idx = recv_idx;
        }
        mask >>= 1;
    }
}

/// Rabenseifner's reduce of 1997 as SimGrid's SMPI implements it (reduce-rab.cpp), counts
/// in bytes. With q the largest power of two up to p and r = p - q: each even rank below 2r
/// exchanges halves with the odd rank above it (sending the upper half, keeping the lower)
/// and then receives the reduced upper half back; the q remaining ranks halve the vector
/// with partners at distance 1, 2, 4 ... (the lower rank of a pair keeps the lower part);
/// an odd root below 2r first gets virtual rank 0's block. The gather then runs from the
/// largest distance down, and in every round **every** rank sends or receives: a rank whose
/// bit differs from the root's sends its part of that level, even when it already sent
/// (SMPI's loop has no exit), so stale blocks cross the network beside the useful ones and
/// share links with them. That is what SMPI measures, and what this replays.
fn rab(s: &mut Steps, root: u32, bytes: f64) {
    let (me, p) = (s.me, s.p);
    let r = p - prev_pow2(p);
    rab_fold(s, r, bytes);
    let virt =
        (me >= 2 * r || me.is_multiple_of(2)).then(|| if me < 2 * r { me / 2 } else { me - r });
    let (parts, count) = match virt {
        Some(v) => rab_halving(s, v, r, bytes),
        None => (Vec::new(), bytes),
    };
    rab_gather(s, root, virt, parts, count, bytes);
}

/// The ranks below 2r pair up: halves exchanged, the upper half reduced on the odd rank and
/// sent back to the even one, which goes on.
fn rab_fold(s: &mut Steps, r: u32, bytes: f64) {
    let me = s.me;
    let half = (bytes / 2.0).floor();
    if me >= 2 * r {
        return;
    }
    if me.is_multiple_of(2) {
        s.exchange(me + 1, bytes - half, me + 1, half);
        s.reduce(half);
        s.recv(me + 1, bytes - half);
    } else {
        s.exchange(me - 1, half, me - 1, bytes - half);
        s.reduce(bytes - half);
        s.send(me - 1, bytes - half);
    }
}

/// The old rank of virtual rank `v` when the ranks below 2r folded.
fn rab_old(v: u32, r: u32) -> u32 {
    if v < r { 2 * v } else { v + r }
}

/// Recursive halving at distances 1, 2, 4 ...: the lower rank of a pair keeps the lower part.
/// Returns each level's (lower, upper) sizes and the block this rank ends with.
fn rab_halving(s: &mut Steps, v: u32, r: u32, bytes: f64) -> (Vec<(f64, f64)>, f64) {
    let levels = prev_pow2(s.p).trailing_zeros() as usize;
    let mut parts = Vec::with_capacity(levels);
    let mut count = bytes;
    for idx in 0..levels {
        let base = 1u32 << idx;
        let lower = (count / 2.0).floor();
        let upper = count - lower;
        parts.push((lower, upper));
        if (v / base).is_multiple_of(2) {
            s.exchange(rab_old(v + base, r), upper, rab_old(v + base, r), lower);
            count = lower;
        } else {
            s.exchange(rab_old(v - base, r), lower, rab_old(v - base, r), upper);
            count = upper;
        }
        s.reduce(count);
    }
    (parts, count)
}

/// The gather to the root, from the largest distance down; every rank in every round, as
/// SMPI's loop runs (see [`rab`]). An odd root below 2r first takes virtual rank 0's block.
fn rab_gather(
    s: &mut Steps,
    root: u32,
    mut virt: Option<u32>,
    mut parts: Vec<(f64, f64)>,
    count: f64,
    bytes: f64,
) {
    let (me, p) = (s.me, s.p);
    let r = p - prev_pow2(p);
    let levels = prev_pow2(p).trailing_zeros() as usize;
    let odd_root = root < 2 * r && !root.is_multiple_of(2);
    let vroot = match (odd_root, root < 2 * r) {
        (true, _) => 0,
        (false, true) => root / 2,
        (false, false) => root - r,
    };
    if odd_root && me == 0 {
        s.send(root, count);
        virt = None;
    }
    if odd_root && me == root {
        // The root takes virtual rank 0's place: its parts are the lower halves.
        let mut c = bytes;
        parts = (0..levels)
            .map(|_| {
                let lower = (c / 2.0).floor();
                let part = (lower, c - lower);
                c = lower;
                part
            })
            .collect();
        s.recv(0, c);
        virt = Some(0);
    }
    let Some(v) = virt else { return };
    let peer = |x: u32| if x == vroot { root } else { rab_old(x, r) };
    for idx in (0..levels).rev() {
        let base = 1u32 << idx;
        let (lower, upper) = parts[idx];
        let even = (v / base).is_multiple_of(2);
        let partner = if even { v + base } else { v - base };
        if (v & base) != (vroot & base) {
            s.send(peer(partner), if even { lower } else { upper });
        } else {
            s.recv(peer(partner), if even { upper } else { lower });
        }
    }
}

#[cfg(test)]
mod tests {
    use crate::mpi::collectives::Algo;
    use crate::mpi::collectives::testing::{balanced, forcing, transfers};
    use crate::mpi::program::Coll;

    #[test]
    fn rabenseifner_reduce_halves_then_gathers_as_mpich_does() {
        // MPICH's reduce_scatter_gather on 5 ranks, root 1, n = 1 MB: q = 4, rank 1 (odd,
        // among the first 2(p - q) = 2) hands its vector to rank 0 and drops out; virtual
        // ranks 0..3 are ranks 0, 2, 3, 4, each ending with a quarter (block v reversed:
        // 0, 2, 1, 3). Halving: distance 1 (0<->2, 3<->4) n/2, then distance 2 (0<->3,
        // 2<->4) n/4. The root dropped out, so virtual rank 0 hands it block 0 and the root
        // gathers in its place: distance 2 first (3 -> 1 and 4 -> 2: n/4), then distance 1
        // (2 -> 1: n/2).
        let policy = forcing("reduce", Algo::Rabenseifner);
        let n = 1e6;
        let coll = Coll::Reduce {
            bytes: n,
            flops: 0.0,
            root: 1,
        };
        let t = |me| transfers(coll, me, 5, &policy);
        let (h, q) = (n / 2.0, n / 4.0);
        assert_eq!(t(1), [('s', 0, n), ('r', 0, q), ('r', 3, q), ('r', 2, h)]);
        assert_eq!(
            t(0),
            [
                ('r', 1, n),
                ('s', 2, h),
                ('r', 2, h),
                ('s', 3, q),
                ('r', 3, q),
                ('s', 1, q)
            ]
        );
        assert_eq!(
            t(4),
            [
                ('s', 3, h),
                ('r', 3, h),
                ('s', 2, q),
                ('r', 2, q),
                ('s', 2, q)
            ]
        );
        // log2 q rounds each way instead of p - 1: 32 ranks take 5 exchanges and at most
        // 5 gather steps.
        let coll = Coll::Reduce {
            bytes: n,
            flops: 0.0,
            root: 0,
        };
        assert_eq!(transfers(coll, 0, 32, &policy).len(), 2 * 5 + 5);
    }

    #[test]
    fn a_rabenseifner_reduce_balances_for_every_root_and_odd_sizes() {
        let policy = forcing("reduce", Algo::Rabenseifner);
        for p in [2, 3, 5, 6, 7, 12] {
            for root in 0..p {
                for bytes in [1001.0, 4096.0] {
                    let coll = Coll::Reduce {
                        bytes,
                        flops: 0.0,
                        root,
                    };
                    balanced(coll, p, &policy);
                    // Every byte is sent in whole bytes.
                    for me in 0..p {
                        for (_, _, b) in transfers(coll, me, p, &policy) {
                            assert_eq!(b, b.round(), "p={p} root={root} n={bytes}");
                        }
                    }
                }
            }
        }
    }

    #[test]
    fn rabenseifner_reduce_cuts_whole_bytes_remainder_first() {
        // 10 bytes on 4 ranks, root 0: blocks of 3, 3, 2, 2 bytes (MPICH gives the
        // remainder to the first blocks). Rank 0 keeps blocks 0-1 (6 B) then 0 (3 B) and
        // gathers block 1 from rank 2, then blocks 2-3 from rank 1; rank 3 ends with block 3.
        let policy = forcing("reduce", Algo::Rabenseifner);
        let coll = Coll::Reduce {
            bytes: 10.0,
            flops: 0.0,
            root: 0,
        };
        let t = |me| transfers(coll, me, 4, &policy);
        assert_eq!(
            t(0),
            [
                ('s', 1, 4.0),
                ('r', 1, 6.0),
                ('s', 2, 3.0),
                ('r', 2, 3.0),
                ('r', 2, 3.0),
                ('r', 1, 4.0)
            ]
        );
        assert_eq!(
            t(1),
            [
                ('s', 0, 6.0),
                ('r', 0, 4.0),
                ('s', 3, 2.0),
                ('r', 3, 2.0),
                ('r', 3, 2.0),
                ('s', 0, 4.0)
            ]
        );
        assert_eq!(
            t(3),
            [
                ('s', 2, 6.0),
                ('r', 2, 4.0),
                ('s', 1, 2.0),
                ('r', 1, 2.0),
                ('s', 1, 2.0)
            ]
        );
    }
}
