//! The run loop: take every event stamped with the next time into the inboxes, run the step
//! schedule once, repeat while events remain at that same time (zero-delay cascades), advance.

use bevy_app::App;
use bevy_ecs::prelude::*;
use bevy_ecs::schedule::{Schedule, Schedules};
use std::time::Instant;

use hetsim_schema::SimTime;

use crate::calendar::{Calendar, RawEvent};
use crate::inbox::Routes;
use crate::progress::Progress;
use crate::schedule::{SimFinish, SimStartup, SimStep};
use crate::{Clock, SimErrors, StallChecks};

/// Where a run stops even if work remains.
#[derive(Resource, Debug, Clone, Copy, Default)]
pub struct RunLimits {
    pub max_time: Option<SimTime>,
    pub max_events: Option<u64>,
}

/// What a finished run did.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct RunStats {
    /// Time of the last event.
    pub sim_time: SimTime,
    pub events: u64,
    /// Number of step-schedule runs (timestamp batches and cascades).
    pub steps: u64,
    pub wall_s: f64,
}

/// Why a run could not finish.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum RunError {
    /// The scenario cannot be built (found at start-up: an unknown endpoint, a bad figure).
    #[error("{0}")]
    Input(String),
    /// A model found an error while running.
    #[error("{0}")]
    Model(String),
    /// A model computed a time beyond what simulated time can hold: a rate of zero or next
    /// to it, or a duration too long. Never clamped into a result.
    #[error(
        "simulated time out of range: event `{event}` falls beyond {:.1e} s (a bandwidth, speed or rate of zero or next to it, or a size or duration too large), after {at}", SimTime::MAX.as_secs_f64()
    )]
    OutOfRange { event: String, at: SimTime },
    #[error("the simulation cannot progress at {at}: no event is pending but work is stuck:\n  {}", .stuck.join("\n  "))]
    Stalled { at: SimTime, stuck: Vec<String> },
    #[error(
        "limit reached: {what} at simulated time {at} after {events} events ({pending} still pending)"
    )]
    Limit {
        what: String,
        at: SimTime,
        events: u64,
        pending: usize,
    },
}

/// Runs start-up, then every event until the calendar is empty.
pub fn run(app: &mut App) -> Result<RunStats, RunError> {
    let wall = Instant::now();
    let world = app.world_mut();
    world.run_schedule(SimStartup);
    check_errors(world).map_err(|e| match e {
        RunError::Model(m) => RunError::Input(m),
        other => other,
    })?;
    let limits = *world.resource::<RunLimits>();
    // The step schedule is taken out of `Schedules` for the run: `run_schedule` would look it
    // up, remove and reinsert it at every step.
    let mut step = world
        .resource_mut::<Schedules>()
        .remove(SimStep)
        .expect("the engine plugin adds the step schedule");
    let result = run_steps(world, &mut step, limits);
    world.resource_mut::<Schedules>().insert(step);
    let (events, steps) = result?;
    world.resource_mut::<Progress>().finish();
    let now = world.resource::<Clock>().now;
    check_stalls(world, now)?;
    world.run_schedule(SimFinish);
    Ok(RunStats {
        sim_time: now,
        events,
        steps,
        wall_s: wall.elapsed().as_secs_f64(),
    })
}

/// Drains the calendar, one step per timestamp and zero-delay cascade; returns the events
/// and steps.
fn run_steps(
    world: &mut World,
    step: &mut Schedule,
    limits: RunLimits,
) -> Result<(u64, u64), RunError> {
    let mut events = 0u64;
    let mut steps = 0u64;
    // The routes are fixed once the run starts: copied out, a step looks none up.
    let routes: Vec<(Deliver, Clear)> = world
        .resource::<Routes>()
        .0
        .iter()
        .map(|r| (r.deliver, r.clear))
        .collect();
    // The events of a step, taken from the calendar in one borrow.
    let mut due: Vec<RawEvent> = Vec::new();
    // Kinds of the events delivered this step: only their inboxes can need clearing.
    let mut delivered: Vec<usize> = Vec::new();
    let mut next = world.resource::<Calendar>().peek_time();
    while let Some(t) = next {
        // Computed times saturate at the end of the range: reaching it means a time was lost.
        if t == SimTime::MAX {
            let kind = world.resource::<Calendar>().peek_kind();
            return Err(RunError::OutOfRange {
                event: kind
                    .map_or("?", |k| world.resource::<Routes>().0[k.0 as usize].name)
                    .to_string(),
                at: world.resource::<Clock>().now,
            });
        }
        if let Some(max) = limits.max_time
            && t > max
        {
            return Err(limit(world, format!("max_time {max}"), events));
        }
        world.resource_mut::<Clock>().now = t;
        loop {
            // At most `max_events` are delivered in all, even inside one step.
            let budget = limits.max_events.map_or(u64::MAX, |m| m - events);
            take_due(world, t, &mut due, budget);
            events += due.len() as u64;
            deliver(world, &routes, &mut due, &mut delivered);
            step.run(world);
            steps += 1;
            clear_inboxes(world, &routes, &mut delivered);
            check_errors(world)?;
            let calendar = world.resource::<Calendar>();
            if let Some(max) = limits.max_events
                && events >= max
                && !calendar.is_empty()
            {
                return Err(limit(world, format!("max_events {max}"), events));
            }
            next = calendar.peek_time();
            if next != Some(t) {
                break;
            }
        }
        world.resource_mut::<Progress>().tick(t, events);
    }
    Ok((events, steps))
}

type Deliver = fn(&mut World, Entity, u64);
type Clear = fn(&mut World);

/// Puts the step's events into their inboxes and notes their kinds.
fn deliver(
    world: &mut World,
    routes: &[(Deliver, Clear)],
    due: &mut Vec<RawEvent>,
    delivered: &mut Vec<usize>,
) {
    for ev in due.drain(..) {
        let kind = ev.kind.0 as usize;
        (routes[kind].0)(world, ev.entity, ev.arg);
        if !delivered.contains(&kind) {
            delivered.push(kind);
        }
    }
}

/// Drops events no system consumed (e.g. of a switched-off model), so they do not pile up.
/// Only the kinds delivered this step can hold any: every inbox is emptied after each step.
fn clear_inboxes(world: &mut World, routes: &[(Deliver, Clear)], delivered: &mut Vec<usize>) {
    for kind in delivered.drain(..) {
        (routes[kind].1)(world);
    }
}

/// Moves the events due at `t` (at most `budget`) from the calendar into `due`, in order.
fn take_due(world: &mut World, t: SimTime, due: &mut Vec<RawEvent>, budget: u64) {
    let mut calendar = world.resource_mut::<Calendar>();
    while (due.len() as u64) < budget
        && let Some(ev) = calendar.pop_at(t)
    {
        due.push(ev);
    }
}

fn check_errors(world: &mut World) -> Result<(), RunError> {
    // Read first: a mutable access at every step would cost change-detection bookkeeping.
    if world.resource::<SimErrors>().0.is_empty() {
        return Ok(());
    }
    let mut errors = world.resource_mut::<SimErrors>();
    Err(RunError::Model(std::mem::take(&mut errors.0).join("\n")))
}

fn check_stalls(world: &mut World, at: SimTime) -> Result<(), RunError> {
    let checks = world.resource::<StallChecks>().0.clone();
    let stuck: Vec<String> = checks.iter().flat_map(|check| check(world)).collect();
    if stuck.is_empty() {
        Ok(())
    } else {
        Err(RunError::Stalled { at, stuck })
    }
}

fn limit(world: &mut World, what: String, events: u64) -> RunError {
    world.resource_mut::<Progress>().finish();
    RunError::Limit {
        what,
        at: world.resource::<Clock>().now,
        events,
        pending: world.resource::<Calendar>().len(),
    }
}
