//! Workload `Flows`: explicit transfers between named endpoints (routed on the platform) or
//! over listed links, with sizes and start times.

use bevy_app::{App, Plugin};
use bevy_ecs::prelude::*;
use hetsim_schema::SimTime;
use std::collections::HashSet;
use std::sync::Arc;

use hetsim_engine::{Calendar, SimAppExt, SimErrors, SimStartup, StartupSet};
use hetsim_schema::scenario::FlowSpec;

use crate::network::{FlowRequest, Launch, Start};
use crate::platform::{Route, Topology};

/// The flows to run (inserted by whoever assembles the app), and each one's field path for
/// errors (empty: `workload.Flows[i]`).
#[derive(Resource, Debug, Clone, Default)]
pub struct FlowsWorkload(pub Vec<FlowSpec>, pub Vec<String>);

pub struct FlowsPlugin;

impl Plugin for FlowsPlugin {
    fn build(&self, app: &mut App) {
        app.describe_model("workload.flows", "explicit transfers between named endpoints or over listed links, with sizes and start times")
            .init_resource::<FlowsWorkload>()
            .add_systems(SimStartup, spawn_flows.in_set(StartupSet::Workload));
    }
}

/// Routes every flow and launches it at its start time; reports all bad flows.
fn spawn_flows(
    mut workload: ResMut<FlowsWorkload>,
    topo: Option<ResMut<Topology>>,
    mut errs: ResMut<SimErrors>,
    mut cal: ResMut<Calendar>,
    mut launch: Launch,
) {
    let specs = std::mem::take(&mut workload.0);
    let paths = std::mem::take(&mut workload.1);
    let Some(mut topo) = topo else {
        return;
    };
    let mut errors = Vec::new();
    let mut ids = HashSet::new();
    let mut starts = Vec::with_capacity(specs.len());
    for (i, spec) in specs.iter().enumerate() {
        let path = paths
            .get(i)
            .cloned()
            .unwrap_or_else(|| format!("workload.Flows[{i}]"));
        let id = spec.id.clone().unwrap_or_else(|| format!("f{i}"));
        if !ids.insert(id.clone()) {
            errors.push(format!("{path}.id: `{id}` is used by an earlier flow"));
            continue;
        }
        if !(spec.size.0.is_finite() && spec.size.0 >= 0.0) {
            errors.push(format!(
                "{path}.size: expected a non-negative size, got {}",
                spec.size.0
            ));
            continue;
        }
        match route_of(&mut topo, spec, &path).and_then(|r| {
            check_in_range(&topo, spec, &r.0, &path)?;
            Ok(r)
        }) {
            Ok((route, src, dst)) => starts.push(FlowRequest {
                id: id.into(),
                src: src.into(),
                dst: dst.into(),
                route,
                bytes: spec.size.0.round(),
                start: Start::Ahead(spec.start.0),
                cap: None,
                zero_latency: false,
            }),
            Err(e) => errors.push(e),
        }
    }
    if !errors.is_empty() {
        const SHOWN: usize = 10;
        let more = errors.len().saturating_sub(SHOWN);
        errors.truncate(SHOWN);
        if more > 0 {
            errors.push(format!("... and {more} more bad flows"));
        }
        errs.0.extend(errors);
        return;
    }
    for req in starts {
        launch.start(&mut cal, req);
    }
}

/// The route of one flow and the names of its ends.
/// The flow alone on its route ends within simulated time (start + latency + size over the
/// bottleneck): a 1e20-byte flow or a 1e-300 B/s link is an input error naming the size, not
/// a run that stops at the end of time. Sharing can only make a flow later, which the run
/// reports if it happens.
fn check_in_range(
    topo: &Topology,
    spec: &FlowSpec,
    route: &Route,
    path: &str,
) -> Result<(), String> {
    let bottleneck = topo.bottleneck(route);
    let alone = spec.start.0.as_secs_f64()
        + route.latency.as_secs_f64()
        + if bottleneck.is_finite() {
            spec.size.0.round() / bottleneck
        } else {
            0.0
        };
    let max = SimTime::MAX.as_secs_f64();
    if alone.is_finite() && alone < max {
        return Ok(());
    }
    Err(format!(
        "{path}.size: {} B over a bottleneck of {bottleneck:e} B/s would end at {alone:e} s, beyond the {max:.3e} s hetsim simulates",
        spec.size.0
    ))
}

fn route_of(
    topo: &mut Topology,
    spec: &FlowSpec,
    path: &str,
) -> Result<(Arc<Route>, String, String), String> {
    if let Some(links) = &spec.route {
        if spec.src.is_some() || spec.dst.is_some() {
            return Err(format!(
                "{path}: give either `route` or `src` and `dst`, not both"
            ));
        }
        let hops = links
            .iter()
            .map(|h| topo.parse_hop(h))
            .collect::<Result<Vec<_>, _>>()
            .map_err(|e| format!("{path}.route: {e}"))?;
        if hops.is_empty() {
            return Err(format!(
                "{path}.route: expected at least one link (a transfer over no link would take no time)"
            ));
        }
        let first = links.first().cloned().unwrap_or_default();
        let last = links.last().cloned().unwrap_or_default();
        return Ok((Arc::new(topo.route_of_hops(hops)), first, last));
    }
    let (Some(src), Some(dst)) = (&spec.src, &spec.dst) else {
        return Err(format!(
            "{path}: expected `src` and `dst` endpoints (or a `route` of links)"
        ));
    };
    let a = topo.endpoint(src).map_err(|e| format!("{path}.src: {e}"))?;
    let b = topo.endpoint(dst).map_err(|e| format!("{path}.dst: {e}"))?;
    let route = topo
        .route(a, b)
        .map_err(|e| format!("{path}: {src} -> {dst} is unroutable: {e}"))?;
    // A copy inside one memory crosses no link of the platform: it is not modelled, and 0 s
    // would be a wrong answer.
    if route.hops.is_empty() {
        return Err(format!(
            "{path}: {src} -> {dst} crosses no link (the same memory); local copies are not modelled, give two different endpoints"
        ));
    }
    Ok((route, src.clone(), dst.clone()))
}
