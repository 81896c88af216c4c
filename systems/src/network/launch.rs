//! How models hand work to the network: [`Launch`] spawns a flow from a [`FlowRequest`], and
//! [`Reach`] is the one way a model turns "from, to, bytes, tell me with E" into a flow (it
//! routes, then launches) or into the arrival time of an unshared control message.

use bevy_ecs::prelude::*;
use bevy_ecs::system::SystemParam;
use std::sync::Arc;

use hetsim_components::{Flow, FlowName};
use hetsim_engine::{Calendar, Clock, RawEvent, SimErrors, SimEvent};
use hetsim_schema::SimTime;

use super::{FlowCap, FlowReady, FlowRoute, FlowStart, Network, ready_at};
use crate::platform::{Endpoint, Route, Topology};

/// The owner's event to send when the flow has delivered its last byte (with zero delay,
/// so the owner reacts at the same simulated time).
#[derive(Component, Debug, Clone, Copy)]
pub(super) struct DoneNotice(pub(super) RawEvent);

/// What a model asks of the network: move `bytes` along `route`.
#[derive(Debug, Clone)]
pub struct FlowRequest {
    /// Names for outputs (`flows.csv`, traces): the flow's id and its two ends' rows.
    pub id: FlowName,
    pub src: Arc<str>,
    pub dst: Arc<str>,
    pub route: Arc<Route>,
    pub bytes: f64,
    pub start: Start,
    /// The sender's own rate limit in bytes/s, if any ([`FlowCap`]).
    pub cap: Option<f64>,
    /// The route's latency is left out ([`FlowSpec::zero_latency`]).
    pub zero_latency: bool,
}

/// When a flow begins; from then it pays its route's latency, then shares bandwidth.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Start {
    /// At this time, by a [`FlowStart`] event.
    At(SimTime),
    /// At this time, with the latency phase reckoned now: the flow joins the sharing at the
    /// first grid point after `t + latency`, one calendar event fewer per flow (for models
    /// that launch many flows ahead of their start, such as the task runtime's copies).
    Ahead(SimTime),
}

/// The one way models start flows (a system parameter).
#[derive(SystemParam)]
pub struct Launch<'w, 's> {
    net: Res<'w, Network>,
    commands: Commands<'w, 's>,
}

impl<'w, 's> Launch<'w, 's> {
    /// The commands of the calling system (to spawn a model's own entities).
    pub fn commands(&mut self) -> &mut Commands<'w, 's> {
        &mut self.commands
    }

    /// Starts a flow nobody waits for; returns its entity.
    pub fn start(&mut self, cal: &mut Calendar, req: FlowRequest) -> Entity {
        self.spawn(cal, req, None)
    }

    /// Starts a flow and sends `done` back when its last byte has arrived.
    pub fn start_for<E: SimEvent>(
        &mut self,
        cal: &mut Calendar,
        req: FlowRequest,
        done: E,
    ) -> Entity {
        let notice = cal.pack(&done);
        self.spawn(cal, req, Some(notice))
    }

    fn spawn(&mut self, cal: &mut Calendar, req: FlowRequest, done: Option<RawEvent>) -> Entity {
        let latency = if req.zero_latency {
            SimTime::ZERO
        } else {
            req.route.latency
        };
        let start = match req.start {
            Start::At(t) | Start::Ahead(t) => t,
        };
        let flow = Flow {
            id: req.id,
            src: req.src,
            dst: req.dst,
            size: req.bytes,
            start,
        };
        let route = FlowRoute(req.route, latency);
        // One bundle per kind of flow: inserting the optional parts afterwards would move
        // every flow between archetypes.
        let entity = match (done, req.cap) {
            (Some(n), Some(c)) => self
                .commands
                .spawn((flow, route, DoneNotice(n), FlowCap(c))),
            (Some(n), None) => self.commands.spawn((flow, route, DoneNotice(n))),
            (None, Some(c)) => self.commands.spawn((flow, route, FlowCap(c))),
            (None, None) => self.commands.spawn((flow, route)),
        };
        let e = entity.id();
        match req.start {
            Start::At(t) => cal.schedule(t, FlowStart(e)),
            Start::Ahead(t) => cal.schedule(ready_at(t, latency, self.net.quantum), FlowReady(e)),
        }
        e
    }
}

/// A flow between two endpoints as a model asks for it: its names for outputs, its bytes,
/// when it starts, its own rate limit, and whether the route's latency is left out (a model
/// whose own latency term already holds the hops', such as NCCL's).
#[derive(Debug, Clone)]
pub struct FlowSpec {
    pub id: FlowName,
    pub src_row: Arc<str>,
    pub dst_row: Arc<str>,
    pub bytes: f64,
    pub start: Start,
    pub cap: Option<f64>,
    pub zero_latency: bool,
}

/// What a model's step needs to hand work over: the calendar, the clock, the topology, the
/// run's errors and [`Launch`] (a system parameter; it owns nothing).
#[derive(SystemParam)]
pub struct Reach<'w, 's> {
    pub cal: ResMut<'w, Calendar>,
    pub clock: Res<'w, Clock>,
    pub topo: ResMut<'w, Topology>,
    pub errors: ResMut<'w, SimErrors>,
    pub launch: Launch<'w, 's>,
}

impl Reach<'_, '_> {
    /// The current simulated time.
    pub fn now(&self) -> SimTime {
        self.clock.now
    }

    /// Routes `from` -> `to` and starts the flow `spec`; `done` comes back when its last
    /// byte has arrived. The error is the route's, for the caller to word.
    pub fn flow<E: SimEvent>(
        &mut self,
        from: Endpoint,
        to: Endpoint,
        spec: FlowSpec,
        done: E,
    ) -> Result<Entity, String> {
        self.flow_via(from, None, to, spec, done)
    }

    /// [`Reach::flow`] on the route through `via` when there is one (a relay on the way).
    pub fn flow_via<E: SimEvent>(
        &mut self,
        from: Endpoint,
        via: Option<Endpoint>,
        to: Endpoint,
        spec: FlowSpec,
        done: E,
    ) -> Result<Entity, String> {
        let route = match via {
            Some(v) => self.topo.route_via(from, v, to)?,
            None => self.topo.route(from, to)?,
        };
        let req = FlowRequest {
            id: spec.id,
            src: spec.src_row,
            dst: spec.dst_row,
            route,
            bytes: spec.bytes,
            start: spec.start,
            cap: spec.cap,
            zero_latency: spec.zero_latency,
        };
        Ok(self.launch.start_for(&mut self.cal, req, done))
    }

    /// When a control message of `bytes` sent now from `from` arrives at `to`: the route's
    /// latency plus the bytes over its bottleneck, alone (control messages share nothing).
    pub fn control_due(
        &mut self,
        from: Endpoint,
        to: Endpoint,
        bytes: f64,
    ) -> Result<SimTime, String> {
        let route = self.topo.route(from, to)?;
        Ok(self.clock.now.saturating_add(control_time(
            route.latency,
            bytes,
            self.topo.bottleneck(&route),
        )))
    }

    /// Records an error of the run (the caller's wording).
    pub fn fail(&mut self, e: String) {
        self.errors.0.push(e);
    }
}

/// A control message's time on a route: its latency, plus `bytes` over the bottleneck when
/// that is finite.
pub fn control_time(latency: SimTime, bytes: f64, bottleneck: f64) -> SimTime {
    let transfer = if bottleneck.is_finite() {
        SimTime::from_secs_saturating(bytes / bottleneck)
    } else {
        SimTime::ZERO
    };
    latency.saturating_add(transfer)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_control_message_pays_latency_plus_bytes_over_the_bottleneck() {
        let us = SimTime::from_secs_saturating(1e-6);
        // 1 us + 1e4 B / 1e10 B/s = 2 us.
        assert_eq!(
            control_time(us, 1e4, 1e10),
            SimTime::from_secs_saturating(2e-6)
        );
        // An unbounded route: latency only.
        assert_eq!(control_time(us, 1e4, f64::INFINITY), us);
    }
}
