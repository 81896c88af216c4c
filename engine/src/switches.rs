//! Switches: model components that can be turned off (ablations), by stable name.

use bevy_ecs::prelude::*;
use std::collections::BTreeMap;

/// One switch as `hetsim systems` lists it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SwitchInfo {
    pub name: &'static str,
    pub default: bool,
    /// What the component models, and what the simpler model is when it is off.
    pub doc: &'static str,
    pub on: bool,
}

/// Every registered switch and its effective state.
#[derive(Resource, Debug, Default, Clone)]
pub struct Switches {
    all: BTreeMap<&'static str, SwitchInfo>,
}

impl Switches {
    pub fn register(&mut self, name: &'static str, default: bool, doc: &'static str) {
        self.all.insert(
            name,
            SwitchInfo {
                name,
                default,
                doc,
                on: default,
            },
        );
    }

    pub fn is_on(&self, name: &str) -> bool {
        self.all.get(name).is_some_and(|s| s.on)
    }

    /// Sets a switch; an unknown name is an error that lists the known ones.
    pub fn set(&mut self, name: &str, on: bool) -> Result<(), String> {
        match self.all.get_mut(name) {
            Some(s) => {
                s.on = on;
                Ok(())
            }
            None => Err(format!(
                "unknown switch `{name}`; known switches: {}",
                self.all.keys().copied().collect::<Vec<_>>().join(", ")
            )),
        }
    }

    /// All switches, sorted by name.
    pub fn iter(&self) -> impl Iterator<Item = &SwitchInfo> {
        self.all.values()
    }
}

/// Run condition: the system runs only while the switch is on.
pub fn switch_on(name: &'static str) -> impl FnMut(Res<Switches>) -> bool + Clone {
    move |s: Res<Switches>| s.is_on(name)
}

/// Run condition: the system runs only while the switch is off (the simpler model).
pub fn switch_off(name: &'static str) -> impl FnMut(Res<Switches>) -> bool + Clone {
    move |s: Res<Switches>| !s.is_on(name)
}

/// A model as `hetsim systems` describes it: what it computes and what it leaves out.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ModelInfo {
    pub name: &'static str,
    pub doc: &'static str,
}

/// Every model plugin registered in the app, in registration order.
#[derive(Resource, Debug, Default, Clone)]
pub struct ModelDocs(pub Vec<ModelInfo>);
