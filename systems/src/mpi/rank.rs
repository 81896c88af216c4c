//! The rank interpreter: each rank runs its program (computations, sleeps, point-to-point
//! calls, collectives expanded into point-to-point steps, NCCL calls) until it blocks, and
//! requests complete as the protocol ([`super::protocol`]) reports. Plain state in, effects
//! out ([`Job::take_effects`]).

use std::collections::VecDeque;
use std::sync::Arc;

use hetsim_engine::record::ResId;
use hetsim_schema::SimTime;
use hetsim_schema::cuda::{Coll, NcclCall};
use hetsim_schema::units::Bytes;

use super::collectives;
use super::effects::Effect;
use super::message::Stage;
use super::program::{ANY, Loc, Op, Program};
use super::protocol::{Messages, Notice, Out, reuse_slot};
use crate::platform::Endpoint;

/// An MPI request of a rank. Its slot is reused once the rank has waited for it.
#[derive(Debug, Clone, Copy)]
struct Request {
    done: bool,
    what: What,
    matched: bool,
}

/// What a request is, for stall reports: `send to 3 tag 0 (4096 B)`.
#[derive(Debug, Clone, Copy)]
struct What {
    send: bool,
    /// The destination, or the source ([`ANY`]: any source).
    peer: i64,
    tag: i64,
    bytes: f64,
}

impl std::fmt::Display for What {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let (tag, bytes) = (self.tag, self.bytes);
        match (self.send, self.peer) {
            (true, to) => write!(f, "send to {to} tag {tag} ({bytes} B)"),
            (false, ANY) => write!(f, "recv from any source tag {tag} ({bytes} B)"),
            (false, from) => write!(f, "recv from {from} tag {tag} ({bytes} B)"),
        }
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RankState {
    Ready,
    Computing,
    Blocked,
    Done,
}

/// What keeps a rank busy without waiting for a message.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Busy {
    Compute,
    Sleep,
    /// The software overhead of an MPI call (counted as communication time).
    Overhead,
}

impl Busy {
    fn state(self) -> &'static str {
        match self {
            Busy::Compute => "compute",
            Busy::Sleep => "sleep",
            Busy::Overhead => "mpi",
        }
    }
}

/// A rank's run state.
#[derive(Debug)]
pub struct RankRt {
    program: Arc<Program>,
    pc: usize,
    /// Passes through the program done so far.
    pass: u32,
    /// Expanded collective steps to run before the next program step.
    pending: VecDeque<Op>,
    coll_seq: u64,
    /// NCCL calls made so far, and the one the rank is blocked in.
    nccl_seq: u32,
    pub in_nccl: Option<u32>,
    pub state: RankState,
    /// What the current busy period is.
    busy: Busy,
    /// The MPI call overhead of the next operation is paid.
    overhead_paid: bool,
    reqs: Vec<Request>,
    /// Slots of requests waited for, for the next ones.
    free_reqs: Vec<u32>,
    outstanding: Vec<u32>,
    waiting: Vec<u32>,
    since: SimTime,
    comm_s: f64,
    compute_s: f64,
    end: SimTime,
    /// Flop/s of its GPU.
    speed: f64,
    pub gpu: Endpoint,
    pub node: u32,
    /// Its timeline row, when recording.
    pub row: Option<ResId>,
    /// The step the rank is at (`usize::MAX`: its end), for stall reports.
    at_step: usize,
}

impl RankRt {
    pub fn new(program: Program, node: u32, gpu: u32, speed: f64) -> RankRt {
        RankRt {
            program: Arc::new(program),
            pc: 0,
            pass: 0,
            pending: VecDeque::new(),
            coll_seq: 0,
            nccl_seq: 0,
            in_nccl: None,
            state: RankState::Ready,
            busy: Busy::Compute,
            overhead_paid: false,
            reqs: Vec::new(),
            free_reqs: Vec::new(),
            outstanding: Vec::new(),
            waiting: Vec::new(),
            since: SimTime::ZERO,
            comm_s: 0.0,
            compute_s: 0.0,
            end: SimTime::ZERO,
            speed,
            gpu: Endpoint::Gpu { node, gpu },
            node,
            row: None,
            at_step: 0,
        }
    }

    pub fn calls_nccl(&self) -> bool {
        self.program
            .steps
            .iter()
            .any(|s| matches!(s.op, Op::Nccl { .. }))
    }
}

/// A rank's totals after the run.
#[derive(Debug, Clone, Default)]
pub struct RankTotals {
    pub rank: u32,
    pub node: u32,
    pub gpu: u32,
    pub comm_s: f64,
    pub compute_s: f64,
    pub end_s: f64,
}

/// The ranks of a job, their messages, and what they asked of the world since the last
/// [`Job::take_effects`].
#[derive(Debug, Default)]
pub struct Job {
    pub ranks: Vec<RankRt>,
    pub msgs: Messages,
    ready: Vec<u32>,
    policy: collectives::Policy,
    call_overhead: SimTime,
    out: Out,
}

impl Job {
    /// Every rank is ready at the start.
    pub fn new(
        ranks: Vec<RankRt>,
        msgs: Messages,
        policy: collectives::Policy,
        call_overhead: SimTime,
    ) -> Job {
        Job {
            ready: (0..ranks.len() as u32).collect(),
            ranks,
            msgs,
            policy,
            call_overhead,
            out: Out::default(),
        }
    }

    /// No rank runs until [`Job::start_all`] (a job that starts later).
    pub fn hold(&mut self) {
        self.ready.clear();
    }

    /// Every rank that has not run yet is ready: the job's start.
    pub fn start_all(&mut self) {
        self.ready = (0..self.ranks.len() as u32).collect();
    }

    /// What the job asked of the world, in order (drained: the buffer keeps its capacity
    /// for the next step).
    pub fn take_effects(&mut self) -> std::vec::Drain<'_, Effect> {
        self.out.fx.drain(..)
    }

    /// A flow or timer of message `m` is over.
    pub fn stage_done(&mut self, m: u32, stage: Stage, now: SimTime) {
        self.msgs.on_stage_done(m, stage, now, &mut self.out);
        self.apply_notices(now);
    }

    /// Rank `r`'s busy period is over.
    pub fn wake(&mut self, r: u32, now: SimTime) {
        let rank = &mut self.ranks[r as usize];
        let busy = now.saturating_sub(rank.since).as_secs_f64();
        match rank.busy {
            Busy::Compute => rank.compute_s += busy,
            Busy::Overhead => rank.comm_s += busy,
            Busy::Sleep => {}
        }
        rank.state = RankState::Ready;
        self.ready.push(r);
    }

    /// NCCL call `k` (named `name`) is over: its ranks go on.
    pub fn end_nccl(&mut self, k: u32, name: &str, now: SimTime) {
        for (r, rank) in self.ranks.iter_mut().enumerate() {
            if rank.in_nccl != Some(k) {
                continue;
            }
            rank.in_nccl = None;
            rank.comm_s += now.saturating_sub(rank.since).as_secs_f64();
            if let Some(row) = rank.row {
                self.out.fx.push(Effect::Interval {
                    row,
                    state: "nccl",
                    label: Some(name.to_string()),
                    start: rank.since,
                    end: now,
                });
            }
            rank.state = RankState::Ready;
            self.ready.push(r as u32);
        }
    }

    /// Runs every ready rank until it blocks, computes or ends; ranks readied meanwhile (a
    /// request completing at once) run in the same pass.
    pub fn run_ready(&mut self, now: SimTime) {
        while !self.ready.is_empty() {
            let mut ready = std::mem::take(&mut self.ready);
            ready.sort_unstable();
            ready.dedup();
            for r in ready {
                self.run_rank(r, now);
            }
        }
    }

    fn apply_notices(&mut self, now: SimTime) {
        // Applying a notice never makes another, so the list is walked in place.
        for i in 0..self.out.notices.len() {
            match self.out.notices[i] {
                Notice::Matched { rank, req } => {
                    self.ranks[rank as usize].reqs[req as usize].matched = true;
                }
                Notice::Done { rank, req } => self.complete(rank, req, now),
            }
        }
        self.out.notices.clear();
    }

    /// Runs rank `r` until it blocks, computes or ends.
    fn run_rank(&mut self, r: u32, now: SimTime) {
        let p = self.ranks.len() as u32;
        loop {
            let rank = &mut self.ranks[r as usize];
            if rank.state != RankState::Ready {
                return;
            }
            let op = if let Some(op) = rank.pending.pop_front() {
                op
            } else if rank.pc < rank.program.steps.len() {
                let op = rank.program.steps[rank.pc].op;
                rank.at_step = rank.pc;
                rank.pc += 1;
                op
            } else if rank.pass + 1 < rank.program.repeat {
                rank.pass += 1;
                rank.pc = 0;
                continue;
            } else {
                // MPI_Finalize: wait for what is still outstanding, then end.
                if !rank.outstanding.is_empty() {
                    let all = std::mem::take(&mut rank.outstanding);
                    rank.at_step = usize::MAX;
                    if self.block_on(r, all, now) {
                        return;
                    }
                    continue;
                }
                rank.state = RankState::Done;
                rank.end = now;
                return;
            };
            // Each MPI call first costs the protocol's call overhead (collectives pay it per
            // point-to-point step they expand into).
            let is_call = !matches!(
                op,
                Op::Compute { .. } | Op::ComputeFor { .. } | Op::Sleep { .. } | Op::Coll(_)
            );
            if is_call && self.call_overhead > SimTime::ZERO {
                let rank = &mut self.ranks[r as usize];
                if !rank.overhead_paid {
                    rank.overhead_paid = true;
                    rank.pending.push_front(op);
                    self.busy(r, self.call_overhead.as_secs_f64(), Busy::Overhead, now);
                    return;
                }
                rank.overhead_paid = false;
            }
            if !self.step(r, op, p, now) {
                return;
            }
        }
    }

    /// Runs one operation of rank `r`; false when the rank stops (busy or blocked).
    fn step(&mut self, r: u32, op: Op, p: u32, now: SimTime) -> bool {
        match op {
            Op::Compute { flops } => {
                let secs = flops / self.ranks[r as usize].speed;
                self.busy(r, secs, Busy::Compute, now);
                false
            }
            Op::ComputeFor { secs } => {
                self.busy(r, secs, Busy::Compute, now);
                false
            }
            Op::Sleep { secs } => {
                self.busy(r, secs, Busy::Sleep, now);
                false
            }
            Op::Isend { .. } | Op::Irecv { .. } => {
                let mut outstanding = std::mem::take(&mut self.ranks[r as usize].outstanding);
                self.post(r, op, now, &mut outstanding);
                self.ranks[r as usize].outstanding = outstanding;
                true
            }
            Op::Send { .. } | Op::Recv { .. } | Op::Sendrecv { .. } => {
                let mut reqs = Vec::with_capacity(2);
                self.post(r, op, now, &mut reqs);
                !self.block_on(r, reqs, now)
            }
            Op::Wait => {
                let last = self.ranks[r as usize].outstanding.pop();
                !last.is_some_and(|req| self.block_on(r, vec![req], now))
            }
            Op::Waitall => {
                let all = std::mem::take(&mut self.ranks[r as usize].outstanding);
                !self.block_on(r, all, now)
            }
            Op::WaitFor { send, peer, tag } => {
                let rank = &mut self.ranks[r as usize];
                let found = rank.outstanding.iter().position(|&q| {
                    let w = rank.reqs[q as usize].what;
                    w.send == send && w.peer == peer && w.tag == tag
                });
                // `program::check_waits` made sure the request is there.
                let req = found.map(|k| rank.outstanding.remove(k));
                !req.is_some_and(|req| self.block_on(r, vec![req], now))
            }
            Op::Nccl { op, bytes, root } => {
                self.enter_nccl(r, call_of(op, bytes, root), now);
                false
            }
            Op::Coll(c) => {
                let rank = &mut self.ranks[r as usize];
                let seq = rank.coll_seq;
                rank.coll_seq += 1;
                let ops = collectives::expand(c, r, p, seq, &self.policy);
                for op in ops.into_iter().rev() {
                    rank.pending.push_front(op);
                }
                true
            }
        }
    }

    /// Posts the requests of a point-to-point operation of rank `r` and appends them to
    /// `reqs` in its order (a sendrecv's send, then its receive); none for another operation.
    fn post(&mut self, r: u32, op: Op, now: SimTime, reqs: &mut Vec<u32>) {
        match op {
            Op::Isend {
                dst,
                tag,
                bytes,
                loc,
            }
            | Op::Send {
                dst,
                tag,
                bytes,
                loc,
            } => reqs.push(self.isend(r, dst, tag, bytes, loc, now)),
            Op::Irecv {
                src,
                tag,
                bytes,
                loc,
            }
            | Op::Recv {
                src,
                tag,
                bytes,
                loc,
            } => reqs.push(self.irecv(r, src, tag, bytes, loc, now)),
            Op::Sendrecv {
                dst,
                sbytes,
                src,
                rbytes,
                loc,
            } => {
                reqs.push(self.isend(r, dst, 0, sbytes, loc, now));
                reqs.push(self.irecv(r, src, 0, rbytes, loc, now));
            }
            _ => {}
        }
    }

    /// Rank `r` enters its next NCCL call and blocks until the collective is done.
    fn enter_nccl(&mut self, r: u32, call: NcclCall, now: SimTime) {
        let rank = &mut self.ranks[r as usize];
        let k = rank.nccl_seq;
        rank.nccl_seq += 1;
        rank.in_nccl = Some(k);
        rank.state = RankState::Blocked;
        rank.since = now;
        self.out.fx.push(Effect::Nccl { k, call });
    }

    fn isend(&mut self, r: u32, dst: u32, tag: i64, bytes: f64, loc: Loc, now: SimTime) -> u32 {
        let what = What {
            send: true,
            peer: dst as i64,
            tag,
            bytes,
        };
        let req = self.new_request(r, what);
        self.msgs
            .send(r, dst, tag, bytes, loc, req, now, &mut self.out);
        self.apply_notices(now);
        req
    }

    fn irecv(&mut self, r: u32, src: i64, tag: i64, bytes: f64, loc: Loc, now: SimTime) -> u32 {
        let what = What {
            send: false,
            peer: src,
            tag,
            bytes,
        };
        let req = self.new_request(r, what);
        self.msgs.recv(r, src, tag, loc, req, now, &mut self.out);
        self.apply_notices(now);
        req
    }

    /// Keeps rank `r` busy for `secs`.
    fn busy(&mut self, r: u32, secs: f64, busy: Busy, now: SimTime) {
        let rank = &mut self.ranks[r as usize];
        rank.state = RankState::Computing;
        rank.busy = busy;
        rank.since = now;
        let end = now.saturating_add(SimTime::from_secs_saturating(secs));
        if let Some(row) = rank.row {
            self.out.fx.push(Effect::Interval {
                row,
                state: busy.state(),
                label: None,
                start: now,
                end,
            });
        }
        self.out.fx.push(Effect::Wake { at: end, rank: r });
    }

    /// Blocks rank `r` until `reqs` are done; false if they already are. Requests done are
    /// waited for: their slots are free.
    fn block_on(&mut self, r: u32, reqs: Vec<u32>, now: SimTime) -> bool {
        let rank = &mut self.ranks[r as usize];
        let mut pending = reqs;
        pending.retain(|&q| {
            let done = rank.reqs[q as usize].done;
            if done {
                rank.free_reqs.push(q);
            }
            !done
        });
        if pending.is_empty() {
            return false;
        }
        rank.waiting = pending;
        rank.state = RankState::Blocked;
        rank.since = now;
        true
    }

    fn new_request(&mut self, r: u32, what: What) -> u32 {
        let rank = &mut self.ranks[r as usize];
        let req = Request {
            done: false,
            what,
            matched: false,
        };
        reuse_slot(&mut rank.reqs, &mut rank.free_reqs, req)
    }

    /// Marks a request done; wakes its rank when it was the last one it waited for. A
    /// request waited for is over: its slot is free.
    fn complete(&mut self, r: u32, req: u32, now: SimTime) {
        let rank = &mut self.ranks[r as usize];
        rank.reqs[req as usize].done = true;
        if rank.state != RankState::Blocked {
            return;
        }
        if let Some(i) = rank.waiting.iter().position(|&q| q == req) {
            rank.waiting.remove(i);
            rank.free_reqs.push(req);
            if rank.waiting.is_empty() {
                rank.comm_s += now.saturating_sub(rank.since).as_secs_f64();
                if let Some(row) = rank.row {
                    self.out.fx.push(Effect::Interval {
                        row,
                        state: "wait",
                        label: None,
                        start: rank.since,
                        end: now,
                    });
                }
                rank.state = RankState::Ready;
                self.ready.push(r);
            }
        }
    }

    /// Per-rank totals.
    pub fn totals(&self) -> Vec<RankTotals> {
        self.ranks
            .iter()
            .enumerate()
            .map(|(i, r)| RankTotals {
                rank: i as u32,
                node: r.node,
                gpu: match r.gpu {
                    Endpoint::Gpu { gpu, .. } => gpu,
                    _ => 0,
                },
                comm_s: r.comm_s,
                compute_s: r.compute_s,
                end_s: r.end.as_secs_f64(),
            })
            .collect()
    }

    /// Ranks that have not finished: what each waits for (`arrived(k)`: how many ranks
    /// reached NCCL call `k`).
    pub fn stuck(&self, arrived: impl Fn(u32) -> u32) -> Vec<String> {
        let mut out = Vec::new();
        for (i, r) in self.ranks.iter().enumerate() {
            if r.state == RankState::Done {
                continue;
            }
            if let Some(k) = r.in_nccl {
                out.push(format!(
                    "rank {i} waits in NCCL call {k} for the other ranks ({} of {} arrived)",
                    arrived(k),
                    self.ranks.len()
                ));
                continue;
            }
            let waits: Vec<String> = r
                .waiting
                .iter()
                .map(|&q| {
                    let req = &r.reqs[q as usize];
                    let never = if req.matched { "" } else { " [never matched]" };
                    format!("{}{never}", req.what)
                })
                .collect();
            let at = if r.at_step == usize::MAX {
                "the end of its program (outstanding requests)".to_string()
            } else {
                r.program.at(r.at_step)
            };
            let pass = if r.program.repeat > 1 {
                format!(" in pass {} of {}", r.pass + 1, r.program.repeat)
            } else {
                String::new()
            };
            let what = if waits.is_empty() {
                "nothing (a model error)".to_string()
            } else {
                waits.join("; ")
            };
            out.push(format!("rank {i} waits at {at}{pass} for: {what}"));
        }
        out
    }
}

/// The NCCL call of an `Op::Nccl` (rank programs run on stream 0).
fn call_of(op: Coll, bytes: f64, root: u32) -> NcclCall {
    NcclCall {
        op,
        bytes: Bytes(bytes),
        stream: 0,
        root,
        peer: 1,
    }
}
