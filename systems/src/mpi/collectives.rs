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

use super::program::{Coll, Op};
use super::selection::prev_pow2;
pub use super::selection::{Algo, Policy};

/// Tags of collective instance `seq` (one per call, counted per rank: every rank calls the
/// collectives in the same order).
pub fn coll_tag(seq: u64) -> i64 {
    -2 - seq as i64
}

/// Builds one rank's steps.
struct Steps<'a> {
    me: u32,
    p: u32,
    tag: i64,
    ops: Vec<Op>,
    policy: &'a Policy,
    /// The vector's size and total flops, for reduction costs.
    n: f64,
    flops: f64,
}

impl Steps<'_> {
    fn isend(&mut self, dst: u32, bytes: f64) {
        self.ops.push(Op::Isend {
            dst,
            tag: self.tag,
            bytes,
            loc: self.policy.loc,
        });
    }
    fn irecv(&mut self, src: u32, bytes: f64) {
        self.ops.push(Op::Irecv {
            src: src as i64,
            tag: self.tag,
            bytes,
            loc: self.policy.loc,
        });
    }
    fn send(&mut self, dst: u32, bytes: f64) {
        self.ops.push(Op::Send {
            dst,
            tag: self.tag,
            bytes,
            loc: self.policy.loc,
        });
    }
    fn recv(&mut self, src: u32, bytes: f64) {
        self.ops.push(Op::Recv {
            src: src as i64,
            tag: self.tag,
            bytes,
            loc: self.policy.loc,
        });
    }
    /// Send to one rank and receive from another at the same time.
    fn exchange(&mut self, to: u32, sbytes: f64, from: u32, rbytes: f64) {
        self.isend(to, sbytes);
        self.irecv(from, rbytes);
        self.ops.push(Op::Waitall);
    }
    /// The cost of reducing `bytes` of the vector.
    fn reduce(&mut self, bytes: f64) {
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
        Coll::Barrier => match algo {
            Algo::TreeBarrier => {
                binary_reduce(&mut s, 0, 0.0);
                binary_bcast(&mut s, 0, 0.0);
            }
            _ => {
                let mut d = 1;
                while d < p {
                    s.exchange((me + d) % p, 0.0, (me + p - d) % p, 0.0);
                    d *= 2;
                }
            }
        },
        Coll::Bcast { bytes, root } => match algo {
            Algo::BinaryTree => binary_bcast(&mut s, root, bytes),
            Algo::ScatterRdAllgather | Algo::ScatterRingAllgather => {
                let parts = Split::ceil(bytes, p);
                binomial_scatter(&mut s, root, parts);
                if algo == Algo::ScatterRdAllgather && p.is_power_of_two() {
                    bcast_rd_allgather(&mut s, root, parts);
                } else {
                    bcast_ring_allgather(&mut s, root, parts);
                }
            }
            _ => binomial_bcast(&mut s, root, bytes),
        },
        Coll::Reduce { bytes, root, .. } => match algo {
            Algo::BinaryTree => binary_reduce(&mut s, root, bytes),
            Algo::Rabenseifner => reduce_scatter_gather(&mut s, root, bytes),
            _ => binomial_reduce(&mut s, root, bytes),
        },
        Coll::Allreduce { bytes, .. } => match algo {
            Algo::BinaryTree => {
                binary_reduce(&mut s, 0, bytes);
                binary_bcast(&mut s, 0, bytes);
            }
            Algo::Ring => {
                ring_reduce_scatter(&mut s, bytes);
                ring_allgather(&mut s, bytes / p as f64);
            }
            Algo::Rabenseifner => folded(&mut s, bytes, |s, v, q| {
                reduce_scatter_allgather(s, v, q, bytes)
            }),
            _ => folded(&mut s, bytes, |s, v, q| {
                let mut d = 1;
                while d < q {
                    let peer = real_of(v ^ d, s.p, q);
                    s.exchange(peer, bytes, peer, bytes);
                    s.reduce(bytes);
                    d *= 2;
                }
            }),
        },
        Coll::Allgather { bytes } => match algo {
            Algo::RecursiveDoubling if p.is_power_of_two() => rd_allgather(&mut s, bytes),
            Algo::Bruck | Algo::RecursiveDoubling => bruck_allgather(&mut s, bytes),
            _ => ring_allgather(&mut s, bytes),
        },
        Coll::Alltoall { bytes } => match algo {
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
        },
        Coll::ReduceScatter { bytes, .. } => match algo {
            Algo::RecursiveHalving if p.is_power_of_two() => {
                halving_reduce_scatter(&mut s, me, p, bytes)
            }
            _ => pairwise_reduce_scatter(&mut s, bytes),
        },
    }
    s.ops
}

/// Real rank of virtual rank `v` when `p` ranks fold into `q` (a power of two): the first
/// 2(p-q) ranks pair up and their odd members stay.
fn real_of(v: u32, p: u32, q: u32) -> u32 {
    let rem = p - q;
    if v < rem { 2 * v + 1 } else { v + rem }
}

/// Runs `core` on a power-of-two subset: extra ranks hand their vector in first and get the
/// result back last (MPICH's non-power-of-two handling).
fn folded(s: &mut Steps, bytes: f64, core: impl FnOnce(&mut Steps, u32, u32)) {
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

/// MPICH's recursive-halving reduce-scatter among `q` virtual ranks in `blocks`, distance 1
/// first (the lower rank of a pair keeps the lower half); `real` maps a virtual rank to its
/// rank. Returns the block indices the reverse phase starts from (`send_idx`, `last_idx`).
fn halving(s: &mut Steps, v: u32, q: u32, blocks: &Split, real: impl Fn(u32) -> u32) -> (u32, u32) {
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

/// One step of the reverse (doubling) phase at distance `mask`, on MPICH's block indices:
/// the bytes sent and received, and the first block received. The lower rank of the pair
/// extends its range upwards (`last_idx`, but not on the first step), the upper one
/// downwards (its next `send_idx` is the block received).
fn doubling_step(
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
struct Split {
    n: f64,
    k: u32,
    each: f64,
    /// Leading pieces one byte longer than `each`.
    lead: f64,
}

impl Split {
    fn floor(n: f64, k: u32) -> Split {
        let n = n.round();
        let each = (n / k as f64).floor();
        Split {
            n,
            k,
            each,
            lead: 0.0,
        }
    }

    fn front(n: f64, k: u32) -> Split {
        let Split { n, each, .. } = Split::floor(n, k);
        Split {
            n,
            k,
            each,
            lead: n - each * k as f64,
        }
    }

    fn ceil(n: f64, k: u32) -> Split {
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
    fn bytes(&self, a: u32, b: u32) -> f64 {
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
    fn of(&self, lo: u32, m: u32) -> f64 {
        self.bytes(lo, lo + m)
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

fn ring_allgather(s: &mut Steps, block: f64) {
    let (me, p) = (s.me, s.p);
    for _ in 1..p {
        s.exchange((me + 1) % p, block, (me + p - 1) % p, block);
    }
}

fn ring_reduce_scatter(s: &mut Steps, bytes: f64) {
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
fn binary_bcast(s: &mut Steps, root: u32, bytes: f64) {
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

fn binary_reduce(s: &mut Steps, root: u32, bytes: f64) {
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

#[cfg(test)]
mod tests {
    use super::*;
    use hetsim_schema::mpi::Select;

    /// Bytes each rank sends and receives, summed over ranks, must balance.
    fn balanced(coll: Coll, p: u32, policy: &Policy) {
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

    /// The default policy with `algo` forced for collective `coll`.
    fn forcing(coll: &str, algo: Algo) -> Policy {
        Policy {
            force: vec![(coll.to_string(), algo)],
            ..Default::default()
        }
    }

    /// A rank's sends ('s') and receives ('r'), in order, with their peer and size.
    fn transfers(coll: Coll, me: u32, p: u32, policy: &Policy) -> Vec<(char, i64, f64)> {
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
    fn mpich_selection_follows_its_thresholds() {
        let m = Policy::default();
        let a = |bytes: f64, p: u32| m.choose(&Coll::Allreduce { bytes, flops: 0.0 }, p);
        assert_eq!(a(8.0, 16), Algo::RecursiveDoubling);
        assert_eq!(a(1e6, 16), Algo::Rabenseifner);
        let b = |bytes: f64, p: u32| m.choose(&Coll::Bcast { bytes, root: 0 }, p);
        assert_eq!(b(1e6, 4), Algo::Binomial, "fewer than 8 ranks");
        assert_eq!(b(1e5, 16), Algo::ScatterRdAllgather);
        assert_eq!(b(1e6, 16), Algo::ScatterRingAllgather);
        let t = Policy {
            select: Select::Tracer,
            ..Default::default()
        };
        assert_eq!(t.choose(&Coll::Allgather { bytes: 1e4 }, 16), Algo::Bruck);
        assert_eq!(t.choose(&Coll::Allgather { bytes: 1e5 }, 16), Algo::Ring);
        assert_eq!(t.choose(&Coll::Alltoall { bytes: 1e3 }, 16), Algo::Pairwise);
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
