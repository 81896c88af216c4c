//! What the algorithms share: folding a rank count to a power of two (MPICH's handling of the
//! extra ranks), MPICH's cuts of a vector into whole-byte blocks, and the halving and doubling
//! steps of the Rabenseifner algorithms on those blocks.

use super::Steps;
use super::selection::prev_pow2;

/// Real rank of virtual rank `v` when `p` ranks fold into `q` (a power of two): the first
/// 2(p-q) ranks pair up and their odd members stay.
pub(super) fn real_of(v: u32, p: u32, q: u32) -> u32 {
    let rem = p - q;
    if v < rem { 2 * v + 1 } else { v + rem }
}

/// Runs `core` on a power-of-two subset: extra ranks hand their vector in first and get the
/// result back last (MPICH's non-power-of-two handling).
pub(super) fn folded(s: &mut Steps, bytes: f64, core: impl FnOnce(&mut Steps, u32, u32)) {
    let (me, p) = (s.me, s.p);
    let q = prev_pow2(p);
    let rem = p - q;
    if me < 2 * rem {
        if me % 2 == 0 {
            s.send(me + 1, bytes);
            s.recv(me + 1, bytes);
            return;
        }
        s.recv(me - 1, bytes);
        s.reduce(bytes);
    }
    let v = if me < 2 * rem { me / 2 } else { me - rem };
    core(s, v, q);
    if me < 2 * rem {
        s.send(me - 1, bytes);
    }
}

/// MPICH's recursive-halving reduce-scatter among `q` virtual ranks in `blocks`, distance 1
/// first (the lower rank of a pair keeps the lower half); `real` maps a virtual rank to its
/// rank. Returns the block indices the reverse phase starts from (`send_idx`, `last_idx`).
pub(super) fn halving(
    s: &mut Steps,
    v: u32,
    q: u32,
    blocks: &Split,
    real: impl Fn(u32) -> u32,
) -> (u32, u32) {
    let (mut send_idx, mut recv_idx, mut last_idx) = (0, 0, q);
    let mut mask = 1;
    while mask < q {
        let partner = v ^ mask;
        let peer = real(partner);
        let half = q / (2 * mask);
        let (send, recv) = if v < partner {
            send_idx = recv_idx + half;
            (
                blocks.bytes(send_idx, last_idx),
                blocks.bytes(recv_idx, send_idx),
            )
        } else {
            recv_idx = send_idx + half;
            (
                blocks.bytes(send_idx, recv_idx),
                blocks.bytes(recv_idx, last_idx),
            )
        };
        s.exchange(peer, send, peer, recv);
        s.reduce(recv);
        send_idx = recv_idx;
        mask <<= 1;
        if mask < q {
            last_idx = recv_idx + q / mask;
        }
    }
    (send_idx, last_idx)
}

/// One step of the reverse (doubling) phase at distance `mask`, on MPICH's block indices:
/// the bytes sent and received, and the first block received. The lower rank of the pair
/// extends its range upwards (`last_idx`, but not on the first step), the upper one
/// downwards (its next `send_idx` is the block received).
pub(super) fn doubling_step(
    v: u32,
    partner: u32,
    mask: u32,
    q: u32,
    send_idx: u32,
    last_idx: &mut u32,
    blocks: &Split,
) -> (f64, f64, u32) {
    let half = q / (2 * mask);
    if v < partner {
        if mask != q / 2 {
            *last_idx += half;
        }
        let recv_idx = send_idx + half;
        (
            blocks.bytes(send_idx, recv_idx),
            blocks.bytes(recv_idx, *last_idx),
            recv_idx,
        )
    } else {
        let recv_idx = send_idx - half;
        (
            blocks.bytes(send_idx, *last_idx),
            blocks.bytes(recv_idx, send_idx),
            recv_idx,
        )
    }
}

/// A vector of whole bytes cut into `k` pieces as MPICH cuts it: for allreduce `floor(n/k)`
/// bytes each and the last one the remainder ([`Split::floor`]); for reduce `floor(n/k)`
/// each and one more for each of the first `n mod k` ([`Split::front`]); for a bcast's
/// scatter `ceil(n/k)` each, so the last ones may get less, or nothing ([`Split::ceil`]).
#[derive(Debug, Clone, Copy)]
pub(super) struct Split {
    n: f64,
    k: u32,
    each: f64,
    /// Leading pieces one byte longer than `each`.
    lead: f64,
}

impl Split {
    pub(super) fn floor(n: f64, k: u32) -> Split {
        let n = n.round();
        let each = (n / k as f64).floor();
        Split {
            n,
            k,
            each,
            lead: 0.0,
        }
    }

    pub(super) fn front(n: f64, k: u32) -> Split {
        let Split { n, each, .. } = Split::floor(n, k);
        Split {
            n,
            k,
            each,
            lead: n - each * k as f64,
        }
    }

    pub(super) fn ceil(n: f64, k: u32) -> Split {
        let n = n.round();
        let each = (n / k as f64).ceil();
        Split {
            n,
            k,
            each,
            lead: 0.0,
        }
    }

    /// Bytes of pieces `a..b`.
    pub(super) fn bytes(&self, a: u32, b: u32) -> f64 {
        let end = |i: u32| {
            if i >= self.k {
                self.n
            } else {
                (i as f64 * self.each + self.lead.min(i as f64)).min(self.n)
            }
        };
        (end(b) - end(a)).max(0.0)
    }

    /// Bytes of the pieces of relative ranks `lo..lo + m`.
    pub(super) fn of(&self, lo: u32, m: u32) -> f64 {
        self.bytes(lo, lo + m)
    }
}
