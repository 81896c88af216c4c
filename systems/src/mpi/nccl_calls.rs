//! NCCL collectives called from MPI rank programs (`nccl_allreduce BYTES` ...): the k-th NCCL
//! call of every rank is one collective over all ranks' GPUs, run by the NCCL plugin
//! ([`crate::nccl::Collectives`]) exactly as for CUDA streams. A rank blocks in the call until
//! the collective ends; the time counts as communication.

use bevy_ecs::prelude::*;

use hetsim_components::cuda::NcclCall;
use hetsim_components::units::Bytes;
use hetsim_engine::record::Interval;
use hetsim_engine::{Inbox, SimEvent};

use super::{Mpi, Net, RankState};
use crate::nccl::{self, Reach};

/// NCCL call `k` is over (its flows and its pipeline fill).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub(super) struct NcclDone(pub u32);

impl SimEvent for NcclDone {
    const NAME: &'static str = "mpi.nccl_done";
    fn pack(&self) -> (Entity, u64) {
        (Entity::PLACEHOLDER, self.0 as u64)
    }
    fn unpack(_: Entity, arg: u64) -> Self {
        NcclDone(arg as u32)
    }
}

impl Mpi {
    /// Rank `r` calls NCCL: it blocks until every rank has called and the collective is over.
    pub(super) fn nccl_call(&mut self, r: u32, call: NcclCall, net: &mut Net) {
        let now = net.clock.now;
        let rank = &mut self.ranks[r as usize];
        let k = rank.nccl_seq;
        rank.nccl_seq += 1;
        rank.in_nccl = Some(k);
        rank.state = RankState::Blocked;
        rank.since = now;
        let Some(c) = self.nccl_comm else {
            net.errors
                .0
                .push("mpi: NCCL call without a communicator".into());
            return;
        };
        let mut reach = Reach {
            now,
            cal: &mut net.cal,
            topo: &mut net.topo,
            launch: &mut net.launch,
        };
        if let Err(e) = net.colls.arrive(c, k, &[call], &mut reach) {
            net.errors.0.push(format!("workload.Mpi: {e}"));
        }
    }

    /// Call `k` is over: every rank goes on.
    fn end_nccl(&mut self, k: u32, net: &mut Net) {
        let now = net.clock.now;
        let name = self
            .nccl_comm
            .and_then(|c| net.colls.collective(c, k))
            .map_or_else(|| "nccl".to_string(), |coll| coll.name());
        let label = net.rec.name_id(&name);
        let state = net.rec.name_id("nccl");
        for (r, rank) in self.ranks.iter_mut().enumerate() {
            if rank.in_nccl != Some(k) {
                continue;
            }
            rank.in_nccl = None;
            rank.comm_s += now.saturating_sub(rank.since).as_secs_f64();
            if let Some(row) = rank.row {
                net.rec.interval(Interval {
                    resource: row,
                    state,
                    label: Some(label),
                    start: rank.since,
                    end: now,
                });
            }
            rank.state = RankState::Ready;
            self.ready.push(r as u32);
        }
    }
}

/// The communicator of a job whose programs call NCCL.
pub(super) fn communicator(
    gpus: Vec<crate::platform::Endpoint>,
    spec: &hetsim_components::cuda::NcclSpec,
    topo: &mut crate::platform::Topology,
    gpu_model: &str,
) -> Result<nccl::Comm, String> {
    nccl::Comm::new(gpus, spec, topo, gpu_model).map_err(|e| format!("workload.Mpi.nccl: {e}"))
}

pub(super) fn finish_nccl_calls(
    mut inbox: ResMut<Inbox<NcclDone>>,
    mut mpi: ResMut<Mpi>,
    mut net: Net,
) {
    for NcclDone(k) in inbox.drain() {
        mpi.end_nccl(k, &mut net);
    }
}

/// The NCCL call of an `Op::Nccl`.
pub(super) fn call_of(op: hetsim_components::cuda::Coll, bytes: f64, root: u32) -> NcclCall {
    NcclCall {
        op,
        bytes: Bytes(bytes),
        stream: 0,
        root,
        peer: 1,
    }
}
