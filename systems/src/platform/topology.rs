//! The platform as dense tables: links, endpoints, and how to route between endpoints.
//!
//! Links are numbered densely; a route is a list of (link, direction) hops plus the sum of
//! their latencies. Routes are computed once per endpoint pair and cached.

use bevy_ecs::prelude::*;
use foldhash::HashMap;
use smallvec::SmallVec;
use std::sync::Arc;

use hetsim_schema::SimTime;
use hetsim_schema::scenario::{NicAttach, Sharing};

use super::fattree::FatTree;

/// Which way a hop crosses a link (matters only for split-duplex links).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Dir {
    Up,
    Down,
}

impl Dir {
    pub fn index(self) -> usize {
        self as usize
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct Hop {
    pub link: u32,
    pub dir: Dir,
}

/// A path through the platform.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct Route {
    pub hops: SmallVec<[Hop; 8]>,
    pub latency: SimTime,
}

/// One link's figures.
#[derive(Debug, Clone)]
pub struct LinkInfo {
    pub name: String,
    pub bandwidth: f64,
    pub latency: SimTime,
    pub sharing: Sharing,
}

/// Something a flow can start or end at.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Endpoint {
    Host {
        node: u32,
    },
    Gpu {
        node: u32,
        gpu: u32,
    },
    Nic {
        node: u32,
        nic: u32,
    },
    /// A named endpoint of an explicit platform.
    Named(u32),
}

impl Endpoint {
    /// The name a cluster endpoint is written with (`node[0].host`, `node[1].gpu[2]`,
    /// `node[0].nic[0]`); an explicit platform's endpoints are named by the platform.
    pub fn cluster_name(self) -> Option<String> {
        match self {
            Endpoint::Host { node } => Some(format!("node[{node}].host")),
            Endpoint::Gpu { node, gpu } => Some(format!("node[{node}].gpu[{gpu}]")),
            Endpoint::Nic { node, nic } => Some(format!("node[{node}].nic[{nic}]")),
            Endpoint::Named(_) => None,
        }
    }

    fn node(self) -> Option<u32> {
        match self {
            Endpoint::Host { node } | Endpoint::Gpu { node, .. } | Endpoint::Nic { node, .. } => {
                Some(node)
            }
            Endpoint::Named(_) => None,
        }
    }
}

/// Dense link numbering of a cluster: a fixed block of links per node, then the fabric.
#[derive(Debug, Clone)]
pub struct ClusterLayout {
    pub nodes: u32,
    /// CPU cores per node (`node[N].cpu[C]` names one; its traffic goes through the host).
    pub cpus: u32,
    pub gpus: u32,
    pub nics: u32,
    pub nic_attach: NicAttach,
    pub nvlink: NvLayout,
    /// The NVSwitch reduces and multicasts (NVLink SHARP).
    pub multicast: bool,
    pub fabric: Fabric,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum NvLayout {
    None,
    Pairs,
    Switch,
}

#[derive(Debug, Clone)]
pub enum Fabric {
    None,
    /// Every NIC's cable goes to one switch.
    Star,
    /// Cables go to leaf switches; `first_link` numbers the tree's links above the leaves.
    /// `rails`: rail-optimised, the tree's level-0 elements are NICs, `rails` nodes per leaf
    /// ([`ClusterLayout::tree_port`]).
    FatTree {
        tree: FatTree,
        first_link: u32,
        rails: Option<u32>,
    },
}

impl ClusterLayout {
    fn nv_links(&self) -> u32 {
        match self.nvlink {
            NvLayout::None => 0,
            NvLayout::Pairs => self.gpus * self.gpus.saturating_sub(1) / 2,
            NvLayout::Switch => self.gpus,
        }
    }

    /// Links per node: PCIe host link, per-GPU up and down, NVLink, per-NIC link and cable.
    pub fn block(&self) -> u32 {
        1 + 2 * self.gpus + self.nv_links() + 2 * self.nics
    }

    fn base(&self, node: u32) -> u32 {
        node * self.block()
    }

    pub fn pcie_bus(&self, node: u32) -> u32 {
        self.base(node)
    }

    /// Host to GPU.
    pub fn gpu_up(&self, node: u32, gpu: u32) -> u32 {
        self.base(node) + 1 + 2 * gpu
    }

    /// GPU to host.
    pub fn gpu_down(&self, node: u32, gpu: u32) -> u32 {
        self.base(node) + 2 + 2 * gpu
    }

    /// The NVLink of pair (i, j), i < j, or the NVSwitch port of GPU i.
    pub fn nvlink(&self, node: u32, i: u32, j: u32) -> u32 {
        let first = self.base(node) + 1 + 2 * self.gpus;
        match self.nvlink {
            NvLayout::Pairs => {
                let (i, j) = (i.min(j), i.max(j));
                // Pairs (0,1), (0,2), ..., (1,2), ... in order.
                first + i * (2 * self.gpus - i - 1) / 2 + (j - i - 1)
            }
            _ => first + i,
        }
    }

    pub fn nic(&self, node: u32, nic: u32) -> u32 {
        self.base(node) + 1 + 2 * self.gpus + self.nv_links() + 2 * nic
    }

    pub fn cable(&self, node: u32, nic: u32) -> u32 {
        self.nic(node, nic) + 1
    }

    pub fn fabric_first_link(&self) -> u32 {
        self.nodes * self.block()
    }

    /// The fat-tree's level-0 element NIC `nic` of `node` hangs from: the node itself, or on a
    /// rail-optimised tree of `per_leaf` nodes per leaf, rail `nic`'s leaf of the node's group:
    /// leaves of one group numbered rail by rail.
    pub fn tree_port(&self, node: u32, nic: u32) -> u64 {
        match self.fabric {
            Fabric::FatTree {
                rails: Some(per_leaf),
                ..
            } => {
                let (group, slot) = ((node / per_leaf) as u64, (node % per_leaf) as u64);
                (group * self.nics as u64 + nic as u64) * per_leaf as u64 + slot
            }
            _ => node as u64,
        }
    }

    /// The GPU of `src`'s node that shares `dst`'s NIC (its rail), when `src` and `dst` are
    /// GPUs on different nodes reaching the network through different NICs, the NICs sit
    /// beside the GPUs (a NIC near one GPU is far from the others) and the GPUs are joined by
    /// NVLink: where NCCL's PXN moves the data before it leaves the node.
    pub fn rail_relay(&self, src: Endpoint, dst: Endpoint) -> Option<Endpoint> {
        let (Endpoint::Gpu { node: a, .. }, Endpoint::Gpu { node: b, gpu }) = (src, dst) else {
            return None;
        };
        let crosses = a != b && self.nic_of(src) != self.nic_of(dst);
        let near = self.nic_attach == NicAttach::GpuSwitch && self.nvlink != NvLayout::None;
        (crosses && near).then_some(Endpoint::Gpu { node: a, gpu })
    }

    /// The NIC a GPU uses: GPUs are spread evenly over the NICs (rail affinity).
    fn nic_of(&self, e: Endpoint) -> u32 {
        match e {
            Endpoint::Gpu { gpu, .. } => gpu * self.nics / self.gpus.max(1),
            Endpoint::Nic { nic, .. } => nic,
            _ => 0,
        }
    }

    /// Hops inside one node.
    fn local(&self, node: u32, src: Endpoint, dst: Endpoint, out: &mut Vec<Hop>) {
        use Endpoint::*;
        let up = |link| Hop { link, dir: Dir::Up };
        let down = |link| Hop {
            link,
            dir: Dir::Down,
        };
        let bus = up(self.pcie_bus(node));
        let near_gpus = self.nic_attach == NicAttach::GpuSwitch;
        match (src, dst) {
            (Host { .. }, Host { .. }) => {}
            (Host { .. }, Gpu { gpu, .. }) => out.extend([bus, up(self.gpu_up(node, gpu))]),
            (Gpu { gpu, .. }, Host { .. }) => out.extend([up(self.gpu_down(node, gpu)), bus]),
            (Gpu { gpu: i, .. }, Gpu { gpu: j, .. }) if i == j => {}
            (Gpu { gpu: i, .. }, Gpu { gpu: j, .. }) => match self.nvlink {
                NvLayout::Pairs => {
                    let dir = if i < j { Dir::Up } else { Dir::Down };
                    out.push(Hop {
                        link: self.nvlink(node, i, j),
                        dir,
                    });
                }
                NvLayout::Switch => {
                    out.extend([up(self.nvlink(node, i, 0)), down(self.nvlink(node, j, 0))])
                }
                NvLayout::None => {
                    out.extend([up(self.gpu_down(node, i)), bus, up(self.gpu_up(node, j))])
                }
            },
            (Host { .. }, Nic { .. }) | (Nic { .. }, Host { .. }) => out.push(bus),
            (Nic { nic: a, .. }, Nic { nic: b, .. }) => {
                if a != b {
                    out.push(bus)
                }
            }
            (Gpu { gpu, .. }, Nic { .. }) => {
                out.push(up(self.gpu_down(node, gpu)));
                if !near_gpus {
                    out.push(bus);
                }
            }
            (Nic { .. }, Gpu { gpu, .. }) => {
                if !near_gpus {
                    out.push(bus);
                }
                out.push(up(self.gpu_up(node, gpu)));
            }
            (Named(_), _) | (_, Named(_)) => unreachable!("named endpoints are not in clusters"),
        }
    }

    /// Hops from `src` to `dst`, or why there is no route.
    fn route(&self, src: Endpoint, dst: Endpoint, out: &mut Vec<Hop>) -> Result<(), String> {
        let (a, b) = (
            src.node().expect("cluster endpoint"),
            dst.node().expect("cluster endpoint"),
        );
        if a == b {
            self.local(a, src, dst, out);
            return Ok(());
        }
        let (na, nb) = (self.nic_of(src), self.nic_of(dst));
        self.local(a, src, Endpoint::Nic { node: a, nic: na }, out);
        out.push(Hop {
            link: self.nic(a, na),
            dir: Dir::Up,
        });
        out.push(Hop {
            link: self.cable(a, na),
            dir: Dir::Up,
        });
        match &self.fabric {
            Fabric::None => {
                return Err("the platform has no network between nodes (network: None)".into());
            }
            Fabric::Star => {}
            Fabric::FatTree {
                tree, first_link, ..
            } => {
                for h in tree
                    .route(self.tree_port(a, na), self.tree_port(b, nb))
                    .into_iter()
                    .filter(|h| h.level > 0)
                {
                    let link = first_link + (h.link - tree.link_base[1]) as u32;
                    out.push(Hop {
                        link,
                        dir: if h.up { Dir::Up } else { Dir::Down },
                    });
                }
            }
        }
        out.push(Hop {
            link: self.cable(b, nb),
            dir: Dir::Down,
        });
        out.push(Hop {
            link: self.nic(b, nb),
            dir: Dir::Down,
        });
        self.local(b, Endpoint::Nic { node: b, nic: nb }, dst, out);
        Ok(())
    }
}

/// Routes listed by hand.
#[derive(Debug, Clone, Default)]
pub struct ExplicitRoutes {
    pub names: Vec<String>,
    pub routes: HashMap<(u32, u32), Vec<Hop>>,
}

#[derive(Debug, Clone)]
pub enum Layout {
    Cluster(ClusterLayout),
    Explicit(ExplicitRoutes),
}

/// The platform's tables, built at start-up by the platform plugin.
#[derive(Resource, Debug, Clone)]
pub struct Topology {
    pub links: Vec<LinkInfo>,
    pub layout: Layout,
    link_by_name: HashMap<String, u32>,
    cache: HashMap<(Endpoint, Endpoint), Arc<Route>>,
    /// Routes through a relay, by (source, relay, destination).
    via_cache: HashMap<(Endpoint, Endpoint, Endpoint), Arc<Route>>,
}

impl Topology {
    pub fn new(links: Vec<LinkInfo>, layout: Layout) -> Self {
        let link_by_name = links
            .iter()
            .enumerate()
            .map(|(i, l)| (l.name.clone(), i as u32))
            .collect();
        Topology {
            links,
            layout,
            link_by_name,
            cache: HashMap::default(),
            via_cache: HashMap::default(),
        }
    }

    pub fn link_index(&self, name: &str) -> Option<u32> {
        self.link_by_name.get(name).copied()
    }

    /// Reads a link reference: `NAME`, `NAME:up` or `NAME:down`.
    pub fn parse_hop(&self, text: &str) -> Result<Hop, String> {
        let (name, dir) = match text.rsplit_once(':') {
            Some((n, "up")) => (n, Dir::Up),
            Some((n, "down")) => (n, Dir::Down),
            Some((_, other)) => {
                return Err(format!(
                    "`{text}`: direction `{other}` is neither up nor down"
                ));
            }
            None => (text, Dir::Up),
        };
        let link = self
            .link_index(name)
            .ok_or_else(|| format!("unknown link `{name}`"))?;
        Ok(Hop { link, dir })
    }

    /// A route from explicit hops.
    pub fn route_of_hops(&self, hops: impl IntoIterator<Item = Hop>) -> Route {
        let hops: SmallVec<[Hop; 8]> = hops.into_iter().collect();
        let latency = hops.iter().fold(SimTime::ZERO, |t, h| {
            t.saturating_add(self.links[h.link as usize].latency)
        });
        Route { hops, latency }
    }

    /// What a flow alone on a route gets (infinite for an empty route): the smallest
    /// bandwidth along it, divided by the times the route crosses the same shared capacity
    /// (a `Shared` link in either direction, a `SplitDuplex` one in the same direction), as
    /// SimGrid charges a link once per listing. Routes are short, so the count is a scan.
    pub fn bottleneck(&self, route: &Route) -> f64 {
        let same_capacity = |a: &Hop, b: &Hop| {
            a.link == b.link
                && match self.links[a.link as usize].sharing {
                    Sharing::Shared => true,
                    Sharing::SplitDuplex => a.dir == b.dir,
                    Sharing::FatPipe => false,
                }
        };
        route
            .hops
            .iter()
            .map(|h| {
                let times = route.hops.iter().filter(|g| same_capacity(h, g)).count();
                self.links[h.link as usize].bandwidth / times.max(1) as f64
            })
            .fold(f64::INFINITY, f64::min)
    }

    /// Reads an endpoint name: `node[3].gpu[1]`, `node[3].host`, `node[3].nic[0]`, or a name of
    /// an explicit platform.
    pub fn endpoint(&self, name: &str) -> Result<Endpoint, String> {
        match &self.layout {
            Layout::Explicit(r) => r
                .names
                .iter()
                .position(|n| n == name)
                .map(|i| Endpoint::Named(i as u32))
                .ok_or_else(|| {
                    format!(
                        "unknown endpoint `{name}`; the platform's routes name: {}",
                        r.names.join(", ")
                    )
                }),
            Layout::Cluster(c) => parse_cluster_endpoint(c, name),
        }
    }

    /// Where NCCL's PXN relays a transfer from `src` to `dst` ([`ClusterLayout::rail_relay`]).
    pub fn rail_relay(&self, src: Endpoint, dst: Endpoint) -> Option<Endpoint> {
        match &self.layout {
            Layout::Cluster(c) => c.rail_relay(src, dst),
            Layout::Explicit(_) => None,
        }
    }

    /// The route from `src` to `dst` through `via`: the two routes end to end, computed once
    /// and cached.
    pub fn route_via(
        &mut self,
        src: Endpoint,
        via: Endpoint,
        dst: Endpoint,
    ) -> Result<Arc<Route>, String> {
        if let Some(r) = self.via_cache.get(&(src, via, dst)) {
            return Ok(r.clone());
        }
        let first = self.route(src, via)?;
        let second = self.route(via, dst)?;
        let hops = first.hops.iter().chain(second.hops.iter()).copied();
        let route = Arc::new(self.route_of_hops(hops.collect::<Vec<_>>()));
        self.via_cache.insert((src, via, dst), route.clone());
        Ok(route)
    }

    /// The route between two endpoints, computed once and cached.
    pub fn route(&mut self, src: Endpoint, dst: Endpoint) -> Result<Arc<Route>, String> {
        if let Some(r) = self.cache.get(&(src, dst)) {
            return Ok(r.clone());
        }
        let mut hops = Vec::new();
        match &self.layout {
            Layout::Cluster(c) => c.route(src, dst, &mut hops)?,
            Layout::Explicit(r) => {
                let (Endpoint::Named(a), Endpoint::Named(b)) = (src, dst) else {
                    unreachable!()
                };
                if a != b {
                    hops = r.routes.get(&(a, b)).cloned().ok_or_else(|| {
                        format!(
                            "no route from `{}` to `{}` is listed",
                            r.names[a as usize], r.names[b as usize]
                        )
                    })?;
                }
            }
        }
        let route = Arc::new(self.route_of_hops(hops));
        self.cache.insert((src, dst), route.clone());
        Ok(route)
    }
}

fn parse_cluster_endpoint(c: &ClusterLayout, name: &str) -> Result<Endpoint, String> {
    let bad = || {
        format!(
            "`{name}` is not an endpoint; expected node[N].host, node[N].gpu[I], node[N].nic[J] or node[N].cpu[C]"
        )
    };
    let mut parts = name.split('.');
    let node = indexed(parts.next().ok_or_else(bad)?, "node").ok_or_else(bad)?;
    if node >= c.nodes {
        return Err(format!(
            "`{name}`: node {node} does not exist (the platform has {} nodes)",
            c.nodes
        ));
    }
    let local = parts.next().ok_or_else(bad)?;
    if parts.next().is_some() {
        return Err(bad());
    }
    if local == "host" {
        return Ok(Endpoint::Host { node });
    }
    if let Some(cpu) = indexed(local, "cpu") {
        return if cpu < c.cpus {
            Ok(Endpoint::Host { node })
        } else {
            Err(format!(
                "`{name}`: CPU core {cpu} does not exist (a node has {} cores)",
                c.cpus
            ))
        };
    }
    if let Some(gpu) = indexed(local, "gpu") {
        return if gpu < c.gpus {
            Ok(Endpoint::Gpu { node, gpu })
        } else {
            Err(format!(
                "`{name}`: GPU {gpu} does not exist (a node has {} GPUs)",
                c.gpus
            ))
        };
    }
    if let Some(nic) = indexed(local, "nic") {
        return if nic < c.nics {
            Ok(Endpoint::Nic { node, nic })
        } else {
            Err(format!(
                "`{name}`: NIC {nic} does not exist (a node has {} NICs)",
                c.nics
            ))
        };
    }
    Err(bad())
}

/// `gpu[3]` -> 3 when the word is `gpu`.
fn indexed(text: &str, word: &str) -> Option<u32> {
    text.strip_prefix(word)?
        .strip_prefix('[')?
        .strip_suffix(']')?
        .parse()
        .ok()
}
