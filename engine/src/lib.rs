//! hetsim's discrete-event engine on bevy_ecs: simulated time, the event calendar, the run
//! loop, switches (ablations), the seeded RNG, progress and limits.
//!
//! Systems talk through the calendar and through components: a system schedules typed
//! events, the run loop delivers each batch of simultaneous events into per-kind
//! [`Inbox`]es, and the step schedule runs the system sets in [`SimSet`] order.

pub mod calendar;
pub mod inbox;
pub mod progress;
pub mod record;
pub mod rng;
pub mod run;
pub mod schedule;
pub mod switches;

use bevy_app::{App, Plugin};
use bevy_ecs::prelude::*;
use std::sync::Arc;

pub use calendar::{Calendar, EventKind, RawEvent, SimEvent};
pub use hetsim_schema::SimTime;
pub use inbox::Inbox;
pub use progress::Progress;
pub use record::{Recorder, ResourceKind};
pub use rng::SimRng;
pub use run::{RunError, RunLimits, RunStats, run};
pub use schedule::{SimFinish, SimSet, SimStartup, SimStep, StartupSet};
pub use switches::{ModelDocs, ModelInfo, SwitchInfo, Switches, switch_off, switch_on};

/// The current simulated time.
#[derive(Resource, Debug, Default, Clone, Copy)]
pub struct Clock {
    pub now: SimTime,
}

/// The calendar and the clock, as systems usually need them together.
#[derive(bevy_ecs::system::SystemParam)]
pub struct Timeline<'w> {
    pub calendar: ResMut<'w, Calendar>,
    pub clock: Res<'w, Clock>,
}

impl Timeline<'_> {
    pub fn now(&self) -> SimTime {
        self.clock.now
    }

    /// Schedules a fixed-time event `delay` from now.
    pub fn after<E: SimEvent>(&mut self, delay: SimTime, event: E) {
        let at = self.clock.now.saturating_add(delay);
        self.calendar.schedule(at, event);
    }
}

/// Fatal model errors raised by systems (e.g. an endpoint that does not exist); the run loop
/// stops with them after the step.
#[derive(Resource, Debug, Default)]
pub struct SimErrors(pub Vec<String>);

/// A check that lists work that is stuck when no event is left.
pub type StallCheck = Arc<dyn Fn(&mut World) -> Vec<String> + Send + Sync>;

#[derive(Resource, Default, Clone)]
pub struct StallChecks(pub Vec<StallCheck>);

/// The engine's resources and schedules.
#[derive(Default)]
pub struct EnginePlugin {
    pub seed: u64,
    pub limits: RunLimits,
    pub progress: bool,
}

impl Plugin for EnginePlugin {
    fn build(&self, app: &mut App) {
        app.init_resource::<Calendar>()
            .init_resource::<Clock>()
            .init_resource::<Switches>()
            .init_resource::<ModelDocs>()
            .init_resource::<SimErrors>()
            .init_resource::<StallChecks>()
            .init_resource::<inbox::Routes>()
            .init_resource::<Recorder>()
            .insert_resource(SimRng::new(self.seed))
            .insert_resource(self.limits)
            .insert_resource(Progress::new(self.progress))
            .add_schedule(schedule::startup_schedule())
            .add_schedule(schedule::step_schedule())
            .add_schedule(schedule::finish_schedule())
            .register_switch(
                "record",
                true,
                "record intervals, transfers and counters for timelines and traces; off: summaries and tables only",
            );
    }
}

/// What plugins use to register themselves with the engine.
pub trait SimAppExt {
    /// Registers an event type and its inbox.
    fn add_sim_event<E: SimEvent>(&mut self) -> &mut Self;
    /// Registers a switch that `--disable NAME` or the scenario's `switches` can turn off.
    fn register_switch(
        &mut self,
        name: &'static str,
        default: bool,
        doc: &'static str,
    ) -> &mut Self;
    /// Describes a model for `hetsim systems`: what it computes, and its simplifications.
    fn describe_model(&mut self, name: &'static str, doc: &'static str) -> &mut Self;
    /// Registers a check that lists stuck work when the calendar runs dry.
    fn add_stall_check(
        &mut self,
        check: impl Fn(&mut World) -> Vec<String> + Send + Sync + 'static,
    ) -> &mut Self;
}

impl SimAppExt for App {
    fn add_sim_event<E: SimEvent>(&mut self) -> &mut Self {
        let world = self.world_mut();
        let kind = world.resource_mut::<Calendar>().register::<E>();
        let mut routes = world.resource_mut::<inbox::Routes>();
        if kind.0 as usize == routes.0.len() {
            routes.0.push(inbox::Route {
                name: E::NAME,
                deliver: inbox::deliver::<E>,
                clear: inbox::clear::<E>,
            });
            world.init_resource::<Inbox<E>>();
        }
        self
    }

    fn register_switch(
        &mut self,
        name: &'static str,
        default: bool,
        doc: &'static str,
    ) -> &mut Self {
        self.world_mut()
            .resource_mut::<Switches>()
            .register(name, default, doc);
        self
    }

    fn add_stall_check(
        &mut self,
        check: impl Fn(&mut World) -> Vec<String> + Send + Sync + 'static,
    ) -> &mut Self {
        self.world_mut()
            .resource_mut::<StallChecks>()
            .0
            .push(Arc::new(check));
        self
    }

    fn describe_model(&mut self, name: &'static str, doc: &'static str) -> &mut Self {
        self.world_mut()
            .resource_mut::<ModelDocs>()
            .0
            .push(ModelInfo { name, doc });
        self
    }
}
