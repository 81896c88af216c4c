//! Chakra traces run as a workload: ASTRA-sim's microbenchmarks against hetsim's own NCCL
//! calls, the send/recv ring against its analytical time, the real training step on one GPU
//! against a list schedule computed here, and traces written here (groups, copies, scales,
//! errors). The reference traces are read in place from ../shared/reference/chakra/ and the
//! tests that need them say they skipped when it is absent.

use std::path::{Path, PathBuf};

use chakra::CollectiveCommType as C;
use chakra::write::Trace;
use hetsim::schema::load::parse_scenario;
use hetsim::schema::scenario::{OutputSpec, Scenario};
use hetsim::{Error, RunOptions, simulate_report};

fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

fn reference() -> Option<PathBuf> {
    let r = root().join("../shared/reference/chakra");
    if r.is_dir() {
        Some(r)
    } else {
        eprintln!("skipped: ../shared/reference/chakra is not there");
        None
    }
}

fn platform(name: &str) -> String {
    root()
        .join("scenarios/platforms")
        .join(name)
        .display()
        .to_string()
}

fn scenario(platform: &str, workload: &str, sets: &[String]) -> Result<Scenario, Error> {
    let text = format!(
        r#"Scenario(name: "chakra-test", platform: File({platform:?}), workload: {workload})"#
    );
    let mut s = parse_scenario(&text, "test", Path::new("."), sets)
        .map_err(|e| Error::Input(e.to_string()))?;
    s.output = OutputSpec::tables_only();
    Ok(s)
}

fn run(s: &Scenario) -> Result<hetsim::output::Report, Error> {
    let opts = RunOptions {
        disable: Vec::new(),
        progress: false,
        ..Default::default()
    };
    simulate_report(s, &opts)
}

fn close(a: f64, b: f64) -> bool {
    (a - b).abs() <= 1e-12 + 1e-9 * b.abs()
}

/// A folder of its own under the system's temporary folder, removed when dropped.
fn scratch(name: &str) -> tempfile::TempDir {
    tempfile::Builder::new()
        .prefix(&format!("hetsim-chakra-{name}-"))
        .tempdir()
        .unwrap()
}

#[test]
fn microbenchmarks_take_exactly_what_hetsims_own_nccl_call_takes() {
    let Some(r) = reference() else { return };
    for (dir, op) in [
        ("all_reduce", "AllReduce"),
        ("all_gather", "AllGather"),
        ("reduce_scatter", "ReduceScatter"),
        ("all_to_all", "AllToAll"),
    ] {
        let files = r.join(format!(
            "astra-sim-examples/workload/microbenchmarks/{dir}/8npus_1MB/{dir}.{{rank}}.et"
        ));
        let et = scenario(
            &platform("dgx-h100.ron"),
            &format!("Chakra(files: {:?})", files.display().to_string()),
            &[],
        )
        .unwrap();
        let et = run(&et).unwrap();
        let ours = scenario(
            &platform("dgx-h100.ron"),
            &format!(r#"Cuda(program: [Nccl(op: {op}, bytes: "1MiB")])"#),
            &[],
        )
        .unwrap();
        let ours = run(&ours).unwrap();
        let (_, a) = &et.chakra.as_ref().unwrap().collectives[0];
        let b = &ours.cuda.as_ref().unwrap().collectives[0];
        assert_eq!(
            (a.ranks, &a.algo, &a.proto),
            (8, &b.algo, &b.proto),
            "{dir}"
        );
        assert_eq!(a.bytes, 1048576.0, "{dir}");
        assert!(
            close(a.end_s - a.start_s, b.end_s - b.start_s),
            "{dir}: {} s from the trace, {} s from hetsim's call",
            a.end_s - a.start_s,
            b.end_s - b.start_s
        );
        // Nothing else in the trace: the step is the collective.
        assert!(close(
            et.summary["chakra"]["step_time_s"].as_f64().unwrap(),
            a.end_s
        ));
    }
}

#[test]
fn the_send_recv_ring_takes_the_rings_analytical_time() {
    let Some(r) = reference() else { return };
    let files = r.join(
        "astra-sim-examples/system/custom_collectives/custom_ring_allreduce_8npus_1MB/custom_allreduce.{rank}.et",
    );
    let s = scenario(
        &platform("dgx-h100.ron"),
        &format!("Chakra(files: {:?})", files.display().to_string()),
        &[],
    )
    .unwrap();
    let rep = run(&s).unwrap();
    // Each rank runs its 35 nodes in one chain: 14 messages of 128 KiB to its successor, each
    // received from its predecessor at the moment its own arrives (the ring is symmetric and
    // every GPU has its own NVSwitch port: nothing shares a link), and 7 reductions of 7 us.
    // A message: NCCL 2.30's point-to-point latency (tuning.cc: baseLat ring/Simple 8.4 us +
    // hwLat NVLink ring/Simple 3.4 us; Simple above NCCL_P2P_LL_THRESHOLD = 16 KiB), then
    // 131,072 B at 80 % of NVLink 4's 450 GB/s per direction (dgx-h100.ron, nvlink_efficiency).
    let message = 8.4e-6 + 3.4e-6 + 131072.0 / (0.8 * 450e9);
    let expected = 14.0 * message + 7.0 * 7e-6;
    let c = &rep.summary["chakra"];
    let step = c["step_time_s"].as_f64().unwrap();
    assert!(close(step, expected), "{step} s, expected {expected} s");
    assert_eq!(c["messages"], 8 * 14);
    assert!(close(c["kernel_time_s"]["max"].as_f64().unwrap(), 49e-6));
    // Nothing computes while a message is in flight: all of it is exposed.
    assert!(close(
        c["exposed_comm_s"]["mean"].as_f64().unwrap(),
        14.0 * message
    ));
}

/// The step of one rank computed here, independently of the plugin: nodes by id, ready when
/// their data dependencies are done; one CPU operator and one GPU kernel at a time, each the
/// lowest ready id; collectives and everything else take no time (one GPU: communication is
/// free). Times in integer microseconds, so the answer is exact.
fn list_schedule(et: &chakra::EtFile) -> u64 {
    use std::collections::{BTreeSet, HashMap};
    let mut nodes: Vec<&chakra::Node> = et.nodes.iter().collect();
    nodes.sort_by_key(|n| n.id);
    let index: HashMap<u64, usize> = nodes.iter().enumerate().map(|(i, n)| (n.id, i)).collect();
    let mut left: Vec<usize> = nodes.iter().map(|n| n.data_deps.len()).collect();
    let mut children = vec![Vec::new(); nodes.len()];
    for (i, n) in nodes.iter().enumerate() {
        for d in &n.data_deps {
            children[index[d]].push(i);
        }
    }
    // 0: CPU, 1: GPU, 2: free.
    let resource = |n: &chakra::Node| match n.kind {
        Ok(chakra::NodeType::CompNode) if n.is_cpu_op() => 0,
        Ok(chakra::NodeType::CompNode) => 1,
        Ok(chakra::NodeType::CommCollNode) if n.comm_type() == Ok(None) => 0,
        _ => 2,
    };
    let mut ready: [BTreeSet<usize>; 3] = Default::default();
    let mut running: [Option<(u64, usize)>; 2] = [None, None];
    let mut now = 0;
    let mut done = 0;
    for (i, n) in nodes.iter().enumerate() {
        if left[i] == 0 {
            ready[resource(n)].insert(i);
        }
    }
    let mut end = 0;
    while done < nodes.len() {
        let mut finished = Vec::new();
        // Free nodes end at once.
        while let Some(i) = ready[2].pop_first() {
            finished.push(i);
        }
        for r in 0..2 {
            if running[r].is_none()
                && let Some(i) = ready[r].pop_first()
            {
                running[r] = Some((now + nodes[i].duration_micros, i));
            }
        }
        if finished.is_empty() {
            let next = running.iter().flatten().map(|&(t, _)| t).min().unwrap();
            now = next;
            for slot in running.iter_mut() {
                if let Some((t, i)) = *slot
                    && t == now
                {
                    finished.push(i);
                    *slot = None;
                }
            }
        }
        for i in finished {
            done += 1;
            end = end.max(now);
            for &c in &children[i] {
                left[c] -= 1;
                if left[c] == 0 {
                    ready[resource(nodes[c])].insert(c);
                }
            }
        }
    }
    end
}

#[test]
fn the_real_step_on_one_gpu_is_its_list_schedule_under_the_resource_rule() {
    let Some(r) = reference() else { return };
    let file = r.join("real/chakra.0.et.gz");
    let et = chakra::EtFile::read(&file).unwrap();
    let expected = list_schedule(&et);
    let s = scenario(
        &platform("dgx-h100.ron"),
        &format!("Chakra(files: {:?}, ranks: 1)", file.display().to_string()),
        &[],
    )
    .unwrap();
    let rep = run(&s).unwrap();
    let c = &rep.summary["chakra"];
    let step = c["step_time_s"].as_f64().unwrap();
    assert!(
        close(step, expected as f64 * 1e-6),
        "{step} s against {expected} us"
    );
    // Every kernel and CPU operator ran once: the trace's totals (its README: 292,828 us of
    // kernels; 50,941 us of CPU operators and 1,311 us of CPU-side collectives).
    assert!(close(c["kernel_time_s"]["max"].as_f64().unwrap(), 0.292828));
    assert!(close(
        c["cpu_time_s"]["max"].as_f64().unwrap(),
        0.050941 + 0.001311
    ));
    assert_eq!(c["collectives"], 7);
    // Attributes the rules do not read are counted: every node carries a `tid`.
    assert_eq!(c["ignored_attributes"]["tid"], 3664);
    assert_eq!(c["skipped_nodes"], serde_json::json!({}));
    // The kernels run one at a time: the step is at least their sum (which is longer than
    // the longest path of data_deps, 46,140 us).
    assert!(step >= 0.292828);
}

/// Writes `traces` (one per rank) as NAME.{rank}.et in a scratch folder; the folder (kept
/// while it lives) and the pattern.
fn write_ranks(name: &str, traces: &[Trace]) -> (tempfile::TempDir, String) {
    let dir = scratch(name);
    for (r, t) in traces.iter().enumerate() {
        t.write(&dir.path().join(format!("t.{r}.et"))).unwrap();
    }
    let pattern = dir.path().join("t.{rank}.et").display().to_string();
    (dir, pattern)
}

#[test]
fn compute_scale_divides_kernel_times_and_leaves_cpu_operators() {
    let mut t = Trace::new("0.0.4");
    let c = t.cpu("launch", &[], 30);
    t.kernel("k", &[c], 300);
    let (_dir, files) = write_ranks("scale", &[t]);
    for (scale, expected) in [(1.0, 330e-6), (1.5, 230e-6)] {
        let s = scenario(
            &platform("dgx-h100.ron"),
            &format!("Chakra(files: {files:?}, ranks: 1, compute_scale: {scale})"),
            &[],
        )
        .unwrap();
        let step = run(&s).unwrap().summary["chakra"]["step_time_s"]
            .as_f64()
            .unwrap();
        assert!(close(step, expected), "scale {scale}: {step}");
    }
}

#[test]
fn process_groups_from_a_group_file_run_their_own_collectives() {
    // Ranks 0-1 and 2-3 each all-reduce 1 MiB in their own group, as two NCCL communicators
    // of two GPUs: each takes what a 2-GPU NCCL all-reduce takes, at the same time.
    let traces: Vec<Trace> = (0..4)
        .map(|r| {
            let mut t = Trace::new("0.0.4");
            let pg = if r < 2 { "0" } else { "1" };
            t.collective("ar", &[], C::AllReduce, 1 << 20, Some(pg));
            t
        })
        .collect();
    let (_dir, files) = write_ranks("groups", &traces);
    let groups_dir = scratch("groups-file");
    let groups = groups_dir.path().join("groups.json");
    std::fs::write(&groups, r#"{"0": [0, 1], "1": [2, 3]}"#).unwrap();
    let s = scenario(
        &platform("dgx-h100.ron"),
        &format!(
            "Chakra(files: {files:?}, ranks: 4, comm_groups: {:?})",
            groups.display().to_string()
        ),
        &[],
    )
    .unwrap();
    let rep = run(&s).unwrap();
    let colls = &rep.chakra.as_ref().unwrap().collectives;
    assert_eq!(colls.len(), 2);
    let pair = scenario(
        &platform("dgx-h100.ron"),
        r#"Cuda(gpus: 2, program: [Nccl(op: AllReduce, bytes: "1MiB")])"#,
        &[],
    )
    .unwrap();
    let pair = run(&pair).unwrap();
    let b = &pair.cuda.as_ref().unwrap().collectives[0];
    let mut names: Vec<&str> = colls.iter().map(|(g, _)| g.as_str()).collect();
    names.sort();
    assert_eq!(names, vec!["0", "1"]);
    for (_, a) in colls {
        assert_eq!(a.ranks, 2);
        assert!(close(a.end_s - a.start_s, b.end_s - b.start_s));
        assert_eq!(a.start_s, 0.0);
    }
    // A group the file does not define is an input error naming it.
    let mut t = Trace::new("0.0.4");
    t.collective("ar", &[], C::AllReduce, 64, Some("tp"));
    let (_dir, files) = write_ranks("groups-missing", &[t]);
    let groups_dir = scratch("groups-file-one");
    let groups = groups_dir.path().join("groups.json");
    std::fs::write(&groups, r#"{"0": [0]}"#).unwrap();
    let s = scenario(
        &platform("dgx-h100.ron"),
        &format!(
            "Chakra(files: {files:?}, ranks: 1, comm_groups: {:?})",
            groups.display().to_string()
        ),
        &[],
    )
    .unwrap();
    let e = run(&s).unwrap_err().to_string();
    assert!(e.contains("process group \"tp\""), "{e}");
}

#[test]
fn a_memory_load_is_a_host_to_device_copy_over_pcie() {
    let mut t = Trace::new("0.0.4");
    t.node(
        "load",
        chakra::NodeType::MemLoadNode,
        &[],
        0,
        vec![chakra::write::attr(
            "tensor_size",
            chakra::proto::Value::Int64Val(54_800_000),
        )],
    );
    let (_dir, files) = write_ranks("copy", &[t]);
    let s = scenario(
        &platform("dgx-h100.ron"),
        &format!("Chakra(files: {files:?}, ranks: 1)"),
        &[],
    )
    .unwrap();
    let rep = run(&s).unwrap();
    // 54.8 MB at PCIe Gen5's 54.8 GB/s host-to-device (dgx-h100.ron), after the route's
    // latency: 1 ms and a little.
    let step = rep.summary["chakra"]["step_time_s"].as_f64().unwrap();
    assert!(step > 1e-3 && step < 1.01e-3, "{step}");
    assert_eq!(rep.flows.len(), 1);
    assert_eq!(rep.flows[0].src, "node[0].host");
}

#[test]
fn broken_workloads_are_errors_that_say_what_and_where() {
    let one = |t: Trace, name: &str, ranks: u32| {
        let (_dir, files) = write_ranks(name, &[t]);
        let s = scenario(
            &platform("dgx-h100.ron"),
            &format!("Chakra(files: {files:?}, ranks: {ranks})"),
            &[],
        )
        .unwrap();
        run(&s).unwrap_err()
    };
    // A receive no send delivers: the run cannot progress, and says who waits for what.
    let mut t = Trace::new("0.0.4");
    t.p2p("r", &[], false, 0, 64, 7);
    let e = one(t, "stuck", 1).to_string();
    assert!(
        e.contains("rank[0] waits for a message from rank 0 with tag 7"),
        "{e}"
    );
    // A peer that is not a rank: the file, the node.
    let mut t = Trace::new("0.0.4");
    t.p2p("s", &[], true, 5, 64, 0);
    let e = one(t, "peer", 2);
    assert_eq!(e.exit_code(), 2);
    let e = e.to_string();
    assert!(
        e.contains("t.0.et, node 0") && e.contains("comm_dst = 5: not a rank"),
        "{e}"
    );
    // Members that disagree on a collective.
    let traces: Vec<Trace> = [64, 128]
        .iter()
        .map(|&b| {
            let mut t = Trace::new("0.0.4");
            t.collective("ar", &[], C::AllReduce, b, None);
            t
        })
        .collect();
    let (_dir, files) = write_ranks("mismatch", &traces);
    let s = scenario(
        &platform("dgx-h100.ron"),
        &format!("Chakra(files: {files:?}, ranks: 2)"),
        &[],
    )
    .unwrap();
    let e = run(&s).unwrap_err().to_string();
    assert!(e.contains("collective 0 of process group \"all\""), "{e}");
    // More ranks than GPUs, a scale of zero, a missing file: input errors naming the field.
    let mut t = Trace::new("0.0.4");
    t.kernel("k", &[], 1);
    let (_dir, files) = write_ranks("fields", &[t]);
    let e = scenario(
        &platform("dgx-h100.ron"),
        &format!("Chakra(files: {files:?}, ranks: 9)"),
        &[],
    )
    .and_then(|s| run(&s))
    .unwrap_err()
    .to_string();
    assert!(e.contains("workload.Chakra.ranks: expected 1 to 8"), "{e}");
    let e = scenario(
        &platform("dgx-h100.ron"),
        &format!("Chakra(files: {files:?}, compute_scale: 0)"),
        &[],
    )
    .unwrap_err()
    .to_string();
    assert!(e.contains("workload.Chakra.compute_scale"), "{e}");
    let e = scenario(
        &platform("dgx-h100.ron"),
        r#"Chakra(files: "nowhere.{rank}.et")"#,
        &[],
    )
    .unwrap_err()
    .to_string();
    assert!(
        e.contains("workload.Chakra.files") && e.contains("nowhere.0.et"),
        "{e}"
    );
}
