//! Rank programs from an OTF2 archive (Score-P), with TraceR's semantics.
//!
//! - **Ranks.** One rank per location of the MPI world (the paradigm's COMM_LOCATIONS group,
//!   in rank order).
//! - **Compute** is the time between MPI activity as TraceR derives it: when a region is
//!   entered (any region but the rank's first), the time since the rank's previous record
//!   (enter, leave, message, request, collective or measurement record) becomes compute, times
//!   `compute_scale`. Time inside MPI calls is not replayed: it is what the model simulates.
//!   Time while measurement is off is not compute (the on record resets the clock).
//! - **Point-to-point.** MpiSend/MpiRecv are blocking sends and receives, MpiIsend an isend
//!   waited for at its MpiIsendComplete, MpiIrecvRequest an irecv whose peer, tag and size
//!   come from its MpiIrecv completion (where it is waited for), a cancelled request is
//!   dropped, MpiRequestTest (a test that found the request unfinished) is nothing. Inside
//!   MPI_Sendrecv both halves are posted together and waited for at its end. Peers are the
//!   communicator's ranks mapped to world ranks; each communicator has its own tag space.
//! - **Collectives** come from MpiCollectiveEnd, with TraceR's sizes: bcast the bytes
//!   received, reduce the bytes sent, allreduce the bytes sent over the communicator size,
//!   alltoall(v) the bytes sent per destination, allgather(v) the bytes received per rank,
//!   reduce_scatter(_block) the bytes sent (the whole vector), barrier. Collectives on
//!   MPI_COMM_SELF are nothing; on a smaller communicator they become their point-to-point
//!   steps among its ranks (the algorithm the scenario's collectives choose for its size),
//!   in its own tag space. Gather, scatter and scans are errors: hetsim does not replay them.
//! - **Buffers.** A message's buffer is on the GPU or in host memory by the most specific of:
//!   the record's attribute ([`GpuBuffers::attribute`], an integer, nonzero for GPU), the MPI
//!   call's region name, the communicator's name, the workload's `buffers` (GPU by default,
//!   the study's setting).
//!
//! Compute is written as flops at [`FLOPS_PER_SECOND`], the speed the ranks of an OTF2
//! program run at, so that a conversion to SimGrid TI replays identically (SMPI at
//! `smpi/host-speed:1Gf`, hetsim with `compute_speed: "1Gf"`).

use std::collections::{BTreeMap, HashMap};
use std::sync::Arc;

use hetsim_schema::mpi::{Buffers, CollectiveSpec, GpuBuffers, Otf2Program};
use otf2::{Archive, CollectiveOp, Definitions, EventKind};

use super::collectives::{self, Policy};
use super::program::{Coll, Loc, Op, Program, Step};

/// The flop rate compute gaps are expressed in (1 Gflop/s, SimGrid's usual host speed).
pub const FLOPS_PER_SECOND: f64 = 1e9;

/// Programs read from an archive, with what was skipped.
#[derive(Debug, Clone)]
pub struct Otf2Programs {
    pub programs: Vec<Program>,
    /// Records that are not replayed, by OTF2 event type name, summed over ranks.
    pub skipped: BTreeMap<String, u64>,
    /// Messages whose buffers are in host memory.
    pub host_messages: u64,
    pub events: u64,
}

/// Reads every rank's program of the archive `spec.path`; buffers are at `default` where no
/// rule of `spec.buffers` says otherwise; collectives on communicators smaller than the world
/// are expanded with the algorithms `collectives` chooses.
pub fn read(
    spec: &Otf2Program,
    default: Buffers,
    collectives: &CollectiveSpec,
) -> Result<Otf2Programs, String> {
    let policy = super::setup::policy_of(collectives)?;
    let archive = Archive::open(&spec.path).map_err(|e| e.to_string())?;
    let world = World::of(&archive.defs)?;
    let gpu_attribute = archive
        .defs
        .attributes
        .iter()
        .find(|(_, a)| archive.defs.string(a.name) == spec.buffers.attribute)
        .map(|(&id, _)| id);
    let mut out = Otf2Programs {
        programs: Vec::with_capacity(world.locations.len()),
        skipped: BTreeMap::new(),
        host_messages: 0,
        events: 0,
    };
    for (rank, &loc) in world.locations.iter().enumerate() {
        let source: Arc<str> = Arc::from(format!("{} (rank {rank})", spec.path));
        let mut reader = Reader {
            defs: &archive.defs,
            world: &world,
            buffers: &spec.buffers,
            default,
            gpu_attribute,
            ticks: archive.defs.clock.resolution.max(1) as f64,
            scale: spec.compute_scale,
            me: rank as u32,
            policy: &policy,
            comm_calls: HashMap::new(),
            steps: Vec::new(),
            last: None,
            entered: false,
            regions: Vec::new(),
            irecvs: HashMap::new(),
            isends: HashMap::new(),
            sendrecv: Vec::new(),
            host_messages: 0,
        };
        let mut events = archive.events(loc).map_err(|e| e.to_string())?;
        let mut n = 0u32;
        while let Some(e) = events.next_event().map_err(|e| e.to_string())? {
            n += 1;
            reader.event(&e, n).map_err(|m| {
                format!(
                    "{}, location {loc}, event {n} (byte {}): {m}",
                    archive.event_file(loc).display(),
                    e.offset
                )
            })?;
        }
        reader.finish().map_err(|m| {
            format!(
                "{} (location {loc}): {m}",
                archive.event_file(loc).display()
            )
        })?;
        for (t, c) in events.skipped() {
            *out.skipped
                .entry(format!("OTF2 event type {t}"))
                .or_default() += c;
        }
        out.events += events.count();
        out.host_messages += reader.host_messages;
        out.programs.push(Program {
            source,
            steps: reader.steps.into_iter().flatten().collect(),
            repeat: 1,
        });
    }
    Ok(out)
}

/// The MPI world: its locations in rank order, and communicators as world ranks.
struct World {
    locations: Vec<u64>,
    world_comm: Option<u32>,
    /// Communicator id -> its ranks as world ranks (None: not an MPI communicator).
    comms: HashMap<u32, Result<Vec<u32>, String>>,
}

impl World {
    fn of(defs: &Definitions) -> Result<World, String> {
        let world_group = defs
            .groups
            .values()
            .find(|g| g.group_type == otf2::GroupType::CommLocations)
            .ok_or(
                "the archive defines no MPI world (no COMM_LOCATIONS group): not an MPI trace",
            )?;
        let locations = world_group.members.clone();
        if locations.is_empty() {
            return Err("the MPI world has no ranks".into());
        }
        let rank_of: HashMap<u64, u32> = locations
            .iter()
            .enumerate()
            .map(|(r, &l)| (l, r as u32))
            .collect();
        let mut comms = HashMap::new();
        let mut world_comm = None;
        for &id in defs.comms.keys() {
            let ranks = defs.comm_locations(id).and_then(|locs| {
                locs.iter()
                    .map(|l| {
                        rank_of.get(l).copied().ok_or_else(|| {
                            format!("communicator {id} has location {l}, which is not an MPI rank")
                        })
                    })
                    .collect::<Result<Vec<u32>, String>>()
            });
            if let Ok(r) = &ranks
                && r.len() == locations.len()
                && r.iter().enumerate().all(|(i, &x)| i as u32 == x)
                && world_comm.is_none()
            {
                world_comm = Some(id);
            }
            comms.insert(id, ranks);
        }
        Ok(World {
            locations,
            world_comm,
            comms,
        })
    }

    fn ranks(&self, comm: u32) -> Result<&Vec<u32>, String> {
        match self.comms.get(&comm) {
            Some(Ok(r)) => Ok(r),
            Some(Err(e)) => Err(e.clone()),
            None => Err(format!("communicator {comm} is not defined")),
        }
    }

    /// The world rank of rank `r` of communicator `comm`.
    fn world_rank(&self, comm: u32, r: u32) -> Result<u32, String> {
        let ranks = self.ranks(comm)?;
        ranks.get(r as usize).copied().ok_or_else(|| {
            format!(
                "rank {r} is not in communicator {comm} ({} ranks)",
                ranks.len()
            )
        })
    }

    /// A tag in the communicator's own tag space.
    fn tag(&self, comm: u32, tag: u32) -> i64 {
        if Some(comm) == self.world_comm {
            tag as i64
        } else {
            ((comm as i64 + 1) << 32) | tag as i64
        }
    }
}

/// One rank's reading state.
struct Reader<'a> {
    defs: &'a Definitions,
    world: &'a World,
    buffers: &'a GpuBuffers,
    default: Buffers,
    gpu_attribute: Option<u32>,
    ticks: f64,
    scale: f64,
    /// This rank's world rank.
    me: u32,
    policy: &'a Policy,
    /// Collectives so far per communicator smaller than the world.
    comm_calls: HashMap<u32, u64>,
    /// Steps, `None` where a cancelled request was dropped.
    steps: Vec<Option<Step>>,
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
    host_messages: u64,
}

impl Reader<'_> {
    fn push(&mut self, op: Op, line: u32) -> usize {
        self.steps.push(Some(Step { op, line }));
        self.steps.len() - 1
    }

    fn in_sendrecv(&self) -> bool {
        self.regions
            .last()
            .is_some_and(|&r| self.defs.region_name(r).starts_with("MPI_Sendrecv"))
    }

    /// Where a message's buffer is, by the most specific rule.
    fn loc(&mut self, e: &otf2::Event, comm: u32) -> Loc {
        let by_attribute = self.gpu_attribute.and_then(|id| {
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
        let region = self.regions.last().map(|&r| self.defs.region_name(r));
        let by_region = region.and_then(|n| self.buffers.regions.get(n).copied());
        let comm_name = self
            .defs
            .comms
            .get(&comm)
            .map(|c| self.defs.string(c.name))
            .unwrap_or("");
        let by_comm = self.buffers.comms.get(comm_name).copied();
        let b = by_attribute
            .or(by_region)
            .or(by_comm)
            .unwrap_or(self.default);
        match b {
            Buffers::Device => Loc::Device,
            Buffers::Host => {
                self.host_messages += 1;
                Loc::Host
            }
        }
    }

    fn event(&mut self, e: &otf2::Event, n: u32) -> Result<(), String> {
        let w = self.world;
        match e.kind {
            EventKind::Enter { region } => {
                if self.entered {
                    let gap = e.time.saturating_sub(self.last.unwrap_or(e.time));
                    if gap > 0 {
                        let secs = gap as f64 / self.ticks * self.scale;
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
            EventKind::Leave { .. } => {
                if self.in_sendrecv() {
                    for op in std::mem::take(&mut self.sendrecv) {
                        self.push(op, n);
                    }
                }
                self.regions.pop();
            }
            EventKind::MeasurementOnOff { .. } | EventKind::MpiCollectiveBegin => {}
            EventKind::MpiSend {
                receiver,
                comm,
                tag,
                length,
            } => {
                let dst = w.world_rank(comm, receiver)?;
                let (tag, bytes, loc) = (w.tag(comm, tag), length as f64, self.loc(e, comm));
                if self.in_sendrecv() {
                    self.push(
                        Op::Isend {
                            dst,
                            tag,
                            bytes,
                            loc,
                        },
                        n,
                    );
                    self.sendrecv.push(Op::WaitFor {
                        send: true,
                        peer: dst as i64,
                        tag,
                    });
                } else {
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
            EventKind::MpiIsend {
                receiver,
                comm,
                tag,
                length,
                request,
            } => {
                let dst = w.world_rank(comm, receiver)?;
                let (tag, bytes, loc) = (w.tag(comm, tag), length as f64, self.loc(e, comm));
                let step = self.push(
                    Op::Isend {
                        dst,
                        tag,
                        bytes,
                        loc,
                    },
                    n,
                );
                self.isends.insert(request, step);
            }
            EventKind::MpiIsendComplete { request } => {
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
            }
            EventKind::MpiIrecvRequest { request } => {
                // The peer, tag and size come with the completion.
                let step = self.push(Op::Waitall, n);
                self.steps[step] = None;
                if self.irecvs.insert(request, step).is_some() {
                    return Err(format!(
                        "MpiIrecvRequest of request {request}, which is already posted"
                    ));
                }
            }
            EventKind::MpiRecv {
                sender,
                comm,
                tag,
                length,
            } => {
                let src = w.world_rank(comm, sender)? as i64;
                let (tag, bytes, loc) = (w.tag(comm, tag), length as f64, self.loc(e, comm));
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
            }
            EventKind::MpiIrecv {
                sender,
                comm,
                tag,
                length,
                request,
            } => {
                let src = w.world_rank(comm, sender)? as i64;
                let (tag, bytes, loc) = (w.tag(comm, tag), length as f64, self.loc(e, comm));
                let step = self.irecvs.remove(&request).ok_or_else(|| {
                    format!("MpiIrecv completes request {request}, which no MpiIrecvRequest posted")
                })?;
                let line = n;
                self.steps[step] = Some(Step {
                    op: Op::Irecv {
                        src,
                        tag,
                        bytes,
                        loc,
                    },
                    line,
                });
                self.push(
                    Op::WaitFor {
                        send: false,
                        peer: src,
                        tag,
                    },
                    n,
                );
            }
            EventKind::MpiRequestTest { .. } => return Ok(()),
            EventKind::MpiRequestCancelled { request } => {
                if let Some(step) = self
                    .irecvs
                    .remove(&request)
                    .or_else(|| self.isends.remove(&request))
                {
                    self.steps[step] = None;
                }
                return Ok(());
            }
            EventKind::MpiCollectiveEnd {
                op,
                comm,
                root,
                sent,
                received,
            } => self.collective(op, comm, root, sent, received, n)?,
            EventKind::Other(_) => return Ok(()),
        }
        self.last = Some(e.time);
        Ok(())
    }

    fn collective(
        &mut self,
        op: CollectiveOp,
        comm: u32,
        root: u32,
        sent: u64,
        received: u64,
        n: u32,
    ) -> Result<(), String> {
        let w = self.world;
        let ranks = w.ranks(comm)?;
        let name = |c: u32| {
            self.defs
                .comms
                .get(&c)
                .map(|c| self.defs.string(c.name).to_string())
                .unwrap_or_default()
        };
        if ranks.len() <= 1 {
            return Ok(());
        }
        let world = Some(comm) == w.world_comm;
        let me = if world {
            self.me
        } else {
            ranks.iter().position(|&r| r == self.me).ok_or_else(|| {
                format!(
                    "{} on communicator {comm} (`{}`), which this rank is not in",
                    op.name(),
                    name(comm)
                )
            })? as u32
        };
        let p = ranks.len() as f64;
        // Roots are communicator ranks: the world's for a world collective.
        let root_rank = || {
            if root as usize >= ranks.len() {
                Err(format!("root {root} is not a rank of communicator {comm}"))
            } else if world {
                w.world_rank(comm, root)
            } else {
                Ok(root)
            }
        };
        let coll = match op {
            CollectiveOp::Barrier => Coll::Barrier,
            CollectiveOp::Bcast => Coll::Bcast {
                bytes: received as f64,
                root: root_rank()?,
            },
            CollectiveOp::Reduce => Coll::Reduce {
                bytes: sent as f64,
                flops: 0.0,
                root: root_rank()?,
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
        };
        if world {
            self.push(Op::Coll(coll), n);
            return Ok(());
        }
        // A smaller communicator: the collective's point-to-point steps among its ranks, in
        // the communicator's own tag space, expanded as the policy chooses.
        let seq = self.comm_calls.entry(comm).or_default();
        let ops = collectives::expand(coll, me, ranks.len() as u32, *seq, self.policy);
        *seq += 1;
        let shift = (comm as i64 + 1) << 36;
        let ranks = ranks.clone();
        for op in ops {
            let op = match op {
                Op::Isend {
                    dst,
                    tag,
                    bytes,
                    loc,
                } => Op::Isend {
                    dst: ranks[dst as usize],
                    tag: tag - shift,
                    bytes,
                    loc,
                },
                Op::Send {
                    dst,
                    tag,
                    bytes,
                    loc,
                } => Op::Send {
                    dst: ranks[dst as usize],
                    tag: tag - shift,
                    bytes,
                    loc,
                },
                Op::Irecv {
                    src,
                    tag,
                    bytes,
                    loc,
                } => Op::Irecv {
                    src: ranks[src as usize] as i64,
                    tag: tag - shift,
                    bytes,
                    loc,
                },
                Op::Recv {
                    src,
                    tag,
                    bytes,
                    loc,
                } => Op::Recv {
                    src: ranks[src as usize] as i64,
                    tag: tag - shift,
                    bytes,
                    loc,
                },
                other => other,
            };
            self.push(op, n);
        }
        Ok(())
    }

    fn finish(&mut self) -> Result<(), String> {
        if let Some((req, _)) = self.irecvs.iter().min_by_key(|(r, _)| **r) {
            return Err(format!(
                "request {req} was posted (MpiIrecvRequest) but never completed or cancelled: its sender is unknown"
            ));
        }
        Ok(())
    }
}
