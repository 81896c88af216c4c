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

mod reader;
mod world;

use std::collections::BTreeMap;
use std::sync::Arc;

use hetsim_schema::mpi::{Buffers, CollectiveSpec, Otf2Program};
use otf2::Archive;

use super::collectives::Policy;
use super::program::{Program, Step};
pub use reader::FLOPS_PER_SECOND;
use reader::{Context, Reader};
use world::World;

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
    let policy = Policy::of(collectives)?;
    let archive = Archive::open(&spec.path).map_err(|e| e.to_string())?;
    let world = World::of(&archive.defs)?;
    let ctx = Context {
        defs: &archive.defs,
        world: &world,
        buffers: &spec.buffers,
        default,
        gpu_attribute: archive
            .defs
            .attributes
            .iter()
            .find(|(_, a)| archive.defs.string(a.name) == spec.buffers.attribute)
            .map(|(&id, _)| id),
        ticks: archive.defs.clock.resolution.max(1) as f64,
        scale: spec.compute_scale,
        policy: &policy,
    };
    let mut out = Otf2Programs {
        programs: Vec::with_capacity(world.locations.len()),
        skipped: BTreeMap::new(),
        host_messages: 0,
        events: 0,
    };
    for (rank, &loc) in world.locations.iter().enumerate() {
        let program = read_rank(&archive, &ctx, rank as u32, loc, &mut out)?;
        out.programs.push(Program {
            source: Arc::from(format!("{} (rank {rank})", spec.path)),
            steps: program,
            repeat: 1,
        });
    }
    Ok(out)
}

/// The programs of the archive at `path` as it is (GPU buffers, unscaled compute, the
/// default collectives), for tools that look at a trace without a scenario.
pub fn read_as_is(path: &str) -> Result<Otf2Programs, String> {
    read(
        &Otf2Program::at(path),
        Buffers::Device,
        &CollectiveSpec::default(),
    )
}

/// One rank's steps; what it skipped and its host messages are added to `out`.
fn read_rank(
    archive: &Archive,
    ctx: &Context,
    rank: u32,
    loc: u64,
    out: &mut Otf2Programs,
) -> Result<Vec<Step>, String> {
    let mut reader = Reader::new(ctx, rank);
    let file = archive.event_file(loc);
    let mut events = archive.events(loc).map_err(|e| e.to_string())?;
    let mut n = 0u32;
    while let Some(e) = events.next_event().map_err(|e| e.to_string())? {
        n += 1;
        reader.event(&e, n).map_err(|m| {
            format!(
                "{}, location {loc}, event {n} (byte {}): {m}",
                file.display(),
                e.offset
            )
        })?;
    }
    reader
        .finish()
        .map_err(|m| format!("{} (location {loc}): {m}", file.display()))?;
    for (t, c) in events.skipped() {
        *out.skipped
            .entry(format!("OTF2 event type {t}"))
            .or_default() += c;
    }
    out.events += events.count();
    out.host_messages += reader.host_messages;
    Ok(reader.steps.into_iter().flatten().collect())
}
