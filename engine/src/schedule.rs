//! The two schedules and the order of system sets within a step.

use bevy_ecs::prelude::*;
use bevy_ecs::schedule::ScheduleLabel;

/// Runs once before the first event: builds the platform, then the workload schedules its
/// first events.
#[derive(ScheduleLabel, Debug, Clone, PartialEq, Eq, Hash)]
pub struct SimStartup;

/// Runs once per batch of events that share a timestamp (and again for zero-delay cascades).
#[derive(ScheduleLabel, Debug, Clone, PartialEq, Eq, Hash)]
pub struct SimStep;

/// Runs once after the last event: models publish their totals into components.
#[derive(ScheduleLabel, Debug, Clone, PartialEq, Eq, Hash)]
pub struct SimFinish;

/// Order of work at start-up.
#[derive(SystemSet, Debug, Clone, PartialEq, Eq, Hash)]
pub enum StartupSet {
    /// Entities of the machine: nodes, GPUs, links, switches; routing tables.
    Platform,
    /// Solvers and indexes built from the platform.
    Models,
    /// Traffic and work, and their first events.
    Workload,
}

/// Order of work within one step, as in DESIGN.md: who asks comes before who carries.
#[derive(SystemSet, Debug, Clone, PartialEq, Eq, Hash)]
pub enum SimSet {
    Workload,
    Runtime,
    Protocol,
    Collectives,
    Compute,
    Network,
    Record,
}

/// A schedule run on one thread: at this grain a multi-threaded executor costs 2-3x more
/// (DESIGN.md).
fn single_threaded(label: impl ScheduleLabel) -> Schedule {
    let mut s = Schedule::new(label);
    s.set_executor(bevy_ecs::schedule::SingleThreadedExecutor::new());
    s
}

pub(crate) fn startup_schedule() -> Schedule {
    let mut s = single_threaded(SimStartup);
    s.configure_sets(
        (
            StartupSet::Platform,
            StartupSet::Models.run_if(nothing_failed),
            StartupSet::Workload.run_if(nothing_failed),
        )
            .chain(),
    );
    s
}

/// A start-up stage builds on the ones before it: after a failed one (a platform that did
/// not build) the later stages do not run, and the first failure is the one reported.
fn nothing_failed(errors: Option<Res<crate::SimErrors>>) -> bool {
    errors.is_none_or(|e| e.0.is_empty())
}

pub(crate) fn finish_schedule() -> Schedule {
    single_threaded(SimFinish)
}

pub(crate) fn step_schedule() -> Schedule {
    let mut s = single_threaded(SimStep);
    // Commands are applied once, when the step ends: systems talk through the calendar and
    // inboxes, and what one schedules is delivered in a later step. Bevy's automatic sync
    // points would cost every step a pass over the systems for nothing.
    s.set_build_settings(bevy_ecs::schedule::ScheduleBuildSettings {
        auto_insert_apply_deferred: false,
        ..Default::default()
    });
    s.configure_sets(
        (
            SimSet::Workload,
            SimSet::Runtime,
            SimSet::Protocol,
            SimSet::Collectives,
            SimSet::Compute,
            SimSet::Network,
            SimSet::Record,
        )
            .chain(),
    );
    s
}
