//! Components of the simulated machine and its traffic: plain data, no behaviour.
//!
//! Entities are the public face (users and recorders query them); hot solvers keep their own
//! dense arrays and point back here by index. Entities carry bevy's `Name` with the name by
//! which scenarios address them (`node[3].gpu[1]`, `ft.l1[4].up[2]`, `l0`).

use bevy_ecs::prelude::*;

use std::sync::Arc;

use hetsim_schema::SimTime;
use hetsim_schema::scenario::Sharing;

/// A compute node of a cluster.
#[derive(Component, Debug, Clone)]
pub struct Node {
    pub index: u32,
}

/// A CPU core of a node.
#[derive(Component, Debug, Clone)]
pub struct CpuCore {
    pub node: u32,
    pub index: u32,
}

/// A GPU of a node.
#[derive(Component, Debug, Clone)]
pub struct Gpu {
    pub node: u32,
    pub index: u32,
    pub model: String,
    /// Peak compute rate in Flop/s.
    pub speed: f64,
}

/// A memory node: host RAM or one GPU's memory.
#[derive(Component, Debug, Clone)]
pub struct MemoryNode {
    pub capacity: f64,
    pub used: f64,
}

/// A network interface card.
#[derive(Component, Debug, Clone)]
pub struct Nic {
    pub node: u32,
    pub index: u32,
}

/// A network switch (fat-tree level 1 is the leaf level; NVSwitches are level 0).
#[derive(Component, Debug, Clone)]
pub struct Switch {
    pub level: u32,
    pub index: u32,
}

/// A link: a capacity shared by the flows that cross it.
#[derive(Component, Debug, Clone)]
pub struct Link {
    /// Bytes per second (per direction when split-duplex).
    pub bandwidth: f64,
    pub latency: SimTime,
    pub sharing: Sharing,
    /// Dense index of the link in the platform's link table.
    pub index: u32,
}

/// Traffic carried by a link over the run, per direction (`[up, down]`; shared links use `up`).
#[derive(Component, Debug, Clone, Default)]
pub struct LinkUsage {
    pub bytes: [f64; 2],
    /// Seconds during which at least one flow was using the link.
    pub busy: [f64; 2],
}

/// A transfer of bytes over a route.
#[derive(Component, Debug, Clone)]
pub struct Flow {
    pub id: FlowName,
    /// The rows of its two ends in outputs (shared by every flow between them).
    pub src: Arc<str>,
    pub dst: Arc<str>,
    pub size: f64,
    pub start: SimTime,
}

/// A flow's id in outputs. A model that starts many flows names them by number, so the
/// name is written out only when an output asks for it, not once per flow as it starts.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum FlowName {
    Text(String),
    /// `{prefix}{serial}.{suffix}`, such as `m42.data` for stage `data` of message 42.
    Numbered {
        prefix: Arc<str>,
        serial: u64,
        suffix: &'static str,
    },
}

impl std::fmt::Display for FlowName {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            FlowName::Text(s) => f.write_str(s),
            FlowName::Numbered {
                prefix,
                serial,
                suffix,
            } => write!(f, "{prefix}{serial}.{suffix}"),
        }
    }
}

impl FlowName {
    /// The name as text: borrowed when it is text already, written out when numbered.
    pub fn as_text(&self) -> std::borrow::Cow<'_, str> {
        match self {
            FlowName::Text(s) => s.as_str().into(),
            numbered => numbered.to_string().into(),
        }
    }
}

impl From<String> for FlowName {
    fn from(s: String) -> Self {
        FlowName::Text(s)
    }
}

/// When a flow ended (exact seconds from the fluid model; the calendar event is rounded to
/// the femtosecond, this is not). Kept in a sparse set: every flow gains it once, and in a
/// table that would move the flow's whole row to another table.
#[derive(Component, Debug, Clone, Copy)]
#[component(storage = "SparseSet")]
pub struct FlowDone {
    pub end_s: f64,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_numbered_flow_name_reads_as_its_parts() {
        let name = FlowName::Numbered {
            prefix: Arc::from("jobA/m"),
            serial: 42,
            suffix: "data",
        };
        assert_eq!(name.to_string(), "jobA/m42.data");
        assert_eq!(name.as_text(), "jobA/m42.data");
        assert_eq!(FlowName::from("copy 3".to_string()).to_string(), "copy 3");
    }
}
