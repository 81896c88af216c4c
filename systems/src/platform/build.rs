//! From a platform description to the topology tables, checking every figure on the way.
//! Errors name the field path (`platform.node.pcie.bus: ...`).

use foldhash::HashMap;

use hetsim_schema::SimTime;
use hetsim_schema::scenario::{
    Cluster, Explicit, FatTreeSpec, LinkSpec, Network, NvLinkSpec, PlatformSpec, Sharing,
};
use hetsim_schema::units::Bandwidth;

use super::fattree::FatTree;
use super::topology::*;

/// Builds the tables of a platform.
pub fn topology(spec: &PlatformSpec) -> Result<Topology, String> {
    match spec {
        PlatformSpec::File(f) | PlatformSpec::Named(f) => {
            Err(format!("platform: the include `{f}` was not resolved"))
        }
        PlatformSpec::Cluster(c) => cluster(c),
        PlatformSpec::Explicit(e) => explicit(e),
        PlatformSpec::StarpuMachine(m) => explicit(&starpu_explicit(m)?),
    }
}

/// A StarPU machine's SimGrid platform file as links and routes listed by hand: endpoints are
/// its hosts (`RAM`, `CUDA0`, ...), every link shared by both directions (SimGrid's default).
pub fn starpu_explicit(m: &hetsim_schema::scenario::StarpuMachine) -> Result<Explicit, String> {
    use hetsim_schema::scenario::{NamedLink, RouteSpec};
    use hetsim_schema::starpu::platform;
    use hetsim_schema::units::Duration;
    let name = format!("bus/{}.platform.xml", m.hostname);
    let (file, text) = m
        .files
        .get(&name)
        .ok_or_else(|| format!("platform.StarpuMachine: {name} was not read"))?;
    let p = platform::parse(text).map_err(|e| format!("{file}: {e}"))?;
    let names = readable_link_names(&p);
    let id = |s: &str| names.get(s).cloned().unwrap_or_else(|| s.to_string());
    Ok(Explicit {
        links: p
            .links
            .iter()
            .map(|l| NamedLink {
                name: id(&l.id),
                bandwidth: Bandwidth(l.bandwidth),
                latency: Duration(SimTime::from_secs_saturating(l.latency)),
                sharing: Sharing::Shared,
            })
            .collect(),
        routes: p
            .routes
            .iter()
            .map(|r| RouteSpec {
                src: r.src.clone(),
                dst: r.dst.clone(),
                links: r.links.iter().map(|l| id(l)).collect(),
                symmetric: r.symmetrical,
            })
            .collect(),
    })
}

/// Names for a StarPU platform's links that say what they serve. hwloc names PCI links by
/// bus address (`PCI:0000:[00-07] through`, `PCI:0000:02:00.0 up`); hetsim names them by the
/// devices whose routes to `RAM` cross them, keeping the bridge's bus range where two bridges
/// could serve the same devices: `PCIe bridge [00-07] (CUDA0+CUDA1) through`, `PCIe CUDA0
/// up`. Other links keep their ids (`Host`, `RAM-CUDA0`). Any ':' left becomes '.', since
/// link references read ':' as a direction; a name that would be taken twice keeps its id.
fn readable_link_names(p: &hetsim_schema::starpu::platform::Platform) -> HashMap<String, String> {
    use std::collections::{BTreeMap, BTreeSet};
    let mut served: BTreeMap<&str, BTreeSet<&str>> = BTreeMap::new();
    for r in &p.routes {
        let device = match (r.src.as_str(), r.dst.as_str()) {
            ("RAM", d) | (d, "RAM") if d != "RAM" => d,
            _ => continue,
        };
        for l in &r.links {
            served.entry(l.as_str()).or_default().insert(device);
        }
    }
    let readable = |id: &str| -> Option<String> {
        let rest = id.strip_prefix("PCI:")?;
        let (address, side) = rest.rsplit_once(' ')?;
        let devices: Vec<&str> = served.get(id)?.iter().copied().collect();
        let devices = devices.join("+");
        Some(match address.find('[') {
            Some(at) => format!("PCIe bridge {} ({devices}) {side}", &address[at..]),
            None => format!("PCIe {devices} {side}"),
        })
    };
    let mut names: HashMap<String, String> = p
        .links
        .iter()
        .map(|l| {
            let name = readable(&l.id).unwrap_or_else(|| l.id.clone());
            (l.id.clone(), name.replace(':', "."))
        })
        .collect();
    let mut count: HashMap<String, usize> = HashMap::default();
    for n in names.values() {
        *count.entry(n.clone()).or_default() += 1;
    }
    for (id, name) in names.iter_mut() {
        if count[name.as_str()] > 1 {
            *name = id.replace(':', ".");
        }
    }
    names
}

fn positive(path: &str, bw: Bandwidth) -> Result<f64, String> {
    if bw.0.is_finite() && bw.0 > 0.0 {
        Ok(bw.0)
    } else {
        Err(format!(
            "{path}: expected a positive, finite bandwidth, got {} B/s",
            bw.0
        ))
    }
}

fn link(
    name: String,
    path: &str,
    bw: Bandwidth,
    latency: SimTime,
    sharing: Sharing,
) -> Result<LinkInfo, String> {
    Ok(LinkInfo {
        name,
        bandwidth: positive(path, bw)?,
        latency,
        sharing,
    })
}

fn from_spec(name: String, path: &str, s: &LinkSpec) -> Result<LinkInfo, String> {
    link(
        name,
        &format!("{path}.bandwidth"),
        s.bandwidth,
        s.latency.0,
        s.sharing,
    )
}

fn cluster(c: &Cluster) -> Result<Topology, String> {
    let n = &c.node;
    if c.nodes == 0 {
        return Err("platform.nodes: expected at least one node".into());
    }
    if n.nics == 0 && c.nodes > 1 && !matches!(c.network, Network::None) {
        return Err("platform.node.nics: nodes on a network need at least one NIC".into());
    }
    let (nvlink, nv_spec) = match &n.nvlink {
        None => (NvLayout::None, None),
        Some(NvLinkSpec::Pairs(s)) => (NvLayout::Pairs, Some(s)),
        Some(NvLinkSpec::Switch(s)) => (NvLayout::Switch, Some(s)),
    };
    let (fabric, tree_spec) = match &c.network {
        Network::None => (Fabric::None, None),
        Network::Star(_) => (Fabric::Star, None),
        Network::FatTree(ft) => (
            Fabric::FatTree {
                tree: fat_tree(ft, c.nodes, n.nics)?,
                first_link: 0,
                rails: ft.rails.then_some(ft.children[0]),
            },
            Some(ft),
        ),
    };
    if n.multicast && nvlink != NvLayout::Switch {
        return Err(
            "platform.node.multicast: NVLink multicast needs an NVSwitch (nvlink: Switch(...))"
                .into(),
        );
    }
    let mut layout = ClusterLayout {
        nodes: c.nodes,
        cpus: n.cpu_cores,
        gpus: n.gpus,
        nics: n.nics,
        nic_attach: n.nic.attach,
        nvlink,
        multicast: n.multicast,
        fabric,
    };
    let cable = |nic_path: &str| -> Result<(Bandwidth, SimTime, Sharing), String> {
        Ok(match &c.network {
            Network::Star(s) => (s.bandwidth, s.latency.0, s.sharing),
            Network::FatTree(ft) => (
                ft.bandwidth
                    .get(0)
                    .ok_or("platform.network.bandwidth: the list is empty")?,
                ft.latency.get(0).unwrap_or_default().0,
                ft.sharing,
            ),
            Network::None => (n.nic.bandwidth, SimTime::ZERO, Sharing::SplitDuplex),
        })
        .map_err(|e: String| format!("{e} ({nic_path})"))
    };
    let (cable_bw, cable_lat, cable_sharing) = cable("platform.network")?;
    let cable_path = match &c.network {
        Network::Star(_) => "platform.network.bandwidth",
        Network::FatTree(_) => "platform.network.bandwidth[0]",
        Network::None => "platform.node.nic.bandwidth",
    };
    let mut links = Vec::with_capacity((c.nodes * layout.block()) as usize);
    for node in 0..c.nodes {
        let p = |s: &str| format!("node[{node}].{s}");
        links.push(link(
            p("pcie"),
            "platform.node.pcie.bus",
            n.pcie.bus,
            SimTime::ZERO,
            Sharing::Shared,
        )?);
        for g in 0..n.gpus {
            links.push(link(
                p(&format!("gpu[{g}].up")),
                "platform.node.pcie.up",
                n.pcie.up,
                n.pcie.latency.0,
                Sharing::Shared,
            )?);
            links.push(link(
                p(&format!("gpu[{g}].down")),
                "platform.node.pcie.down",
                n.pcie.down,
                n.pcie.latency.0,
                Sharing::Shared,
            )?);
        }
        match (nvlink, nv_spec) {
            (NvLayout::Pairs, Some(s)) => {
                for i in 0..n.gpus {
                    for j in i + 1..n.gpus {
                        links.push(from_spec(
                            p(&format!("nvlink[{i}-{j}]")),
                            "platform.node.nvlink",
                            s,
                        )?);
                    }
                }
            }
            (NvLayout::Switch, Some(s)) => {
                for i in 0..n.gpus {
                    links.push(from_spec(
                        p(&format!("nvswitch.port[{i}]")),
                        "platform.node.nvlink",
                        s,
                    )?);
                }
            }
            _ => {}
        }
        for j in 0..n.nics {
            links.push(link(
                p(&format!("nic[{j}]")),
                "platform.node.nic.bandwidth",
                n.nic.bandwidth,
                n.nic.latency.0,
                Sharing::SplitDuplex,
            )?);
            links.push(link(
                p(&format!("nic[{j}].cable")),
                cable_path,
                cable_bw,
                cable_lat,
                cable_sharing,
            )?);
        }
    }
    debug_assert_eq!(links.len() as u32, layout.fabric_first_link());
    if let (
        Fabric::FatTree {
            tree, first_link, ..
        },
        Some(ft),
    ) = (&mut layout.fabric, tree_spec)
    {
        *first_link = links.len() as u32;
        for level in 1..tree.levels() {
            let path = format!("platform.network.bandwidth[{level}]");
            let bw = ft.bandwidth.get(level).ok_or(format!(
                "{path}: missing (one bandwidth per level, {} levels)",
                tree.levels()
            ))?;
            let lat = ft.latency.get(level).unwrap_or_default().0;
            for e in 0..tree.count[level] {
                for b in 0..tree.w[level + 1] {
                    links.push(link(
                        format!("ft.l{level}[{e}].up[{b}]"),
                        &path,
                        bw,
                        lat,
                        ft.sharing,
                    )?);
                }
            }
        }
    }
    Ok(Topology::new(links, Layout::Cluster(layout)))
}

/// Fat-tree shape from the spec: parents per switch level from the taper ratios; on a
/// rail-optimised tree every one of a node's `nics` NICs takes a level-0 place.
fn fat_tree(ft: &FatTreeSpec, nodes: u32, nics: u32) -> Result<FatTree, String> {
    if ft.children.is_empty() || ft.children.contains(&0) {
        return Err(
            "platform.network.children: expected one positive count per level, e.g. [18, 9, 5]"
                .into(),
        );
    }
    let h = ft.children.len();
    let mut parents = Vec::with_capacity(h - 1);
    for i in 0..h - 1 {
        let taper = ft.taper.get(i).ok_or(format!(
            "platform.network.taper: missing for level {}",
            i + 1
        ))?;
        if !(taper.is_finite() && taper > 0.0) {
            return Err(format!(
                "platform.network.taper: expected a positive ratio, got {taper}"
            ));
        }
        parents.push(((ft.children[i] as f64 / taper).round() as u64).max(1));
    }
    let children: Vec<u64> = ft.children.iter().map(|&c| c as u64).collect();
    let tree = FatTree::new(&children, &parents);
    let per_leaf = ft.children[0] as u64;
    let places = if ft.rails {
        (nodes as u64).div_ceil(per_leaf) * per_leaf * nics.max(1) as u64
    } else {
        nodes as u64
    };
    if places > tree.count[0] {
        let what = if ft.rails {
            format!(
                "{} nodes at most with {nics} rails",
                tree.count[0] / per_leaf / nics.max(1) as u64 * per_leaf
            )
        } else {
            format!("{} nodes at most", tree.count[0])
        };
        return Err(format!(
            "platform.nodes: {nodes} nodes do not fit a fat-tree with children {:?} ({what})",
            ft.children
        ));
    }
    Ok(tree)
}

fn explicit(e: &Explicit) -> Result<Topology, String> {
    let mut links = Vec::with_capacity(e.links.len());
    let mut seen = HashMap::default();
    for (i, l) in e.links.iter().enumerate() {
        if seen.insert(l.name.clone(), i).is_some() {
            return Err(format!(
                "platform.links[{i}].name: `{}` is used twice",
                l.name
            ));
        }
        links.push(link(
            l.name.clone(),
            &format!("platform.links[{i}].bandwidth"),
            l.bandwidth,
            l.latency.0,
            l.sharing,
        )?);
    }
    let mut topo = Topology::new(links, Layout::Explicit(ExplicitRoutes::default()));
    let mut routes = ExplicitRoutes::default();
    let id = |name: &str, names: &mut Vec<String>| match names.iter().position(|n| n == name) {
        Some(i) => i as u32,
        None => {
            names.push(name.to_string());
            (names.len() - 1) as u32
        }
    };
    for (i, r) in e.routes.iter().enumerate() {
        let hops = r
            .links
            .iter()
            .map(|h| topo.parse_hop(h))
            .collect::<Result<Vec<_>, _>>()
            .map_err(|m| format!("platform.routes[{i}].links: {m}"))?;
        let (a, b) = (id(&r.src, &mut routes.names), id(&r.dst, &mut routes.names));
        if r.symmetric {
            let back = hops.iter().rev().map(|h| Hop {
                link: h.link,
                dir: if h.dir == Dir::Up { Dir::Down } else { Dir::Up },
            });
            routes.routes.insert((b, a), back.collect());
        }
        routes.routes.insert((a, b), hops);
    }
    topo.layout = Layout::Explicit(routes);
    Ok(topo)
}

#[cfg(test)]
mod tests {
    use super::*;
    use hetsim_schema::load::from_ron;

    fn platform(text: &str) -> Result<Topology, String> {
        topology(&from_ron::<PlatformSpec>(text, "test", "platform").map_err(|e| e.to_string())?)
    }

    const TWO_NODES: &str = r#"Cluster(
        nodes: 2,
        node: NodeSpec(gpus: 2, nvlink: Pairs(bandwidth: "75GB/s", latency: "1us"),
                       pcie: PcieSpec(up: "12GB/s", down: "11GB/s", bus: "20GB/s", latency: "1us"),
                       nic: NicSpec(bandwidth: "12.5GB/s", latency: "500ns")),
        network: Star(bandwidth: "12.5GB/s", latency: "100ns"),
    )"#;

    fn names(t: &Topology, r: &Route) -> Vec<String> {
        r.hops
            .iter()
            .map(|h| format!("{}:{:?}", t.links[h.link as usize].name, h.dir))
            .collect()
    }

    #[test]
    fn pcie_nvlink_and_network_routes() {
        let mut t = platform(TWO_NODES).unwrap();
        let mut route = |a: &str, b: &str| {
            let (a, b) = (t.endpoint(a).unwrap(), t.endpoint(b).unwrap());
            let r = t.route(a, b).unwrap();
            (names(&t, &r), r.latency)
        };
        assert_eq!(
            route("node[0].host", "node[0].gpu[1]").0,
            ["node[0].pcie:Up", "node[0].gpu[1].up:Up"]
        );
        assert_eq!(
            route("node[0].gpu[1]", "node[0].gpu[0]").0,
            ["node[0].nvlink[0-1]:Down"]
        );
        let (hops, latency) = route("node[0].gpu[1]", "node[1].gpu[0]");
        assert_eq!(
            hops,
            [
                "node[0].gpu[1].down:Up",
                "node[0].pcie:Up",
                "node[0].nic[0]:Up",
                "node[0].nic[0].cable:Up",
                "node[1].nic[0].cable:Down",
                "node[1].nic[0]:Down",
                "node[1].pcie:Up",
                "node[1].gpu[0].up:Up"
            ]
        );
        // 1 us (PCIe down) + 500 ns + 100 ns + 100 ns + 500 ns + 1 us (PCIe up).
        assert_eq!(latency, SimTime::from_nanos(3200));
    }

    #[test]
    fn bad_platforms_name_the_field() {
        // Refused as it is read, with the field's full path (a rate above zero).
        let e = platform(&TWO_NODES.replace("\"20GB/s\"", "0")).unwrap_err();
        assert!(
            e.contains("field `platform.Cluster.node.pcie.bus`: expected a bandwidth above zero"),
            "{e}"
        );
        let t = platform(TWO_NODES).unwrap();
        assert!(
            t.endpoint("node[2].gpu[0]")
                .unwrap_err()
                .contains("node 2 does not exist")
        );
        assert!(t.endpoint("node[0].gpu[2]").unwrap_err().contains("GPU 2"));
        assert!(
            t.endpoint("node[0].tpu[0]")
                .unwrap_err()
                .contains("not an endpoint")
        );
        let mut alone = platform(
            &TWO_NODES.replace("Star(bandwidth: \"12.5GB/s\", latency: \"100ns\")", "None"),
        )
        .unwrap();
        let (a, b) = (
            alone.endpoint("node[0].host").unwrap(),
            alone.endpoint("node[1].host").unwrap(),
        );
        assert!(alone.route(a, b).unwrap_err().contains("no network"));
    }

    #[test]
    fn explicit_routes_and_their_errors() {
        let text = r#"Explicit(links: [NamedLink(name: "a", bandwidth: 1e9), NamedLink(name: "b", bandwidth: 2e9, sharing: SplitDuplex)],
                               routes: [RouteSpec(src: "x", dst: "y", links: ["a", "b:up"])])"#;
        let mut t = platform(text).unwrap();
        let (x, y) = (t.endpoint("x").unwrap(), t.endpoint("y").unwrap());
        let back = t.route(y, x).unwrap();
        assert_eq!(names(&t, &back), ["b:Down", "a:Down"]);
        assert!(t.endpoint("z").unwrap_err().contains("unknown endpoint"));
        let e = platform(&text.replace("\"b:up\"", "\"c\"")).unwrap_err();
        assert_eq!(e, "platform.routes[0].links: unknown link `c`");
    }

    /// A route crossing a capacity twice gets half of it alone, as in SimGrid (the bus files
    /// of StarPU machines route some GPU-GPU copies through `Host` twice); the two directions
    /// of a split-duplex link are two capacities.
    #[test]
    fn a_flow_alone_is_charged_once_per_crossing() {
        let text = r#"Explicit(links: [NamedLink(name: "a", bandwidth: 1e9), NamedLink(name: "b", bandwidth: 2e9, sharing: SplitDuplex),
                                      NamedLink(name: "f", bandwidth: 1e8, sharing: FatPipe)],
                               routes: [RouteSpec(src: "x", dst: "y", links: ["a", "b:up", "a"]),
                                        RouteSpec(src: "x", dst: "z", links: ["b:up", "b:down"]),
                                        RouteSpec(src: "y", dst: "z", links: ["b:up", "b:up", "f", "f"])])"#;
        let mut t = platform(text).unwrap();
        let (x, y, z) = (
            t.endpoint("x").unwrap(),
            t.endpoint("y").unwrap(),
            t.endpoint("z").unwrap(),
        );
        let xy = t.route(x, y).unwrap();
        assert_eq!(t.bottleneck(&xy), 5e8);
        let xz = t.route(x, z).unwrap();
        assert_eq!(t.bottleneck(&xz), 2e9);
        let yz = t.route(y, z).unwrap();
        assert_eq!(t.bottleneck(&yz), 1e8, "a fat pipe is never shared");
    }

    #[test]
    fn lassen_like_fat_tree_sizes() {
        let text = r#"Cluster(nodes: 810, node: NodeSpec(gpus: 4),
            network: FatTree(children: [18, 9, 5], taper: 1.5, bandwidth: "12.5GB/s", latency: "100ns"))"#;
        let mut t = platform(text).unwrap();
        let block = 1 + 8 + 2; // PCIe bus, 4 x (up, down), NIC and cable
        assert_eq!(t.links.len(), 810 * block + 540 + 360);
        let (a, b) = (
            t.endpoint("node[0].gpu[0]").unwrap(),
            t.endpoint("node[809].gpu[3]").unwrap(),
        );
        // PCIe down, bus, NIC, cable, 4 tree links, cable, NIC, bus, PCIe up.
        assert_eq!(t.route(a, b).unwrap().hops.len(), 12);
        let e = platform(&text.replace("810", "811")).unwrap_err();
        assert!(e.contains("do not fit"), "{e}");
    }

    #[test]
    fn starpu_pci_links_are_named_by_the_devices_they_serve() {
        use hetsim_schema::starpu::platform::{Link, Platform, Route};
        let link = |id: &str| Link {
            id: id.into(),
            bandwidth: 1e9,
            latency: 0.0,
        };
        let route = |src: &str, dst: &str, links: &[&str]| Route {
            src: src.into(),
            dst: dst.into(),
            links: links.iter().map(|l| l.to_string()).collect(),
            symmetrical: false,
        };
        // attila's shape: a root bridge above two GPUs, each behind its own bridge; a
        // third GPU behind two bridges; one bridge no route crosses.
        let p = Platform {
            version: 3,
            hosts: Vec::new(),
            links: [
                "Host",
                "PCI:0000:[00-07] through",
                "PCI:0000:[02-02] up",
                "PCI:0000:02:00.0 up",
                "PCI:0000:[03-03] up",
                "PCI:0000:[80-84] up",
                "PCI:0000:[84-84] up",
                "PCI:0000:[90-91] up",
            ]
            .map(link)
            .to_vec(),
            routes: vec![
                route(
                    "CUDA0",
                    "RAM",
                    &[
                        "PCI:0000:02:00.0 up",
                        "PCI:0000:[02-02] up",
                        "PCI:0000:[00-07] through",
                        "Host",
                    ],
                ),
                route(
                    "CUDA1",
                    "RAM",
                    &["PCI:0000:[03-03] up", "PCI:0000:[00-07] through", "Host"],
                ),
                route(
                    "RAM",
                    "CUDA2",
                    &["Host", "PCI:0000:[80-84] up", "PCI:0000:[84-84] up"],
                ),
                route("CUDA0", "CUDA1", &["PCI:0000:[90-91] up"]),
            ],
        };
        let names = readable_link_names(&p);
        let name = |id: &str| names[id].as_str();
        assert_eq!(name("Host"), "Host");
        assert_eq!(
            name("PCI:0000:[00-07] through"),
            "PCIe bridge [00-07] (CUDA0+CUDA1) through"
        );
        assert_eq!(
            name("PCI:0000:[02-02] up"),
            "PCIe bridge [02-02] (CUDA0) up"
        );
        assert_eq!(name("PCI:0000:02:00.0 up"), "PCIe CUDA0 up");
        // Two bridges serve CUDA2 alone: their bus ranges tell them apart.
        assert_eq!(
            name("PCI:0000:[80-84] up"),
            "PCIe bridge [80-84] (CUDA2) up"
        );
        assert_eq!(
            name("PCI:0000:[84-84] up"),
            "PCIe bridge [84-84] (CUDA2) up"
        );
        // Crossed only between GPUs: its id, without the ':' that reads as a direction.
        assert_eq!(name("PCI:0000:[90-91] up"), "PCI.0000.[90-91] up");
    }

    /// 4 nodes of 2 GPUs and 2 NICs on a rail-optimised tree: 2 nodes per leaf, so leaves
    /// are (group 0, rail 0), (group 0, rail 1), (group 1, rail 0), (group 1, rail 1).
    const RAILS: &str = r#"Cluster(
        nodes: 4,
        node: NodeSpec(gpus: 2, nvlink: Switch(bandwidth: "100GB/s"), multicast: true, nics: 2,
                       nic: NicSpec(bandwidth: "10GB/s", latency: "0us", attach: GpuSwitch)),
        network: FatTree(children: [2, 4], bandwidth: ["10GB/s", "1GB/s"], rails: true),
    )"#;

    #[test]
    fn a_rail_optimised_tree_keeps_a_rail_under_its_leaf_and_crosses_rails_at_the_spine() {
        let mut t = platform(RAILS).unwrap();
        let mut route = |a: &str, b: &str| {
            let (a, b) = (t.endpoint(a).unwrap(), t.endpoint(b).unwrap());
            let r = t.route(a, b).unwrap();
            names(&t, &r)
        };
        // Same rail, same group: NIC 1 of node 0 to NIC 1 of node 1 under one leaf.
        let same = route("node[0].gpu[1]", "node[1].gpu[1]");
        assert!(same.iter().all(|h| !h.starts_with("ft.")), "{same:?}");
        // Across rails: up to a spine and down to the other rail's leaf.
        let cross = route("node[0].gpu[0]", "node[1].gpu[1]");
        assert_eq!(
            cross.iter().filter(|h| h.starts_with("ft.l1")).count(),
            2,
            "{cross:?}"
        );
        // Same rail, other group: through a spine too.
        let far = route("node[0].gpu[0]", "node[2].gpu[0]");
        assert_eq!(
            far.iter().filter(|h| h.starts_with("ft.l1")).count(),
            2,
            "{far:?}"
        );
        // Too many nodes for the rails' places: 4 leaves of 2 hold 2 groups of 2 nodes.
        let five = RAILS.replace("nodes: 4", "nodes: 5");
        let e = platform(&five).unwrap_err();
        assert!(e.contains("4 nodes at most with 2 rails"), "{e}");
    }

    #[test]
    fn pxn_relays_through_the_gpu_on_the_destinations_rail() {
        let t = platform(RAILS).unwrap();
        let gpu = |node, gpu| Endpoint::Gpu { node, gpu };
        assert_eq!(t.rail_relay(gpu(0, 0), gpu(1, 1)), Some(gpu(0, 1)));
        assert_eq!(t.rail_relay(gpu(0, 1), gpu(1, 1)), None, "same rail");
        assert_eq!(t.rail_relay(gpu(0, 0), gpu(0, 1)), None, "same node");
        // NICs on the host's root complex are as far from every GPU: no relay.
        let host = platform(&RAILS.replace("attach: GpuSwitch", "attach: Host")).unwrap();
        assert_eq!(host.rail_relay(gpu(0, 0), gpu(1, 1)), None);
    }

    #[test]
    fn multicast_needs_an_nvswitch() {
        let e = platform(&TWO_NODES.replace("nvlink: Pairs", "multicast: true, nvlink: Pairs"))
            .unwrap_err();
        assert!(e.contains("platform.node.multicast"), "{e}");
    }
}
