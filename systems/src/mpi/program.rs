//! Rank programs: the operations a rank executes in order ([`Op`], [`Step`], [`Program`]),
//! whatever they come from: a trace ([`super::ti`]), an OTF2 archive ([`super::otf2`]) or a
//! generator ([`super::generators`]).

/// Where a message buffer lives.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash)]
pub enum Loc {
    Host,
    #[default]
    Device,
}

impl From<hetsim_schema::mpi::Buffers> for Loc {
    /// Where a scenario's buffers setting puts a message's buffer.
    fn from(b: hetsim_schema::mpi::Buffers) -> Loc {
        match b {
            hetsim_schema::mpi::Buffers::Device => Loc::Device,
            hetsim_schema::mpi::Buffers::Host => Loc::Host,
        }
    }
}

pub const ANY: i64 = -1;

/// A collective operation, expanded into point-to-point steps when it runs.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Coll {
    Barrier,
    Bcast { bytes: f64, root: u32 },
    Reduce { bytes: f64, flops: f64, root: u32 },
    Allreduce { bytes: f64, flops: f64 },
    Allgather { bytes: f64 },
    Alltoall { bytes: f64 },
    ReduceScatter { bytes: f64, flops: f64 },
}

impl Coll {
    /// The size the trace line gives (0 for a barrier).
    pub fn bytes(&self) -> f64 {
        match *self {
            Coll::Barrier => 0.0,
            Coll::Bcast { bytes, .. }
            | Coll::Reduce { bytes, .. }
            | Coll::Allreduce { bytes, .. }
            | Coll::Allgather { bytes }
            | Coll::Alltoall { bytes }
            | Coll::ReduceScatter { bytes, .. } => bytes,
        }
    }

    pub fn name(&self) -> &'static str {
        match self {
            Coll::Barrier => "barrier",
            Coll::Bcast { .. } => "bcast",
            Coll::Reduce { .. } => "reduce",
            Coll::Allreduce { .. } => "allreduce",
            Coll::Allgather { .. } => "allgather",
            Coll::Alltoall { .. } => "alltoall",
            Coll::ReduceScatter { .. } => "reduce_scatter",
        }
    }
}

/// One operation of a rank program.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Op {
    /// Work at the GPU's speed.
    Compute {
        flops: f64,
    },
    /// Work of a known duration (a generator's kernel time).
    ComputeFor {
        secs: f64,
    },
    Sleep {
        secs: f64,
    },
    Isend {
        dst: u32,
        tag: i64,
        bytes: f64,
        loc: Loc,
    },
    Irecv {
        src: i64,
        tag: i64,
        bytes: f64,
        loc: Loc,
    },
    Send {
        dst: u32,
        tag: i64,
        bytes: f64,
        loc: Loc,
    },
    Recv {
        src: i64,
        tag: i64,
        bytes: f64,
        loc: Loc,
    },
    Sendrecv {
        dst: u32,
        sbytes: f64,
        src: i64,
        rbytes: f64,
        loc: Loc,
    },
    Wait,
    Waitall,
    /// Waits for the oldest outstanding request of this kind: an isend to `peer` (`send`) or
    /// an irecv from `peer`, with `tag` (SMPI's `wait SRC DST TAG`, OTF2's completions).
    WaitFor {
        send: bool,
        peer: i64,
        tag: i64,
    },
    Coll(Coll),
    /// An NCCL collective over every rank's GPU (the k-th NCCL call of each rank is one call).
    Nccl {
        op: hetsim_schema::cuda::Coll,
        bytes: f64,
        root: u32,
    },
}

impl Op {
    pub fn name(&self) -> &'static str {
        match self {
            Op::Compute { .. } | Op::ComputeFor { .. } => "compute",
            Op::Sleep { .. } => "sleep",
            Op::Isend { .. } => "isend",
            Op::Irecv { .. } => "irecv",
            Op::Send { .. } => "send",
            Op::Recv { .. } => "recv",
            Op::Sendrecv { .. } => "sendrecv",
            Op::Wait | Op::WaitFor { .. } => "wait",
            Op::Waitall => "waitall",
            Op::Coll(c) => c.name(),
            Op::Nccl { .. } => "nccl",
        }
    }
}

/// A program step: the operation and its line in the source (0 for generated programs).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Step {
    pub op: Op,
    pub line: u32,
}

/// A rank's program: its steps, run `repeat` times (a generator's iterations).
#[derive(Debug, Clone, PartialEq)]
pub struct Program {
    /// Where the steps come from (a trace file, a generator), for error messages.
    pub source: std::sync::Arc<str>,
    pub steps: Vec<Step>,
    pub repeat: u32,
}

impl Program {
    /// Where step `i` comes from: `file:line`, or the generator's name.
    pub fn at(&self, i: usize) -> String {
        match self.steps.get(i) {
            Some(s) if s.line > 0 => format!("{}:{} ({})", self.source, s.line, s.op.name()),
            Some(s) => format!("{} ({})", self.source, s.op.name()),
            None => self.source.to_string(),
        }
    }
}

/// Checks that every `WaitFor` of a program names a request that is outstanding when the
/// rank reaches it (a rank's requests do not depend on timing, so this is known before the run).
pub fn check_waits(p: &Program) -> Result<(), String> {
    let mut outstanding: Vec<(bool, i64, i64)> = Vec::new();
    for (i, s) in p.steps.iter().enumerate() {
        match s.op {
            Op::Isend { dst, tag, .. } => outstanding.push((true, dst as i64, tag)),
            Op::Irecv { src, tag, .. } => outstanding.push((false, src, tag)),
            Op::Wait => {
                outstanding.pop();
            }
            Op::Waitall => outstanding.clear(),
            Op::WaitFor { send, peer, tag } => {
                let Some(k) = outstanding.iter().position(|&o| o == (send, peer, tag)) else {
                    let what = if send { "an isend to" } else { "an irecv from" };
                    return Err(format!(
                        "{}: waits for {what} {peer} with tag {tag}, but no such request is outstanding",
                        p.at(i)
                    ));
                };
                outstanding.remove(k);
            }
            _ => {}
        }
    }
    Ok(())
}
