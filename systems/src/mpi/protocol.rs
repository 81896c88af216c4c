//! MPI point-to-point protocols: a message's path (NVLink, GPUDirect, HostCopy, host), eager
//! or rendezvous, and the stages its data goes through (handshake, pinning, copies, the data
//! flow). Plain state in, [`Effect`]s and [`Notice`]s out: the coordinator turns effects into
//! calendar events and flows, and the rank interpreter applies notices to requests.

use std::collections::{HashMap, VecDeque};
use std::sync::Arc;

use hetsim_schema::SimTime;
use hetsim_schema::mpi::{CopyAt, ProtocolSpec};

use super::effects::Effect;
use super::matching::{Envelope, Posted, Queues};
use super::message::{Path, RankEnds, Stage};
use super::program::Loc;
use crate::platform::Endpoint;

/// What the rank interpreter must do to a request.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Notice {
    /// Matched with its peer (for stall reports).
    Matched { rank: u32, req: u32 },
    /// Complete: the send's buffer is free again, or the receive's data is there.
    Done { rank: u32, req: u32 },
}

/// What a protocol step produced, in order.
#[derive(Debug, Default)]
pub struct Out {
    pub fx: Vec<Effect>,
    pub notices: Vec<Notice>,
}

/// Model switches the protocol reads.
#[derive(Debug, Clone, Copy)]
pub struct Switches {
    pub gpudirect: bool,
    pub eager: bool,
    pub copy_contention: bool,
    /// Rendezvous sends RTS and waits for CTS; off: the data start once both sides are
    /// there (SMPI's rendezvous).
    pub handshake: bool,
}

/// A message's run state. Its slot is reused once the message is received; `serial` names
/// it in outputs (`m12.data`) and never repeats.
#[derive(Debug, Clone)]
struct MsgRt {
    serial: u64,
    src: u32,
    dst: u32,
    bytes: f64,
    path: Path,
    rendezvous: bool,
    src_loc: Loc,
    dst_loc: Loc,
    send_req: u32,
    recv_req: Option<u32>,
    data_arrived: bool,
    rts_arrived: bool,
    /// The send's request is complete (its notice went out).
    send_done: bool,
}

/// The eager buffers one receiver keeps for one sender: how many are in use, and the eager
/// messages waiting for one, in send order.
#[derive(Debug, Default)]
struct Credits {
    used: u32,
    backlog: VecDeque<u32>,
}

/// Every message of the job, the ranks' matching queues and the nodes' copy queues.
#[derive(Debug, Default)]
pub struct Messages {
    msgs: Vec<MsgRt>,
    /// Slots of received messages, for the next ones.
    free: Vec<u32>,
    serials: u64,
    queues: Vec<Queues>,
    ends: Vec<RankEnds>,
    /// Each rank's timeline row (`node[0].rank[3]`), so that flows link rank to rank.
    rows: Vec<Arc<str>>,
    spec: ProtocolSpec,
    switches: Option<Switches>,
    /// Per node: NVLink transfers in flight, and messages waiting for a copy queue.
    nv_active: Vec<u32>,
    nv_waiting: Vec<VecDeque<u32>>,
    /// Per (sender, receiver) pair with eager buffers in use.
    credits: HashMap<(u32, u32), Credits>,
    /// Messages and bytes per path, in [`Path::ALL`] order.
    pub messages: [u64; 4],
    pub bytes: [f64; 4],
}

impl Messages {
    /// The messages of ranks at `ends`, named `rows` in flows, on a platform of `nodes` nodes.
    pub fn new(
        spec: ProtocolSpec,
        ends: Vec<RankEnds>,
        rows: Vec<String>,
        nodes: usize,
        switches: Switches,
    ) -> Self {
        Messages {
            queues: vec![Queues::default(); ends.len()],
            rows: rows.into_iter().map(Arc::from).collect(),
            ends,
            spec,
            switches: Some(switches),
            nv_active: vec![0; nodes],
            nv_waiting: vec![VecDeque::new(); nodes],
            ..Default::default()
        }
    }

    fn switches(&self) -> Switches {
        self.switches.expect("set up")
    }

    /// Rank `r` sends (its request `req`): the envelope reaches the receiver's queues now,
    /// in send order; the data follow eagerly or after a rendezvous handshake.
    #[allow(clippy::too_many_arguments)]
    pub fn send(
        &mut self,
        r: u32,
        dst: u32,
        tag: i64,
        bytes: f64,
        loc: Loc,
        req: u32,
        now: SimTime,
        out: &mut Out,
    ) {
        let sw = self.switches();
        let path = self.path(r, dst, loc);
        let rendezvous = path == Path::GpuDirect || bytes > self.spec.eager_limit.0 || !sw.eager;
        let msg = MsgRt {
            serial: self.serials,
            src: r,
            dst,
            bytes,
            path,
            rendezvous,
            src_loc: loc,
            dst_loc: loc,
            send_req: req,
            recv_req: None,
            data_arrived: false,
            rts_arrived: false,
            send_done: false,
        };
        self.serials += 1;
        let m = self.slot(msg);
        let k = Path::ALL.iter().position(|&p| p == path).unwrap_or(0);
        self.messages[k] += 1;
        self.bytes[k] += bytes;
        let env = Envelope {
            msg: m,
            src: r,
            tag,
        };
        if let Some(p) = self.queues[dst as usize].arrive(env) {
            self.matched(m, dst, p.req, p.loc, now, out);
        }
        if rendezvous && !sw.handshake {
            // No RTS to send: the receiver knows of the message at once.
            self.rts_arrives(m, now, out);
        } else if rendezvous {
            let (a, b) = (self.ends[r as usize].host, self.ends[dst as usize].host);
            self.control(m, Stage::Rts, a, b, out);
        } else {
            self.take_credit(m, now, out);
        }
    }

    /// How a message of rank `r` to `dst` with buffers at `loc` travels: over NVLink within a
    /// node, GPUDirect or staged through host memory between nodes, or host to host.
    fn path(&self, r: u32, dst: u32, loc: Loc) -> Path {
        let same_node = self.ends[r as usize].node == self.ends[dst as usize].node;
        match (loc, same_node) {
            (Loc::Device, true) => Path::Nvlink,
            (Loc::Device, false) if self.switches().gpudirect => Path::GpuDirect,
            (Loc::Device, false) => Path::HostCopy,
            (Loc::Host, _) => Path::Host,
        }
    }

    /// A slot for `msg`: a freed one reused, else a new one. Its index.
    fn slot(&mut self, msg: MsgRt) -> u32 {
        reuse_slot(&mut self.msgs, &mut self.free, msg)
    }

    /// Rank `r` posts a receive (its request `req`).
    #[allow(clippy::too_many_arguments)]
    pub fn recv(
        &mut self,
        r: u32,
        src: i64,
        tag: i64,
        loc: Loc,
        req: u32,
        now: SimTime,
        out: &mut Out,
    ) {
        let posted = Posted { src, tag, req, loc };
        if let Some(m) = self.queues[r as usize].post(posted) {
            self.matched(m, r, req, loc, now, out);
        }
    }

    fn matched(&mut self, m: u32, r: u32, req: u32, loc: Loc, now: SimTime, out: &mut Out) {
        let msg = &mut self.msgs[m as usize];
        out.notices.push(Notice::Matched { rank: r, req });
        // An eager send may be complete (and its request gone) before its receive is posted.
        if !msg.send_done {
            out.notices.push(Notice::Matched {
                rank: msg.src,
                req: msg.send_req,
            });
        }
        msg.recv_req = Some(req);
        msg.dst_loc = loc;
        if msg.rendezvous {
            if msg.rts_arrived {
                self.answer_rts(m, now, out);
            }
        } else if msg.data_arrived {
            self.deliver(m, now, out);
        }
    }

    /// An eager message takes one of its receiver's buffers for its sender, or waits for one.
    fn take_credit(&mut self, m: u32, now: SimTime, out: &mut Out) {
        let msg = &self.msgs[m as usize];
        let credits = self.credits.entry((msg.src, msg.dst)).or_default();
        if credits.used < self.spec.eager_credits {
            credits.used += 1;
            self.begin_data(m, now, out);
        } else {
            credits.backlog.push_back(m);
        }
    }

    /// An eager message was received: its buffer serves the next message waiting for one.
    fn return_credit(&mut self, src: u32, dst: u32, now: SimTime, out: &mut Out) {
        let key = (src, dst);
        let Some(credits) = self.credits.get_mut(&key) else {
            return;
        };
        match credits.backlog.pop_front() {
            Some(next) => self.begin_data(next, now, out),
            None => {
                credits.used -= 1;
                if credits.used == 0 {
                    self.credits.remove(&key);
                }
            }
        }
    }

    /// A rendezvous message's RTS is at its receiver: a posted receive answers it.
    fn rts_arrives(&mut self, m: u32, now: SimTime, out: &mut Out) {
        self.msgs[m as usize].rts_arrived = true;
        if self.msgs[m as usize].recv_req.is_some() {
            self.answer_rts(m, now, out);
        }
    }

    /// The receiver has both the RTS and its receive: it sends CTS, or without the handshake
    /// the data start.
    fn answer_rts(&mut self, m: u32, now: SimTime, out: &mut Out) {
        if self.switches().handshake {
            self.send_cts(m, out);
        } else {
            self.begin_data(m, now, out);
        }
    }

    fn send_cts(&mut self, m: u32, out: &mut Out) {
        let msg = &self.msgs[m as usize];
        let (a, b) = (
            self.ends[msg.dst as usize].host,
            self.ends[msg.src as usize].host,
        );
        self.control(m, Stage::Cts, a, b, out);
    }

    /// A control message (RTS, CTS) between two hosts.
    fn control(&self, m: u32, stage: Stage, from: Endpoint, to: Endpoint, out: &mut Out) {
        out.fx.push(Effect::Control {
            msg: m,
            serial: self.msgs[m as usize].serial,
            stage,
            from,
            to,
            bytes: self.spec.control_size.0,
        });
    }

    /// The data phase: copies or pinning first, then the data flow.
    fn begin_data(&mut self, m: u32, now: SimTime, out: &mut Out) {
        let msg = &self.msgs[m as usize];
        match msg.path {
            Path::GpuDirect => out.fx.push(Effect::Timer {
                at: now.saturating_add(self.spec.gpudirect_delay.0),
                msg: m,
                stage: Stage::Pinned,
            }),
            Path::HostCopy if msg.src_loc == Loc::Device => self.copy(m, Stage::CopyOut, now, out),
            _ => self.data_flow(m, out),
        }
    }

    /// A device<->host copy: fixed delay plus a per-byte cost, or the delay then a PCIe flow.
    fn copy(&self, m: u32, stage: Stage, now: SimTime, out: &mut Out) {
        let bytes = self.msgs[m as usize].bytes;
        let delay = self.spec.gpu_copy_delay.0;
        let (at, stage) = if self.switches().copy_contention {
            let then = if stage == Stage::CopyOut {
                Stage::CopyOutFlow
            } else {
                Stage::CopyInFlow
            };
            (now.saturating_add(delay), then)
        } else {
            let per_byte = SimTime::from_secs_saturating(bytes * self.spec.gpu_copy_per_byte.0);
            (now.saturating_add(delay).saturating_add(per_byte), stage)
        };
        out.fx.push(Effect::Timer { at, msg: m, stage });
    }

    /// The data is injected: its flow starts, and an eager send is complete (its data sits
    /// in the network or in the receiver's eager buffer; the sender's buffer is free).
    fn data_flow(&mut self, m: u32, out: &mut Out) {
        let msg = &self.msgs[m as usize];
        if msg.path == Path::Nvlink {
            // A bounded number of copy queues per node.
            let node = self.ends[msg.src as usize].node as usize;
            if self.nv_active[node] >= self.spec.copy_queues {
                self.nv_waiting[node].push_back(m);
                return;
            }
            self.nv_active[node] += 1;
        }
        let (s, d) = (&self.ends[msg.src as usize], &self.ends[msg.dst as usize]);
        let (a, b) = match msg.path {
            Path::Nvlink | Path::GpuDirect => (s.gpu, d.gpu),
            Path::HostCopy | Path::Host => (s.host, d.host),
        };
        self.flow(m, Stage::Data, a, b, out);
        if !self.msgs[m as usize].rendezvous {
            self.finish_send(m, out);
        }
    }

    fn flow(&self, m: u32, stage: Stage, from: Endpoint, to: Endpoint, out: &mut Out) {
        let msg = &self.msgs[m as usize];
        out.fx.push(Effect::Flow {
            msg: m,
            serial: msg.serial,
            stage,
            from,
            to,
            bytes: msg.bytes,
            src_row: self.rows[msg.src as usize].clone(),
            dst_row: self.rows[msg.dst as usize].clone(),
        });
    }

    /// The data is at the receiver: a copy to the device if HostCopy asks, then completion.
    fn deliver(&mut self, m: u32, now: SimTime, out: &mut Out) {
        let msg = &self.msgs[m as usize];
        let copy_in = msg.path == Path::HostCopy
            && msg.dst_loc == Loc::Device
            && self.spec.copy_at == CopyAt::Both;
        if copy_in {
            self.copy(m, Stage::CopyIn, now, out);
        } else {
            self.finish_recv(m, now, out);
        }
    }

    fn finish_send(&mut self, m: u32, out: &mut Out) {
        let msg = &mut self.msgs[m as usize];
        msg.send_done = true;
        out.notices.push(Notice::Done {
            rank: msg.src,
            req: msg.send_req,
        });
    }

    /// The receive is complete: the message's last step. An eager buffer returns to its
    /// sender, and the slot is free.
    fn finish_recv(&mut self, m: u32, now: SimTime, out: &mut Out) {
        let msg = &self.msgs[m as usize];
        debug_assert!(
            msg.send_done,
            "a message is received after its send is done"
        );
        out.notices.push(Notice::Done {
            rank: msg.dst,
            req: msg.recv_req.expect("a delivered message is matched"),
        });
        let (src, dst, eager) = (msg.src, msg.dst, !msg.rendezvous);
        self.free.push(m);
        if eager {
            self.return_credit(src, dst, now, out);
        }
    }

    /// A timer or flow of message `m` is over.
    pub fn on_stage_done(&mut self, m: u32, stage: Stage, now: SimTime, out: &mut Out) {
        match stage {
            Stage::Rts => self.rts_arrives(m, now, out),
            Stage::Cts => self.begin_data(m, now, out),
            Stage::Pinned | Stage::CopyOut => self.data_flow(m, out),
            Stage::CopyOutFlow => {
                let s = &self.ends[self.msgs[m as usize].src as usize];
                self.flow(m, Stage::CopyOut, s.gpu, s.host, out);
            }
            Stage::CopyInFlow => {
                let d = &self.ends[self.msgs[m as usize].dst as usize];
                self.flow(m, Stage::CopyIn, d.host, d.gpu, out);
            }
            Stage::Data => {
                if self.msgs[m as usize].path == Path::Nvlink {
                    let node = self.ends[self.msgs[m as usize].src as usize].node as usize;
                    self.nv_active[node] -= 1;
                    if let Some(next) = self.nv_waiting[node].pop_front() {
                        self.data_flow(next, out);
                    }
                }
                // A rendezvous send completes with its data transfer (the RDMA completion).
                if self.msgs[m as usize].rendezvous {
                    self.finish_send(m, out);
                }
                let msg = &mut self.msgs[m as usize];
                msg.data_arrived = true;
                if msg.recv_req.is_some() {
                    self.deliver(m, now, out);
                }
            }
            Stage::CopyIn => self.finish_recv(m, now, out),
        }
    }
}

/// Puts `item` in `items` at a freed index if there is one, else at the end: its index.
/// (Messages and requests are kept so, their numbers reused once they are done.)
pub(super) fn reuse_slot<T>(items: &mut Vec<T>, free: &mut Vec<u32>, item: T) -> u32 {
    match free.pop() {
        Some(i) => {
            items[i as usize] = item;
            i
        }
        None => {
            items.push(item);
            items.len() as u32 - 1
        }
    }
}

#[cfg(test)]
mod tests {
    use super::super::message;
    use super::*;

    /// Two ranks on two nodes, one GPU each.
    fn two_nodes(gpudirect: bool) -> Messages {
        let end = |node| RankEnds {
            node,
            gpu: Endpoint::Gpu { node, gpu: 0 },
            host: Endpoint::Host { node },
        };
        let switches = Switches {
            gpudirect,
            eager: true,
            copy_contention: false,
            handshake: true,
        };
        let rows = vec![message::rank_row(0, 0), message::rank_row(1, 1)];
        Messages::new(
            ProtocolSpec::default(),
            vec![end(0), end(1)],
            rows,
            2,
            switches,
        )
    }

    fn kinds(out: &mut Out) -> Vec<String> {
        out.fx
            .drain(..)
            .map(|fx| match fx {
                Effect::Timer { at, stage, .. } => format!("timer {} at {}", stage.name(), at.0),
                Effect::Control { stage, .. } => format!("control {}", stage.name()),
                Effect::Flow {
                    stage, from, to, ..
                } => {
                    format!("flow {} {from:?}->{to:?}", stage.name())
                }
                other => format!("{other:?}"),
            })
            .collect()
    }

    #[test]
    fn a_gpudirect_message_shakes_hands_pins_then_moves_gpu_to_gpu() {
        let mut p = two_nodes(true);
        let mut out = Out::default();
        let t = SimTime(1_000);
        p.send(0, 1, 7, 1e6, Loc::Device, 0, t, &mut out);
        assert_eq!(kinds(&mut out), ["control rts"]);
        // The RTS arrives before the receive: nothing until it is posted, then the CTS.
        p.on_stage_done(0, Stage::Rts, t, &mut out);
        assert!(out.fx.is_empty());
        p.recv(1, 0, 7, Loc::Device, 3, t, &mut out);
        assert_eq!(kinds(&mut out), ["control cts"]);
        assert_eq!(
            out.notices.drain(..).collect::<Vec<_>>(),
            [
                Notice::Matched { rank: 1, req: 3 },
                Notice::Matched { rank: 0, req: 0 }
            ]
        );
        // CTS: pinning (4 us by default), then the data flow GPU to GPU.
        p.on_stage_done(0, Stage::Cts, t, &mut out);
        let pin = t.saturating_add(ProtocolSpec::default().gpudirect_delay.0);
        assert_eq!(kinds(&mut out), [format!("timer pin at {}", pin.0)]);
        p.on_stage_done(0, Stage::Pinned, pin, &mut out);
        assert_eq!(
            kinds(&mut out),
            ["flow data Gpu { node: 0, gpu: 0 }->Gpu { node: 1, gpu: 0 }"]
        );
        // The data are there: both requests complete.
        p.on_stage_done(0, Stage::Data, pin, &mut out);
        assert_eq!(
            out.notices,
            [
                Notice::Done { rank: 0, req: 0 },
                Notice::Done { rank: 1, req: 3 }
            ]
        );
        assert_eq!((p.messages, p.bytes[1]), ([0, 1, 0, 0], 1e6));
    }

    #[test]
    fn an_eager_hostcopy_message_waits_for_its_receive_after_arriving() {
        let mut p = two_nodes(false);
        let mut out = Out::default();
        p.send(0, 1, 0, 100.0, Loc::Device, 0, SimTime::ZERO, &mut out);
        // Eager: the device-to-host copy starts at once (2 us + 0.07 ns/B by default).
        let spec = ProtocolSpec::default();
        let copy = spec
            .gpu_copy_delay
            .0
            .saturating_add(SimTime::from_secs_saturating(
                100.0 * spec.gpu_copy_per_byte.0,
            ));
        assert_eq!(kinds(&mut out), [format!("timer d2h at {}", copy.0)]);
        // The copy into the host's buffer is over: the data flow starts and the send is done.
        p.on_stage_done(0, Stage::CopyOut, copy, &mut out);
        assert_eq!(
            kinds(&mut out),
            ["flow data Host { node: 0 }->Host { node: 1 }"]
        );
        assert_eq!(
            out.notices.drain(..).collect::<Vec<_>>(),
            [Notice::Done { rank: 0, req: 0 }]
        );
        // The data arrive unmatched; the receive, posted later, finds them and copies them in.
        p.on_stage_done(0, Stage::Data, copy, &mut out);
        assert!(out.notices.is_empty());
        p.recv(1, 0, 0, Loc::Device, 5, copy, &mut out);
        assert_eq!(
            kinds(&mut out),
            [format!("timer h2d at {}", copy.0 + copy.0)]
        );
        p.on_stage_done(0, Stage::CopyIn, copy, &mut out);
        assert_eq!(out.notices.last(), Some(&Notice::Done { rank: 1, req: 5 }));
    }

    #[test]
    fn a_received_message_frees_its_slot_and_names_stay_unique() {
        let mut p = two_nodes(false);
        let mut out = Out::default();
        let mut names = Vec::new();
        for i in 0..3 {
            p.recv(1, 0, 0, Loc::Host, i, SimTime::ZERO, &mut out);
            p.send(0, 1, 0, 100.0, Loc::Host, i, SimTime::ZERO, &mut out);
            for fx in out.fx.drain(..) {
                if let Effect::Flow { msg, serial, .. } = fx {
                    names.push((msg, serial));
                }
            }
            p.on_stage_done(0, Stage::Data, SimTime::ZERO, &mut out);
        }
        // One slot serves the three messages in turn; their flows are m0, m1, m2.
        assert_eq!(names, [(0, 0), (0, 1), (0, 2)]);
        assert_eq!((p.msgs.len(), p.free.len()), (1, 1));
        assert!(p.credits.is_empty(), "every eager buffer came back");
    }

    #[test]
    fn a_sender_out_of_eager_buffers_queues_until_a_receive_completes() {
        let mut p = two_nodes(false);
        p.spec = ProtocolSpec {
            eager_credits: 2,
            ..Default::default()
        };
        let mut out = Out::default();
        for req in 0..3 {
            p.send(0, 1, 0, 100.0, Loc::Host, req, SimTime::ZERO, &mut out);
        }
        // Two flows start and their sends are done; the third waits for a buffer.
        assert_eq!(kinds(&mut out).len(), 2);
        let done = |out: &mut Out| -> Vec<Notice> { out.notices.drain(..).collect() };
        assert_eq!(
            done(&mut out),
            [
                Notice::Done { rank: 0, req: 0 },
                Notice::Done { rank: 0, req: 1 }
            ]
        );
        p.on_stage_done(0, Stage::Data, SimTime(5), &mut out);
        assert!(
            out.fx.is_empty(),
            "arrived but not received: the buffer is held"
        );
        p.recv(1, 0, 0, Loc::Host, 7, SimTime(6), &mut out);
        // The receive completes, the buffer goes to the third message: its flow, its send.
        assert_eq!(
            kinds(&mut out),
            ["flow data Host { node: 0 }->Host { node: 1 }"]
        );
        assert_eq!(
            done(&mut out),
            [
                Notice::Matched { rank: 1, req: 7 },
                Notice::Done { rank: 1, req: 7 },
                Notice::Done { rank: 0, req: 2 }
            ]
        );
    }
}
