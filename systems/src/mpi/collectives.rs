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

use super::program::{Coll, Loc, Op};
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
            loc: Loc::Device,
        });
    }
    fn irecv(&mut self, src: u32, bytes: f64) {
        self.ops.push(Op::Irecv {
            src: src as i64,
            tag: self.tag,
            bytes,
            loc: Loc::Device,
        });
    }
    fn send(&mut self, dst: u32, bytes: f64) {
        self.ops.push(Op::Send {
            dst,
            tag: self.tag,
            bytes,
            loc: Loc::Device,
        });
    }
    fn recv(&mut self, src: u32, bytes: f64) {
        self.ops.push(Op::Recv {
            src: src as i64,
            tag: self.tag,
            bytes,
            loc: Loc::Device,
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
                binomial_scatter(&mut s, root, bytes);
                let block = bytes / p as f64;
                if algo == Algo::ScatterRdAllgather && p.is_power_of_two() {
                    rd_allgather(&mut s, block);
                } else {
                    ring_allgather(&mut s, block);
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
                halving_reduce_scatter(s, v, q, bytes);
                doubling_allgather(s, v, q, bytes);
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

/// MPICH's reduce for long vectors (Rabenseifner's reduce-scatter + gather). Beyond the
/// largest power of two q <= p, the first 2(p-q) ranks pair up: each odd one hands its
/// vector to the even one below it and drops out. The q left (virtual rank v: the even ones
/// as v = rank / 2, the others as rank - (p - q)) reduce-scatter by recursive halving, the
/// partner at distance 1 first, exchanging n/2, n/4, ... n/q; then gather to the root's
/// virtual rank by the same pairs in reverse (distance q/2 first, n/q, 2n/q, ... n/2
/// travelling towards the root). A root that dropped out gets the result from the even rank
/// that stood for it.
fn reduce_scatter_gather(s: &mut Steps, root: u32, bytes: f64) {
    let (me, p) = (s.me, s.p);
    let q = prev_pow2(p);
    let rem = p - q;
    let real = |v: u32| if v < rem { 2 * v } else { v + rem };
    let virt = |r: u32| if r < 2 * rem { r / 2 } else { r - rem };
    let root_out = root < 2 * rem && root % 2 == 1;
    if me < 2 * rem && me % 2 == 1 {
        s.send(me - 1, bytes);
        if me == root {
            s.recv(root - 1, bytes);
        }
        return;
    }
    if me < 2 * rem {
        s.recv(me + 1, bytes);
        s.reduce(bytes);
    }
    let v = virt(me);
    let mut mask = 1;
    let mut size = bytes / 2.0;
    while mask < q {
        let peer = real(v ^ mask);
        s.exchange(peer, size, peer, size);
        s.reduce(size);
        size /= 2.0;
        mask <<= 1;
    }
    let vroot = virt(root);
    let rel = v ^ vroot;
    let mut mask = q / 2;
    let mut size = bytes / q as f64;
    while mask > 0 {
        let peer = real(v ^ mask);
        if rel & mask != 0 {
            s.send(peer, size);
            return;
        }
        s.recv(peer, size);
        size *= 2.0;
        mask >>= 1;
    }
    if root_out {
        s.send(root, bytes);
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

/// Recursive doubling allgather among `q` virtual ranks of a vector split in q blocks.
fn doubling_allgather(s: &mut Steps, v: u32, q: u32, bytes: f64) {
    let mut d = 1;
    let mut size = bytes / q as f64;
    while d < q {
        let peer = real_of(v ^ d, s.p, q);
        s.exchange(peer, size, peer, size);
        size *= 2.0;
        d *= 2;
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

/// Root's subtree parts: each node receives its subtree's share from its parent, then hands
/// each child the share of the child's subtree.
fn binomial_scatter(s: &mut Steps, root: u32, bytes: f64) {
    let (me, p) = (s.me, s.p);
    let rel = (me + p - root) % p;
    let share = |lo: u32, m: u32| bytes * ((lo + m).min(p) - lo) as f64 / p as f64;
    let mut mask = 1;
    while mask < p && rel & mask == 0 {
        mask <<= 1;
    }
    if rel != 0 {
        s.recv((rel - mask + root) % p, share(rel, mask));
    }
    let mut c = mask >> 1;
    while c > 0 {
        if rel + c < p {
            s.send((rel + c + root) % p, share(rel + c, c));
        }
        c >>= 1;
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
                let policy = Policy {
                    force: vec![(coll.name().to_string(), algo)],
                    ..Default::default()
                };
                for p in [2, 3, 4, 5, 8, 12, 16] {
                    balanced(coll, p, &policy);
                }
            }
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
        // ranks 0..3 are ranks 0, 2, 3, 4. Halving: distance 1 (0<->2, 3<->4) n/2, then
        // distance 2 (0<->3, 2<->4) n/4. Gather to virtual 0 (standing for root 1):
        // distance 2 first (3->0, 4->2: n/4), then distance 1 (2->0: n/2); rank 0 sends
        // the result to rank 1.
        let policy = Policy {
            force: vec![("reduce".to_string(), Algo::Rabenseifner)],
            ..Default::default()
        };
        let n = 1e6;
        let coll = Coll::Reduce {
            bytes: n,
            flops: 0.0,
            root: 1,
        };
        let t = |me| transfers(coll, me, 5, &policy);
        assert_eq!(t(1), [('s', 0, n), ('r', 0, n)]);
        let (h, q) = (n / 2.0, n / 4.0);
        assert_eq!(
            t(0),
            [
                ('r', 1, n),
                ('s', 2, h),
                ('r', 2, h),
                ('s', 3, q),
                ('r', 3, q),
                ('r', 3, q),
                ('r', 2, h),
                ('s', 1, n)
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
    fn binomial_bcast_reaches_everyone_once_in_ceil_log2_p_sends_from_the_root() {
        let policy = Policy {
            force: vec![("bcast".to_string(), Algo::Binomial)],
            ..Default::default()
        };
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
}
