//! The recorder: what systems emit for timelines and traces, without knowing how it is written.
//!
//! Three kinds of records, because viewers treat them differently:
//! - **state intervals** (resource, state, label, start, end): what one resource was doing.
//!   Intervals of one resource do not overlap (a Gantt row, a Paje state, a Chrome slice);
//! - **transfers** (from, to, label, bytes, start, end): movements between two resources that
//!   may overlap freely (Chrome async events, Paje links);
//! - **counter samples** (resource, counter, time, value): a piecewise-constant quantity such
//!   as a link's utilisation; a sample holds until the next one of the same series.
//!
//! Records are plain rows with interned names, appended in simulation order. When the run did
//! not ask for a timeline (switch `record` off, or no output that needs one) [`Recorder::is_on`]
//! is false and emitting systems skip their bookkeeping: the cost is one branch.
//! The writers live in `hetsim-output`; this lives in the engine so that every system can
//! emit (dependencies point one way: systems never depend on the output crate).

use bevy_ecs::prelude::*;
use std::collections::HashMap;

use hetsim_schema::SimTime;

/// What kind of thing a timeline row is; writers group and label rows by it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum ResourceKind {
    Gpu,
    CpuCore,
    Host,
    Nic,
    Link,
    Rank,
    Stream,
    Worker,
    Other,
}

impl ResourceKind {
    pub fn as_str(self) -> &'static str {
        match self {
            ResourceKind::Gpu => "gpu",
            ResourceKind::CpuCore => "cpu",
            ResourceKind::Host => "host",
            ResourceKind::Nic => "nic",
            ResourceKind::Link => "link",
            ResourceKind::Rank => "rank",
            ResourceKind::Stream => "stream",
            ResourceKind::Worker => "worker",
            ResourceKind::Other => "other",
        }
    }
}

/// A timeline row: a named resource inside a group (a node, or the network).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ResourceInfo {
    pub name: String,
    /// The container the resource belongs to: `node[3]` for `node[3].gpu[1]`, else `network`.
    pub group: String,
    pub kind: ResourceKind,
}

macro_rules! id_type {
    ($(#[$m:meta])* $name:ident) => {
        $(#[$m])*
        #[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
        pub struct $name(pub u32);
        impl $name {
            pub fn index(self) -> usize {
                self.0 as usize
            }
        }
    };
}

id_type!(
    /// A resource registered with [`Recorder::resource`].
    ResId
);
id_type!(
    /// An interned state or label name.
    NameId
);
id_type!(
    /// A counter series name registered with [`Recorder::counter_id`].
    CounterId
);

/// What a resource was doing from `start` to `end`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Interval {
    pub resource: ResId,
    pub state: NameId,
    /// Finer detail than the state (a kernel or flow name); `None` when there is none.
    pub label: Option<NameId>,
    pub start: SimTime,
    pub end: SimTime,
}

/// Bytes moved from one resource to another.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Transfer {
    pub from: ResId,
    pub to: ResId,
    pub label: NameId,
    pub bytes: f64,
    pub start: SimTime,
    pub end: SimTime,
}

/// A counter's value from `at` until its next sample.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Sample {
    pub resource: ResId,
    pub counter: CounterId,
    pub at: SimTime,
    pub value: f64,
}

/// A counter series' name and unit (`utilisation`, `%`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CounterInfo {
    pub name: String,
    pub unit: String,
}

/// Everything recorded during a run (see the module docs).
#[derive(Resource, Debug, Default, Clone)]
pub struct Recorder {
    on: bool,
    resources: Vec<ResourceInfo>,
    resource_ids: HashMap<String, ResId>,
    names: Vec<String>,
    name_ids: HashMap<String, NameId>,
    counters: Vec<CounterInfo>,
    intervals: Vec<Interval>,
    transfers: Vec<Transfer>,
    samples: Vec<Sample>,
}

impl Recorder {
    /// Whether systems should emit (set once, before the run).
    pub fn is_on(&self) -> bool {
        self.on
    }

    pub fn set_on(&mut self, on: bool) {
        self.on = on;
    }

    /// The id of the resource called `name`, registering it on first use.
    pub fn resource(&mut self, kind: ResourceKind, name: &str) -> ResId {
        if let Some(&id) = self.resource_ids.get(name) {
            return id;
        }
        let id = ResId(self.resources.len() as u32);
        self.resources.push(ResourceInfo {
            name: name.to_string(),
            group: group_of(name).to_string(),
            kind,
        });
        self.resource_ids.insert(name.to_string(), id);
        id
    }

    /// The id of a state or label name, interning it on first use.
    pub fn name_id(&mut self, name: &str) -> NameId {
        if let Some(&id) = self.name_ids.get(name) {
            return id;
        }
        let id = NameId(self.names.len() as u32);
        self.names.push(name.to_string());
        self.name_ids.insert(name.to_string(), id);
        id
    }

    /// The id of a counter series, registering it on first use.
    pub fn counter_id(&mut self, name: &str, unit: &str) -> CounterId {
        if let Some(i) = self.counters.iter().position(|c| c.name == name) {
            return CounterId(i as u32);
        }
        self.counters.push(CounterInfo {
            name: name.to_string(),
            unit: unit.to_string(),
        });
        CounterId(self.counters.len() as u32 - 1)
    }

    /// Records a state interval (ignored when `end` precedes `start`).
    pub fn interval(&mut self, interval: Interval) {
        if interval.end >= interval.start {
            self.intervals.push(interval);
        }
    }

    pub fn transfer(&mut self, transfer: Transfer) {
        self.transfers.push(transfer);
    }

    /// Records a counter sample. Of several samples of one series at one time, the last holds
    /// (writers keep it); systems sample a series at most once per step.
    pub fn sample(&mut self, sample: Sample) {
        self.samples.push(sample);
    }

    pub fn resources(&self) -> &[ResourceInfo] {
        &self.resources
    }

    pub fn resource_info(&self, id: ResId) -> &ResourceInfo {
        &self.resources[id.index()]
    }

    pub fn name(&self, id: NameId) -> &str {
        &self.names[id.index()]
    }

    pub fn counters(&self) -> &[CounterInfo] {
        &self.counters
    }

    pub fn counter_info(&self, id: CounterId) -> &CounterInfo {
        &self.counters[id.index()]
    }

    pub fn intervals(&self) -> &[Interval] {
        &self.intervals
    }

    pub fn transfers(&self) -> &[Transfer] {
        &self.transfers
    }

    pub fn samples(&self) -> &[Sample] {
        &self.samples
    }

    /// Whether anything was recorded.
    pub fn is_empty(&self) -> bool {
        self.intervals.is_empty() && self.transfers.is_empty() && self.samples.is_empty()
    }
}

/// The group of a resource name: its `node[N]` prefix, else `network`.
pub fn group_of(name: &str) -> &str {
    if name.starts_with("node[")
        && let Some(end) = name.find(']')
    {
        return &name[..=end];
    }
    "network"
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn groups_follow_node_prefixes() {
        assert_eq!(group_of("node[12].gpu[1]"), "node[12]");
        assert_eq!(group_of("node[0].pcie"), "node[0]");
        assert_eq!(group_of("ft.l1[4].up[2]"), "network");
        assert_eq!(group_of("node["), "network");
    }

    #[test]
    fn names_and_resources_are_interned_once() {
        let mut r = Recorder::default();
        let a = r.resource(ResourceKind::Gpu, "node[0].gpu[0]");
        let b = r.resource(ResourceKind::Gpu, "node[0].gpu[1]");
        assert_ne!(a, b);
        assert_eq!(r.resource(ResourceKind::Gpu, "node[0].gpu[0]"), a);
        assert_eq!(r.name_id("busy"), r.name_id("busy"));
        assert_eq!(r.counter_id("u", "%"), r.counter_id("u", "%"));
        assert_eq!(r.resources().len(), 2);
    }
}
