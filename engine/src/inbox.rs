//! Per-kind inboxes: the run loop sorts the events of a timestamp into them before a step.

use bevy_ecs::prelude::*;

use crate::calendar::SimEvent;

/// The events of one kind due at the current time.
#[derive(Resource)]
pub struct Inbox<E: SimEvent> {
    events: Vec<E>,
}

impl<E: SimEvent> Default for Inbox<E> {
    fn default() -> Self {
        Inbox { events: Vec::new() }
    }
}

impl<E: SimEvent> Inbox<E> {
    /// Takes the due events, in the order they were scheduled.
    pub fn drain(&mut self) -> std::vec::Drain<'_, E> {
        self.events.drain(..)
    }

    pub fn is_empty(&self) -> bool {
        self.events.is_empty()
    }

    pub(crate) fn push(&mut self, event: E) {
        self.events.push(event);
    }

    pub(crate) fn clear(&mut self) {
        self.events.clear();
    }
}

/// How the run loop delivers each kind of event.
pub(crate) struct Route {
    /// The event's name ([`SimEvent::NAME`]), for errors.
    pub name: &'static str,
    pub deliver: fn(&mut World, Entity, u64),
    pub clear: fn(&mut World),
}

#[derive(Resource, Default)]
pub(crate) struct Routes(pub Vec<Route>);

pub(crate) fn deliver<E: SimEvent>(world: &mut World, entity: Entity, arg: u64) {
    world
        .resource_mut::<Inbox<E>>()
        .push(E::unpack(entity, arg));
}

pub(crate) fn clear<E: SimEvent>(world: &mut World) {
    world.resource_mut::<Inbox<E>>().clear();
}
