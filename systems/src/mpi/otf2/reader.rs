//! One rank's events turned into its program, with TraceR's semantics (see the module above).

use std::collections::HashMap;

use hetsim_schema::mpi::{Buffers, GpuBuffers};
use otf2::{CollectiveOp, Definitions, EventKind};

use super::world::World;
use crate::mpi::collectives::{self, Policy};
use crate::mpi::program::{Coll, Loc, Op, Step};

/// The flop rate compute gaps are expressed in (1 Gflop/s, SimGrid's usual host speed).
pub const FLOPS_PER_SECOND: f64 = 1e9;

/// What every rank's reading shares.
pub(super) struct Context<'a> {
    pub(super) defs: &'a Definitions,
    pub(super) world: &'a World,
    pub(super) buffers: &'a GpuBuffers,
    pub(super) default: Buffers,
    pub(super) gpu_attribute: Option<u32>,
    pub(super) ticks: f64,
    pub(super) scale: f64,
    pub(super) policy: &'a Policy,
}

/// A message record's fields: the peer is a rank of the communicator.
#[derive(Debug, Clone, Copy)]
struct Msg {
    peer: u32,
    comm: u32,
    tag: u32,
    length: u64,
}

/// One rank's reading state.
pub(super) struct Reader<'a> {
    ctx: &'a Context<'a>,
    /// This rank's world rank.
    me: u32,
    /// Collectives so far per communicator smaller than the world.
    comm_calls: HashMap<u32, u64>,
    /// Steps, `None` where a cancelled request was dropped.
    pub(super) steps: Vec<Option<Step>>,
    /// The time of the rank's previous record (ticks).
    last: Option<u64>,
    entered: bool,
    regions: Vec<u32>,
    /// Irecv requests posted, by request id: their step.
    irecvs: HashMap<u64, usize>,
    /// Isend requests outstanding: their step.
    isends: HashMap<u64, usize>,
    /// Waits owed at the end of the MPI_Sendrecv being read.
    sendrecv: Vec<Op>,
    pub(super) host_messages: u64,
}

impl<'a> Reader<'a> {
    pub(super) fn new(ctx: &'a Context<'a>, me: u32) -> Reader<'a> {
        Reader {
            ctx,
            me,
            comm_calls: HashMap::new(),
            steps: Vec::new(),
            last: None,
            entered: false,
            regions: Vec::new(),
            irecvs: HashMap::new(),
            isends: HashMap::new(),
            sendrecv: Vec::new(),
            host_messages: 0,
        }
    }

    fn push(&mut self, op: Op, line: u32) -> usize {
        self.steps.push(Some(Step { op, line }));
        self.steps.len() - 1
    }

    fn in_sendrecv(&self) -> bool {
        self.regions
            .last()
            .is_some_and(|&r| self.ctx.defs.region_name(r).starts_with("MPI_Sendrecv"))
    }

    /// Where a message's buffer is, by the most specific rule.
    fn loc(&mut self, e: &otf2::Event, comm: u32) -> Loc {
        let (defs, buffers) = (self.ctx.defs, self.ctx.buffers);
        let by_attribute = self.ctx.gpu_attribute.and_then(|id| {
            e.attributes
                .iter()
                .find(|(a, _)| *a == id)
                .and_then(|(_, v)| v.as_i128())
                .map(|v| {
                    if v != 0 {
                        Buffers::Device
                    } else {
                        Buffers::Host
                    }
                })
        });
        let region = self.regions.last().map(|&r| defs.region_name(r));
        let by_region = region.and_then(|n| buffers.regions.get(n).copied());
        let by_comm = buffers.comms.get(self.comm_name(comm)).copied();
        let loc = Loc::from(
            by_attribute
                .or(by_region)
                .or(by_comm)
                .unwrap_or(self.ctx.default),
        );
        if loc == Loc::Host {
            self.host_messages += 1;
        }
        loc
    }

    /// A message record as world peer, tag in its communicator's space, bytes, buffer.
    fn message(&mut self, e: &otf2::Event, m: Msg) -> Result<(u32, i64, f64, Loc), String> {
        let w = self.ctx.world;
        Ok((
            w.world_rank(m.comm, m.peer)?,
            w.tag(m.comm, m.tag),
            m.length as f64,
            self.loc(e, m.comm),
        ))
    }

    pub(super) fn event(&mut self, e: &otf2::Event, n: u32) -> Result<(), String> {
        let msg = |peer, comm, tag, length| Msg {
            peer,
            comm,
            tag,
            length,
        };
        match e.kind {
            EventKind::Enter { region } => self.enter(e.time, region, n),
            EventKind::Leave { .. } => self.leave(n),
            EventKind::MeasurementOnOff { .. } | EventKind::MpiCollectiveBegin => {}
            EventKind::MpiSend {
                receiver,
                comm,
                tag,
                length,
            } => self.send(e, msg(receiver, comm, tag, length), None, n)?,
            EventKind::MpiIsend {
                receiver,
                comm,
                tag,
                length,
                request,
            } => self.send(e, msg(receiver, comm, tag, length), Some(request), n)?,
            EventKind::MpiIsendComplete { request } => self.isend_complete(request, n)?,
            EventKind::MpiIrecvRequest { request } => self.irecv_request(request, n)?,
            EventKind::MpiRecv {
                sender,
                comm,
                tag,
                length,
            } => self.recv(e, msg(sender, comm, tag, length), n)?,
            EventKind::MpiIrecv {
                sender,
                comm,
                tag,
                length,
                request,
            } => self.irecv_complete(e, msg(sender, comm, tag, length), request, n)?,
            EventKind::MpiRequestTest { .. } | EventKind::Other(_) => return Ok(()),
            EventKind::MpiRequestCancelled { request } => {
                self.cancel(request);
                return Ok(());
            }
            EventKind::MpiCollectiveEnd {
                op,
                comm,
                root,
                sent,
                received,
            } => self.collective(op, comm, root, (sent, received), n)?,
        }
        self.last = Some(e.time);
        Ok(())
    }

    /// Entering a region: the time since the previous record is compute (not before the
    /// rank's first region).
    fn enter(&mut self, time: u64, region: u32, n: u32) {
        if self.entered {
            let gap = time.saturating_sub(self.last.unwrap_or(time));
            if gap > 0 {
                let secs = gap as f64 / self.ctx.ticks * self.ctx.scale;
                self.push(
                    Op::Compute {
                        flops: secs * FLOPS_PER_SECOND,
                    },
                    n,
                );
            }
        }
        self.entered = true;
        self.regions.push(region);
    }

    /// Leaving a region: an MPI_Sendrecv waits for both its halves.
    fn leave(&mut self, n: u32) {
        if self.in_sendrecv() {
            for op in std::mem::take(&mut self.sendrecv) {
                self.push(op, n);
            }
        }
        self.regions.pop();
    }

    /// MpiSend (blocking; both halves posted together inside MPI_Sendrecv) or MpiIsend.
    fn send(
        &mut self,
        e: &otf2::Event,
        m: Msg,
        request: Option<u64>,
        n: u32,
    ) -> Result<(), String> {
        let (dst, tag, bytes, loc) = self.message(e, m)?;
        let posted = Op::Isend {
            dst,
            tag,
            bytes,
            loc,
        };
        match request {
            Some(req) => {
                let step = self.push(posted, n);
                self.isends.insert(req, step);
            }
            None if self.in_sendrecv() => {
                self.push(posted, n);
                self.sendrecv.push(Op::WaitFor {
                    send: true,
                    peer: dst as i64,
                    tag,
                });
            }
            None => {
                self.push(
                    Op::Send {
                        dst,
                        tag,
                        bytes,
                        loc,
                    },
                    n,
                );
            }
        }
        Ok(())
    }

    fn isend_complete(&mut self, request: u64, n: u32) -> Result<(), String> {
        let step = self.isends.remove(&request).ok_or_else(|| {
            format!("MpiIsendComplete of request {request}, which no MpiIsend started")
        })?;
        let Some(Some(Step {
            op: Op::Isend { dst, tag, .. },
            ..
        })) = self.steps.get(step)
        else {
            unreachable!("isends point at isend steps");
        };
        let (peer, tag) = (*dst as i64, *tag);
        self.push(
            Op::WaitFor {
                send: true,
                peer,
                tag,
            },
            n,
        );
        Ok(())
    }

    /// An irecv posted: its peer, tag and size come with its completion.
    fn irecv_request(&mut self, request: u64, n: u32) -> Result<(), String> {
        let step = self.push(Op::Waitall, n);
        self.steps[step] = None;
        if self.irecvs.insert(request, step).is_some() {
            return Err(format!(
                "MpiIrecvRequest of request {request}, which is already posted"
            ));
        }
        Ok(())
    }

    /// MpiRecv: blocking, or posted with its send inside MPI_Sendrecv.
    fn recv(&mut self, e: &otf2::Event, m: Msg, n: u32) -> Result<(), String> {
        let (src, tag, bytes, loc) = self.message(e, m)?;
        let src = src as i64;
        if self.in_sendrecv() {
            self.push(
                Op::Irecv {
                    src,
                    tag,
                    bytes,
                    loc,
                },
                n,
            );
            self.sendrecv.push(Op::WaitFor {
                send: false,
                peer: src,
                tag,
            });
        } else {
            self.push(
                Op::Recv {
                    src,
                    tag,
                    bytes,
                    loc,
                },
                n,
            );
        }
        Ok(())
    }

    /// MpiIrecv completes a posted irecv: the posted step gets its fields, then the wait.
    fn irecv_complete(
        &mut self,
        e: &otf2::Event,
        m: Msg,
        request: u64,
        n: u32,
    ) -> Result<(), String> {
        let (src, tag, bytes, loc) = self.message(e, m)?;
        let src = src as i64;
        let step = self.irecvs.remove(&request).ok_or_else(|| {
            format!("MpiIrecv completes request {request}, which no MpiIrecvRequest posted")
        })?;
        self.steps[step] = Some(Step {
            op: Op::Irecv {
                src,
                tag,
                bytes,
                loc,
            },
            line: n,
        });
        self.push(
            Op::WaitFor {
                send: false,
                peer: src,
                tag,
            },
            n,
        );
        Ok(())
    }

    /// A cancelled request is dropped from the program.
    fn cancel(&mut self, request: u64) {
        if let Some(step) = self
            .irecvs
            .remove(&request)
            .or_else(|| self.isends.remove(&request))
        {
            self.steps[step] = None;
        }
    }

    /// MpiCollectiveEnd: nothing on MPI_COMM_SELF, the collective on the world, its
    /// point-to-point steps on a smaller communicator.
    fn collective(
        &mut self,
        op: CollectiveOp,
        comm: u32,
        root: u32,
        (sent, received): (u64, u64),
        n: u32,
    ) -> Result<(), String> {
        let w = self.ctx.world;
        let ranks = w.ranks(comm)?;
        if ranks.len() <= 1 {
            return Ok(());
        }
        let world = Some(comm) == w.world_comm;
        let me = ranks.iter().position(|&r| r == self.me).ok_or_else(|| {
            format!(
                "{} on communicator {comm} (`{}`), which this rank is not in",
                op.name(),
                self.comm_name(comm)
            )
        })? as u32;
        if root != u32::MAX && root as usize >= ranks.len() {
            return Err(format!("root {root} is not a rank of communicator {comm}"));
        }
        // Roots are communicator ranks (the world's for a world collective).
        let root = if world && root != u32::MAX {
            ranks[root as usize]
        } else {
            root
        };
        let coll = coll_of(op, root, sent, received, ranks.len() as f64)?;
        if world {
            self.push(Op::Coll(coll), n);
            return Ok(());
        }
        let ranks = ranks.clone();
        let seq = self.comm_calls.entry(comm).or_default();
        let ops = collectives::expand(coll, me, ranks.len() as u32, *seq, self.ctx.policy);
        *seq += 1;
        for op in ops {
            self.push(in_communicator(op, &ranks, comm), n);
        }
        Ok(())
    }

    /// A communicator's name ("" for an unknown one).
    fn comm_name(&self, comm: u32) -> &'a str {
        let defs = self.ctx.defs;
        defs.comms.get(&comm).map_or("", |c| defs.string(c.name))
    }

    pub(super) fn finish(&mut self) -> Result<(), String> {
        if let Some((req, _)) = self.irecvs.iter().min_by_key(|(r, _)| **r) {
            return Err(format!(
                "request {req} was posted (MpiIrecvRequest) but never completed or cancelled: its sender is unknown"
            ));
        }
        Ok(())
    }
}

/// A collective from MpiCollectiveEnd's fields, with TraceR's sizes, on `p` ranks.
fn coll_of(op: CollectiveOp, root: u32, sent: u64, received: u64, p: f64) -> Result<Coll, String> {
    let rooted = || {
        if root == u32::MAX {
            Err(format!("{} has no root", op.name()))
        } else {
            Ok(root)
        }
    };
    Ok(match op {
        CollectiveOp::Barrier => Coll::Barrier,
        CollectiveOp::Bcast => Coll::Bcast {
            bytes: received as f64,
            root: rooted()?,
        },
        CollectiveOp::Reduce => Coll::Reduce {
            bytes: sent as f64,
            flops: 0.0,
            root: rooted()?,
        },
        CollectiveOp::Allreduce => Coll::Allreduce {
            bytes: sent as f64 / p,
            flops: 0.0,
        },
        CollectiveOp::Alltoall | CollectiveOp::Alltoallv => Coll::Alltoall {
            bytes: sent as f64 / p,
        },
        CollectiveOp::Allgather | CollectiveOp::Allgatherv => Coll::Allgather {
            bytes: received as f64 / p,
        },
        CollectiveOp::ReduceScatter | CollectiveOp::ReduceScatterBlock => Coll::ReduceScatter {
            bytes: sent as f64,
            flops: 0.0,
        },
        other => {
            return Err(format!(
                "{} is not replayed by hetsim (it replays barrier, bcast, reduce, allreduce, allgather(v), alltoall(v), reduce_scatter(_block))",
                other.name()
            ));
        }
    })
}

/// A step of a collective on a communicator: peers as world ranks, tags in the
/// communicator's own space.
fn in_communicator(mut op: Op, ranks: &[u32], comm: u32) -> Op {
    let shift = (comm as i64 + 1) << 36;
    match &mut op {
        Op::Isend { dst, tag, .. } | Op::Send { dst, tag, .. } => {
            *dst = ranks[*dst as usize];
            *tag -= shift;
        }
        Op::Irecv { src, tag, .. } | Op::Recv { src, tag, .. } => {
            *src = ranks[*src as usize] as i64;
            *tag -= shift;
        }
        _ => {}
    }
    op
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn collective_sizes_are_tracers() {
        // Score-P counts what a rank sends and receives in all: an allreduce of 1 KiB on 4
        // ranks records 4 KiB sent; TraceR divides by the communicator's size.
        let c = coll_of(CollectiveOp::Allreduce, u32::MAX, 4096, 4096, 4.0).unwrap();
        assert_eq!(
            c,
            Coll::Allreduce {
                bytes: 1024.0,
                flops: 0.0
            }
        );
        let c = coll_of(CollectiveOp::Bcast, 2, 0, 512, 4.0).unwrap();
        assert_eq!(
            c,
            Coll::Bcast {
                bytes: 512.0,
                root: 2
            }
        );
        assert!(
            coll_of(CollectiveOp::Gather, 0, 8, 32, 4.0)
                .unwrap_err()
                .contains("GATHER")
        );
        assert!(coll_of(CollectiveOp::Bcast, u32::MAX, 0, 8, 4.0).is_err());
    }

    #[test]
    fn a_communicators_steps_name_world_ranks_in_its_tag_space() {
        let op = Op::Isend {
            dst: 2,
            tag: -2,
            bytes: 8.0,
            loc: Loc::Host,
        };
        let Op::Isend { dst, tag, .. } = in_communicator(op, &[1, 3, 5], 0) else {
            unreachable!()
        };
        assert_eq!((dst, tag), (5, -2 - (1 << 36)));
    }
}
