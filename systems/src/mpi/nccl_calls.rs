//! NCCL collectives called from MPI rank programs (`nccl_allreduce BYTES` ...): the k-th NCCL
//! call of every rank is one collective over all ranks' GPUs, planned and carried by
//! [`crate::nccl`] exactly as for CUDA streams. A rank blocks in the call until the collective
//! ends; the time counts as communication.

use bevy_ecs::prelude::*;

use hetsim_components::SimTime;
use hetsim_components::cuda::NcclCall;
use hetsim_components::units::Bytes;
use hetsim_engine::record::Interval;
use hetsim_engine::{Inbox, SimEvent};

use super::{Mpi, Net, RankState};
use crate::nccl::{self, Plan};

/// Marks a flow carrying an edge of NCCL call `k`.
#[derive(Component, Debug, Clone, Copy)]
pub(super) struct NcclFlow(pub u32);

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

/// One NCCL call across the ranks.
#[derive(Debug)]
pub(super) struct NcclRt {
    call: NcclCall,
    pub arrived: u32,
    flows_left: u32,
    plan: Option<Plan>,
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
        if self.nccl_calls.len() <= k as usize {
            self.nccl_calls.push(NcclRt {
                call,
                arrived: 0,
                flows_left: 0,
                plan: None,
            });
        }
        let c = &mut self.nccl_calls[k as usize];
        c.arrived += 1;
        if c.arrived == self.ranks.len() as u32 {
            self.start_nccl(k, net);
        }
    }

    fn start_nccl(&mut self, k: u32, net: &mut Net) {
        let now = net.clock.now;
        let Some(comm) = self.nccl_comm.as_ref() else {
            net.errors
                .0
                .push("mpi: NCCL call without a communicator".into());
            return;
        };
        let plan = match comm.plan(&self.nccl_calls[k as usize].call) {
            Ok(p) => p,
            Err(e) => {
                net.errors.0.push(format!("workload.Mpi: {e}"));
                return;
            }
        };
        let start = now.saturating_add(SimTime::from_secs_saturating(plan.latency_s));
        let ranks = &self.ranks;
        let names = |r: u32| format!("node[{}].rank[{r}]", ranks[r as usize].node);
        let spawned = match nccl::spawn_flows(
            &plan,
            comm,
            &mut net.topo,
            &mut net.commands,
            &mut net.cal,
            (start, &format!("nccl{k}")),
            names,
            NcclFlow(k),
        ) {
            Ok(n) => n,
            Err(e) => {
                net.errors.0.push(e);
                return;
            }
        };
        if spawned == 0 {
            net.cal.schedule(
                start.saturating_add(SimTime::from_secs_saturating(plan.fill_s)),
                NcclDone(k),
            );
        }
        let c = &mut self.nccl_calls[k as usize];
        c.flows_left = spawned;
        c.plan = Some(plan);
    }

    /// One edge of call `k` has delivered its bytes.
    pub(super) fn nccl_flow_done(&mut self, k: u32, net: &mut Net) {
        let c = &mut self.nccl_calls[k as usize];
        c.flows_left -= 1;
        if c.flows_left == 0 {
            let fill = c.plan.as_ref().map_or(0.0, |p| p.fill_s);
            net.cal.schedule(
                net.clock
                    .now
                    .saturating_add(SimTime::from_secs_saturating(fill)),
                NcclDone(k),
            );
        }
    }

    /// Call `k` is over: every rank goes on.
    fn end_nccl(&mut self, k: u32, net: &mut Net) {
        let now = net.clock.now;
        let label = net.rec.name_id(self.nccl_calls[k as usize].call.op.name());
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
