//! What the MPI leaves ask of the world, in the order they ask it. The coordinator
//! (`mod.rs`) turns each into a calendar event, a flow or a timeline record, in
//! that order, so runs stay deterministic.

use std::sync::Arc;

use hetsim_engine::record::ResId;
use hetsim_schema::SimTime;
use hetsim_schema::cuda::NcclCall;

use super::message::Stage;
use crate::platform::Endpoint;

#[derive(Debug, Clone)]
pub enum Effect {
    /// A timed step of message `msg` is due at `at` (a copy, the pinning).
    Timer { at: SimTime, msg: u32, stage: Stage },
    /// A control message (RTS, CTS) of `bytes` between two hosts: due after the route's
    /// latency plus its size over the route's bottleneck. It takes no part in bandwidth
    /// sharing: a few bytes would not change anyone's share, but as flows each would
    /// re-share every link of its route twice for nothing.
    Control {
        msg: u32,
        serial: u64,
        stage: Stage,
        from: Endpoint,
        to: Endpoint,
        bytes: f64,
    },
    /// A flow for a stage of message `msg` (its slot; `serial` names it), drawn between two
    /// rows.
    Flow {
        msg: u32,
        serial: u64,
        stage: Stage,
        from: Endpoint,
        to: Endpoint,
        bytes: f64,
        src_row: Arc<str>,
        dst_row: Arc<str>,
    },
    /// Rank `rank` is busy until `at`.
    Wake { at: SimTime, rank: u32 },
    /// A period on a rank's timeline row.
    Interval {
        row: ResId,
        state: &'static str,
        label: Option<String>,
        start: SimTime,
        end: SimTime,
    },
    /// Rank `rank` reaches its `k`-th NCCL call.
    Nccl { k: u32, call: NcclCall },
}
