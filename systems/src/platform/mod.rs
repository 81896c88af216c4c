//! The platform plugin: builds the machine's entities (nodes, CPU cores, GPUs, memory nodes,
//! NICs, switches, links) and its routing tables from the scenario's platform description.
//!
//! Node template: the PCIe model of the StarPU-SimGrid paper (per GPU an up link host->GPU and
//! a down link GPU->host, plus one shared host link every PCIe transfer crosses); NVLink as
//! per-pair links or one NVSwitch port per GPU; NICs on the host's root complex or beside the
//! GPUs. Between nodes: none, a star, or a fat-tree with d-mod-k routing. Simplified: a
//! PCIe switch tree deeper than one level, NUMA distances and switch-internal contention are
//! not modelled.

pub mod build;
pub mod fattree;
pub mod topology;

use bevy_app::{App, Plugin};
use bevy_ecs::prelude::*;

use hetsim_components::*;
use hetsim_engine::{SimAppExt, SimErrors, SimStartup, StartupSet};
use hetsim_schema::scenario::PlatformSpec;

pub use topology::{Dir, Endpoint, Hop, LinkInfo, Route, Topology};

/// The platform description to build (inserted by whoever assembles the app).
#[derive(Resource, Debug, Clone)]
pub struct PlatformConfig(pub PlatformSpec);

/// Entities of the links, in link-table order.
#[derive(Resource, Debug, Clone, Default)]
pub struct LinkEntities(pub Vec<Entity>);

pub struct PlatformPlugin;

impl Plugin for PlatformPlugin {
    fn build(&self, app: &mut App) {
        app.describe_model(
            "platform",
            "nodes of CPU cores, GPUs and NICs on the StarPU-SimGrid PCIe model (per-GPU up/down links and one shared host link), NVLink pairs or an NVSwitch; star or fat-tree (d-mod-k) networks. Simplified: one PCIe level, no NUMA distances, no switch-internal contention",
        )
        .add_systems(SimStartup, build_platform.in_set(StartupSet::Platform));
    }
}

/// Builds the tables, then spawns one entity per part of the machine.
fn build_platform(world: &mut World) {
    let spec = world.resource::<PlatformConfig>().0.clone();
    let topo = match build::topology(&spec) {
        Ok(t) => t,
        Err(e) => {
            world.resource_mut::<SimErrors>().0.push(e);
            return;
        }
    };
    if let PlatformSpec::Cluster(c) = &spec {
        spawn_cluster_parts(world, c);
    }
    let links: Vec<Entity> = world
        .spawn_batch(topo.links.iter().enumerate().map(|(i, l)| {
            (
                Name::new(l.name.clone()),
                Link {
                    bandwidth: l.bandwidth,
                    latency: l.latency,
                    sharing: l.sharing,
                    index: i as u32,
                },
                LinkUsage::default(),
            )
        }))
        .collect();
    world.insert_resource(LinkEntities(links));
    world.insert_resource(topo);
}

fn spawn_cluster_parts(world: &mut World, c: &hetsim_schema::scenario::Cluster) {
    let n = &c.node;
    for node in 0..c.nodes {
        world.spawn((Node { index: node }, Name::new(format!("node[{node}]"))));
        world.spawn((
            Name::new(format!("node[{node}].ram")),
            MemoryNode {
                capacity: n.host_memory.0,
                used: 0.0,
            },
        ));
        world.spawn_batch((0..n.cpu_cores).map(move |i| {
            (
                CpuCore { node, index: i },
                Name::new(format!("node[{node}].cpu[{i}]")),
            )
        }));
        for g in 0..n.gpus {
            world.spawn((
                Gpu {
                    node,
                    index: g,
                    model: n.gpu.name.clone(),
                    speed: n.gpu.speed.0,
                },
                MemoryNode {
                    capacity: n.gpu.memory.0,
                    used: 0.0,
                },
                Name::new(format!("node[{node}].gpu[{g}]")),
            ));
        }
        world.spawn_batch((0..n.nics).map(move |j| {
            (
                Nic { node, index: j },
                Name::new(format!("node[{node}].nic[{j}]")),
            )
        }));
    }
    if let hetsim_schema::scenario::Network::Star(_) = c.network {
        world.spawn((Switch { level: 1, index: 0 }, Name::new("star")));
    }
    if matches!(
        c.node.nvlink,
        Some(hetsim_schema::scenario::NvLinkSpec::Switch(_))
    ) {
        for node in 0..c.nodes {
            world.spawn((
                Switch {
                    level: 0,
                    index: node,
                },
                Name::new(format!("node[{node}].nvswitch")),
            ));
        }
    }
}
