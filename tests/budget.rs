//! The memory budget's counts (`schema/src/budget.rs`) against what a run really builds, on
//! small cases: every estimated quantity is counted the way the builder counts it.

use hetsim::schema::budget;
use hetsim::schema::load::load_scenario;
use hetsim::schema::scenario::{Network, PlatformSpec};
use hetsim::systems::platform::Topology;
use hetsim::{RunOptions, build_app};

/// The links of the platform `scenario` builds (with `set` applied).
fn built_links(scenario: &str, set: &[&str]) -> (hetsim::schema::scenario::Scenario, Vec<String>) {
    let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join(scenario);
    let set: Vec<String> = set.iter().map(|s| s.to_string()).collect();
    let s = load_scenario(&path, &set).unwrap();
    let mut app = build_app(&s, &RunOptions::default()).unwrap();
    app.world_mut().run_schedule(hetsim::engine::SimStartup);
    let topo = app.world().resource::<Topology>();
    let names = topo.links.iter().map(|l| l.name.clone()).collect();
    (s, names)
}

#[test]
fn fat_tree_switch_links_are_counted_as_the_builder_makes_them() {
    // Lassen's three-level tree with its taper, and a two-level one of wide arity.
    for (scenario, set) in [
        ("scenarios/mpi-trace.ron", vec![]),
        (
            "scenarios/studies/nccl-allreduce.ron",
            vec![
                "platform.network.FatTree.children=[12, 30]",
                "platform.nodes=2",
            ],
        ),
    ] {
        let (s, names) = built_links(scenario, &set);
        let PlatformSpec::Cluster(c) = &s.platform else {
            panic!("a cluster")
        };
        let Network::FatTree(ft) = &c.network else {
            panic!("a fat-tree")
        };
        let taper = |i| ft.taper.get(i).unwrap_or(1.0);
        let above_leaves = names
            .iter()
            .filter(|n| n.starts_with("ft.l") && !n.starts_with("ft.l0["))
            .count();
        assert_eq!(
            budget::fat_tree_links(&ft.children, taper),
            above_leaves as f64,
            "{scenario}"
        );
    }
}

#[test]
fn nvlink_pairs_are_counted_as_the_builder_makes_them() {
    // Lassen: NVLink between every pair of its 4 GPUs, on each node.
    let (s, names) = built_links("scenarios/mpi-trace.ron", &["platform.nodes=3"]);
    let PlatformSpec::Cluster(c) = &s.platform else {
        panic!("a cluster")
    };
    let pairs = names.iter().filter(|n| n.contains(".nvlink[")).count() as f64;
    let g = c.node.gpus as f64;
    assert_eq!(pairs, c.nodes as f64 * g * (g - 1.0) / 2.0);
    // And the estimate refuses a node of 100,000 GPUs so wired, naming the field.
    let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("scenarios/mpi-trace.ron");
    let set = [
        "platform.nodes=1".to_string(),
        "platform.node.gpus=100000".to_string(),
    ];
    let err = load_scenario(&path, &set).unwrap_err();
    assert!(err.to_string().contains("platform.node.gpus"), "{err}");
    assert!(err.to_string().contains("NVLink pairs"), "{err}");
}

#[test]
fn a_cuda_program_counts_its_stream_items_graph_launches_included() {
    use hetsim::schema::cuda::CudaOp;
    let text = r#"[
        Kernel(stream: 0, time: "1us"),
        Capture(graph: "g", ops: [Kernel(stream: 0, time: "1us"), Kernel(stream: 0, time: "1us")]),
        Launch(stream: 0, graph: "g", times: 5),
        Nccl(op: AllReduce, bytes: "1MiB", stream: 1),
        DeviceSync,
    ]"#;
    let ron = ron::Options::default().with_default_extension(
        ron::extensions::Extensions::UNWRAP_VARIANT_NEWTYPES
            | ron::extensions::Extensions::IMPLICIT_SOME,
    );
    let program: Vec<CudaOp> = ron.from_str(text).unwrap();
    // The kernel, 5 launches of 2 kernels, the sync: 12; and one NCCL call.
    let work = budget::cuda_items(&program);
    assert_eq!((work.items, work.collectives), (12.0, 1.0));
}
