//! NCCL collectives and CUDA streams, checked against alpha-beta formulas, nccl-tests'
//! definitions and published nccl-tests figures.

mod common;

use hetsim::nccltests;
use hetsim::schema::cuda::{Algo, Coll, Proto};
use hetsim::schema::load::parse_scenario;
use hetsim::{RunOptions, simulate};

/// One node of `gpus` GPUs on an NVSwitch of 20 GB/s per port and direction, PCIe 10 GB/s.
fn node(gpus: u32) -> String {
    format!(
        r#"Cluster(nodes: 1, node: NodeSpec(gpus: {gpus},
            gpu: GpuSpec(name: "A100", memory: "40GiB", speed: "10TFlop/s", memory_bandwidth: "1000GB/s"),
            pcie: PcieSpec(up: "10GB/s", down: "10GB/s", bus: "100GB/s", latency: "0us"),
            nvlink: Switch(bandwidth: "20GB/s")), network: None)"#
    )
}

use common::{assert_close as close, nccl_sweep as sweep, run_cuda as run};

#[test]
fn ring_allreduce_takes_the_alpha_beta_time() {
    // Ring AllReduce of S bytes on n GPUs, one channel of bottleneck bandwidth B:
    // t = 2(n-1)/n x S/B + NCCL's latency, base 8.4 us + 2(n-1) hops x 3.4 us (NVLink, Simple,
    // NCCL 2.30 tuning.cc). n = 4, S = 1 GiB, B = 20 GB/s (efficiency 1).
    let (n, s, b) = (4.0, 1073741824.0, 20e9);
    let cuda = format!(
        r#"launch_overhead: "0us", nccl: NcclSpec(channels: 1, algo: Ring, proto: Simple, nvlink_efficiency: 1.0),
           program: [Nccl(op: AllReduce, bytes: {s})]"#
    );
    let (report, end) = run(&node(4), &cuda).unwrap();
    let want = 2.0 * (n - 1.0) / n * s / b + (8.4 + 2.0 * (n - 1.0) * 3.4) * 1e-6;
    close(end, want, 1e-9);
    assert_eq!(report.collectives.len(), 1);
    assert_eq!(
        (
            report.collectives[0].algo.as_str(),
            report.collectives[0].proto.as_str()
        ),
        ("ring", "Simple")
    );
}

#[test]
fn channels_split_the_bytes_and_share_the_links() {
    // Two channels on the same ports: each carries half the bytes at half the bandwidth,
    // so the time is that of one channel (the per-channel cap, 40 GB/s, does not bind).
    let run_with = |ch: u32| {
        let cuda = format!(
            r#"launch_overhead: "0us", nccl: NcclSpec(channels: {ch}, algo: Ring, proto: Simple, nvlink_efficiency: 1.0),
               program: [Nccl(op: AllGather, bytes: "1GiB")]"#
        );
        run(&node(4), &cuda).unwrap().1
    };
    // AllGather latency: 8.4 + (n-1) x 3.4 us; bytes per edge (n-1)/n x S.
    let want = 0.75 * 1073741824.0 / 20e9 + (8.4 + 3.0 * 3.4) * 1e-6;
    close(run_with(1), want, 1e-9);
    close(run_with(2), want, 1e-9);
}

#[test]
fn busbw_tends_to_the_link_bandwidth_times_the_protocol_efficiency() {
    // Large AllReduce, one channel, 4 GPUs, 20 GB/s ports at efficiency 0.8 (16 GB/s of data):
    // busbw -> 16 GB/s x the protocol's share of data on the wire (LL 1/2, LL128 120/128,
    // Simple 1). The table's bytes include latency, so allow 1 %.
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path();
    std::fs::write(dir.join("node4.ron"), node(4)).unwrap();
    for (proto, eff) in [
        (Proto::LL, 0.5),
        (Proto::LL128, 120.0 / 128.0),
        (Proto::Simple, 1.0),
    ] {
        let mut o = sweep(Coll::AllReduce, "x", 4, &[4.0 * 1073741824.0]);
        o.platform = dir.join("node4.ron");
        o.protos = vec![proto];
        o.algos = vec![Algo::Ring];
        o.channels = Some(1);
        let rows = nccltests::run(&o).unwrap();
        close(rows[0].busbw, 16.0 * eff, 0.01);
    }
}

#[test]
fn nccl_tests_bandwidths_follow_the_nccl_tests_formulas() {
    // doc/PERFORMANCE.md: algbw = S / t; busbw = algbw x 2(n-1)/n (AllReduce), (n-1)/n
    // (AllGather, ReduceScatter, AllToAll), 1 (Broadcast, Reduce, SendRecv). n = 8.
    for (op, factor) in [
        (Coll::AllReduce, 14.0 / 8.0),
        (Coll::AllGather, 7.0 / 8.0),
        (Coll::ReduceScatter, 7.0 / 8.0),
        (Coll::AllToAll, 7.0 / 8.0),
        (Coll::Broadcast, 1.0),
        (Coll::Reduce, 1.0),
        (Coll::SendRecv, 1.0),
    ] {
        let rows = nccltests::run(&sweep(op, "dgx-a100.ron", 8, &[1e6, 64e6])).unwrap();
        for r in rows {
            close(r.algbw, r.bytes / 1e9 / (r.time_us * 1e-6), 1e-12);
            close(r.busbw, r.algbw * factor, 1e-12);
        }
    }
    // Per-rank counts of AllGather are rounded down to 16 bytes: 1,000,000 B on 8 GPUs is
    // 125,000 B per rank = 7812.5 x 16, so 124,992 B per rank, 999,936 B in all.
    assert_eq!(
        nccltests::buffer(Coll::AllGather, 1e6, 8),
        (999936.0, 124992 / 4)
    );
}

#[test]
fn protocol_crossover_ll_at_small_sizes_simple_at_large() {
    let rows = nccltests::run(&sweep(
        Coll::AllReduce,
        "dgx-a100.ron",
        8,
        &[8.0, 1073741824.0],
    ))
    .unwrap();
    assert_eq!(rows[0].proto, "LL");
    assert_eq!(rows[1].proto, "Simple");
    // And the sweep's auto choice is never slower than any forced protocol.
    for size in [8.0, 65536.0, 16777216.0, 1073741824.0] {
        let auto =
            nccltests::run(&sweep(Coll::AllReduce, "dgx-a100.ron", 8, &[size])).unwrap()[0].time_us;
        let mut o = sweep(Coll::AllReduce, "dgx-a100.ron", 8, &[size]);
        o.protos = Proto::ALL.to_vec();
        o.algos = vec![Algo::Ring];
        let best = nccltests::run(&o)
            .unwrap()
            .iter()
            .map(|r| r.time_us)
            .fold(f64::INFINITY, f64::min);
        assert!(
            auto <= best * 1.25,
            "{size} B: auto {auto} us, best {best} us"
        );
    }
}

#[test]
fn tree_beats_ring_in_latency_at_scale() {
    // 8 B on 1,024 GPUs: the ring pays 2(n-1) = 2,046 hop latencies, the tree 2 x (7 + 7).
    let mut o = sweep(Coll::AllReduce, "dgx-a100-cluster.ron", 1024, &[8.0]);
    o.set = vec!["platform.nodes=128".into()];
    o.algos = vec![Algo::Ring, Algo::Tree];
    o.protos = vec![Proto::LL];
    o.iters = 1;
    let rows = nccltests::run(&o).unwrap();
    let (ring, tree) = (rows[0].time_us, rows[1].time_us);
    assert!(tree * 10.0 < ring, "tree {tree} us, ring {ring} us");
}

#[test]
fn dgx_a100_figures_match_published_nccl_tests() {
    // One DGX A100, AllReduce of 1 GiB: ~230 GB/s busbw (sjeaugey, nccl-tests #149; 232.54 in
    // nccl-tests #175). Two DGX A100 with 8 HDR NICs each: 192 GB/s (AddyLaddy, nccl #812).
    let one = nccltests::run(&sweep(Coll::AllReduce, "dgx-a100.ron", 8, &[1073741824.0])).unwrap();
    close(one[0].busbw, 232.5, 0.05);
    let mut o = sweep(Coll::AllReduce, "dgx-a100-cluster.ron", 16, &[2147483648.0]);
    o.set = vec!["platform.nodes=2".into()];
    let two = nccltests::run(&o).unwrap();
    close(two[0].busbw, 192.0, 0.05);
}

#[test]
fn dgx_h100_ring_matches_published_nccl_tests() {
    // 8 H100 with NCCL_ALGO=RING: 365-370 GB/s busbw at large sizes (nccl #1455).
    let mut o = sweep(Coll::AllReduce, "dgx-h100.ron", 8, &[8589934592.0]);
    o.algos = vec![Algo::Ring];
    let rows = nccltests::run(&o).unwrap();
    close(rows[0].busbw, 367.5, 0.05);
}

const NO_LAUNCH: &str = r#"launch_overhead: "0us""#;

fn kernel(stream: u32, us: u32) -> String {
    format!(r#"Kernel(stream: {stream}, time: "{us}us")"#)
}

#[test]
fn kernels_on_one_stream_run_one_after_another() {
    let prog = format!(
        "{NO_LAUNCH}, program: [{}, {}, DeviceSync, Mark(\"end\")]",
        kernel(0, 10),
        kernel(0, 20)
    );
    let (r, _) = run(&node(1), &prog).unwrap();
    close(r.devices[0].marks[0].1, 30e-6, 1e-12);
}

#[test]
fn kernels_on_two_streams_overlap_and_a_device_sync_waits_for_both() {
    let prog = format!(
        "{NO_LAUNCH}, program: [{}, {}, DeviceSync, Mark(\"end\")]",
        kernel(0, 10),
        kernel(1, 20)
    );
    let (r, _) = run(&node(1), &prog).unwrap();
    close(r.devices[0].marks[0].1, 20e-6, 1e-12);
    // A stream sync waits for its own stream only.
    let prog = format!(
        "{NO_LAUNCH}, program: [{}, {}, StreamSync(0), Mark(\"s0\"), StreamSync(1), Mark(\"s1\")]",
        kernel(0, 10),
        kernel(1, 20)
    );
    let (r, _) = run(&node(1), &prog).unwrap();
    close(r.devices[0].marks[0].1, 10e-6, 1e-12);
    close(r.devices[0].marks[1].1, 20e-6, 1e-12);
}

#[test]
fn an_event_orders_two_streams() {
    // Stream 1 waits for the event recorded after stream 0's kernel: 10 + 20 us.
    let prog = format!(
        r#"{NO_LAUNCH}, program: [{}, Record(stream: 0, event: "e"), Wait(stream: 1, event: "e"), {}, DeviceSync, Mark("end")]"#,
        kernel(0, 10),
        kernel(1, 20)
    );
    let (r, _) = run(&node(1), &prog).unwrap();
    close(r.devices[0].marks[0].1, 30e-6, 1e-12);
}

#[test]
fn launch_overhead_is_hidden_by_long_kernels_and_a_graph_pays_it_once() {
    // Six 1 us kernels launched one by one at 5 us each: the GPU waits for the host,
    // the last kernel is enqueued at 30 us and ends at 31 us.
    let six = vec![kernel(0, 1); 6].join(", ");
    let prog = format!(r#"launch_overhead: "5us", program: [{six}, DeviceSync, Mark("end")]"#);
    let (r, _) = run(&node(1), &prog).unwrap();
    close(r.devices[0].marks[0].1, 31e-6, 1e-12);
    // The same six kernels as two launches of a captured graph of three: ready at 5 and
    // 10 us, so 5-8 us and 10-13 us.
    let three = vec![kernel(0, 1); 3].join(", ");
    let prog = format!(
        r#"launch_overhead: "5us", program: [Capture(graph: "g", ops: [{three}]), Launch(stream: 0, graph: "g", times: 2), DeviceSync, Mark("end")]"#
    );
    let (r, _) = run(&node(1), &prog).unwrap();
    close(r.devices[0].marks[0].1, 13e-6, 1e-12);
    assert_eq!(r.devices[0].kernels, 6);
}

#[test]
fn copies_are_flows_on_pcie_and_copy_engines_limit_them() {
    // 1 GB host-to-device at the GPU's 10 GB/s PCIe link: 0.1 s. Two on two streams with one
    // copy engine run one after the other (0.2 s); with two engines they share the link
    // (0.2 s as well, both ending together); a kernel beside them overlaps.
    let copy = |s: u32| format!(r#"Copy(stream: {s}, kind: HostToDevice, bytes: 1e9)"#);
    let prog = format!(
        "{NO_LAUNCH}, program: [{}, DeviceSync, Mark(\"end\")]",
        copy(0)
    );
    close(
        run(&node(1), &prog).unwrap().0.devices[0].marks[0].1,
        0.1,
        1e-9,
    );
    let prog = format!(
        "{NO_LAUNCH}, copy_engines: 1, program: [{}, {}, StreamSync(0), Mark(\"first\"), DeviceSync, Mark(\"end\")]",
        copy(0),
        copy(1)
    );
    let (r, _) = run(&node(1), &prog).unwrap();
    close(r.devices[0].marks[0].1, 0.1, 1e-9);
    close(r.devices[0].marks[1].1, 0.2, 1e-9);
    // A kernel on a third stream is not held up by the copies.
    let prog = format!(
        "{NO_LAUNCH}, program: [{}, {}, StreamSync(2), Mark(\"k\"), DeviceSync]",
        copy(0),
        kernel(2, 10)
    );
    let (r, _) = run(&node(1), &prog).unwrap();
    close(r.devices[0].marks[0].1, 10e-6, 1e-12);
}

#[test]
fn a_collective_orders_with_kernels_on_its_stream() {
    // GPU streams: 10 us kernel, then the AllReduce (which starts when every GPU is there),
    // then a kernel. The collective cannot start before 10 us, the last kernel not before
    // the collective ends.
    let prog = format!(
        r#"{NO_LAUNCH}, nccl: NcclSpec(channels: 1, algo: Ring, proto: Simple, nvlink_efficiency: 1.0),
           program: [{}, Nccl(op: AllReduce, bytes: 1e8), {}, DeviceSync, Mark("end")]"#,
        kernel(0, 10),
        kernel(0, 10)
    );
    let (r, _) = run(&node(4), &prog).unwrap();
    let c = &r.collectives[0];
    close(c.start_s, 10e-6, 1e-12);
    let coll = 1.5 * 1e8 / 20e9 + (8.4 + 6.0 * 3.4) * 1e-6;
    close(c.end_s, 10e-6 + coll, 1e-9);
    close(r.devices[0].marks[0].1, 20e-6 + coll, 1e-9);
}

#[test]
fn bad_cuda_input_gets_clear_errors() {
    let err = |platform: &str, prog: &str| run(platform, prog).unwrap_err().to_string();
    let e = err(&node(1), "program: [Kernel(stream: 0)]");
    assert!(e.contains("workload.Cuda.program[0].Kernel"), "{e}");
    assert!(e.contains("time"), "{e}");
    let e = err(&node(2), "gpus: 9, program: []");
    assert!(
        e.contains("workload.Cuda.gpus") && e.contains("1 to 2"),
        "{e}"
    );
    let e = err(&node(2), r#"program: [Launch(stream: 0, graph: "nope")]"#);
    assert!(
        e.contains("program[0].Launch.graph: `nope` is not captured"),
        "{e}"
    );
    let e = err(
        &node(2),
        "nccl: NcclSpec(algo: Tree), program: [Nccl(op: Broadcast, bytes: 8)]",
    );
    assert!(
        e.contains("workload.Cuda.nccl.algo") && e.contains("broadcast") && e.contains("tree"),
        "{e}"
    );
}

#[test]
fn hetsim_nccl_tests_prints_the_table_and_writes_csv_and_plot() {
    let tmp = tempfile::tempdir().unwrap();
    let out = tmp.path().join("out");
    let o = common::hetsim(
        &[
            "nccl-tests",
            "--platform",
            "scenarios/platforms/dgx-a100.ron",
            "-g",
            "8",
            "-b",
            "8",
            "-e",
            "1M",
            "-f",
            "4",
            "--proto",
            "LL",
            "--proto",
            "Simple",
            "--out",
            out.to_str().unwrap(),
        ],
        &common::repo(),
    );
    let text = common::ok(&o);
    // nccl-tests' header words, a row per size and variant, and the footer of each block.
    assert!(text.contains("#wrong") && text.contains("algbw") && text.contains("busbw"));
    assert_eq!(text.matches("# Avg bus bandwidth").count(), 2, "{text}");
    let rows: Vec<&str> = text.lines().filter(|l| !l.starts_with('#')).collect();
    let sizes = [8, 32, 128, 512, 2048, 8192, 32768, 131072, 524288];
    assert!(rows.len() >= 2 * sizes.len(), "{text}");
    let first: Vec<&str> = rows[0].split_whitespace().collect();
    assert_eq!(&first[..5], &["8", "2", "float", "sum", "-1"]);
    assert_eq!(first[8], "N/A");
    let csv = std::fs::read_to_string(out.join("nccl_tests.csv")).unwrap();
    assert_eq!(csv.lines().count(), 1 + 2 * sizes.len());
    assert!(out.join("nccl_busbw.svg").exists() && out.join("nccl_busbw.png").exists());
    // Bad input: more GPUs than the platform has; exit code 2, nothing written.
    let bad = tmp.path().join("bad");
    let o = common::hetsim(
        &[
            "nccl-tests",
            "--platform",
            "scenarios/platforms/dgx-a100.ron",
            "-g",
            "16",
            "--out",
            bad.to_str().unwrap(),
        ],
        &common::repo(),
    );
    assert_eq!(o.status.code(), Some(2), "{}", common::stderr(&o));
    // Named by its flag (issue 52).
    assert!(
        common::stderr(&o).contains("error: -g: expected 1 to 8"),
        "{}",
        common::stderr(&o)
    );
    assert!(!bad.exists());
}

#[test]
fn mpi_programs_call_nccl_collectives() {
    // 8 ranks on a DGX A100 call nccl_allreduce of 1 GiB, then compute 1 ms: the job takes
    // exactly the time of the same collective launched from CUDA streams, plus the 1 ms.
    let platform = r#"File("scenarios/platforms/dgx-a100.ron")"#;
    let (cuda, _) = run(
        platform,
        r#"launch_overhead: "0us", program: [Nccl(op: AllReduce, bytes: "1GiB")]"#,
    )
    .unwrap();
    let coll = cuda.collectives[0].end_s - cuda.collectives[0].start_s;
    let mut trace = String::new();
    for r in 0..8 {
        trace.push_str(&format!("{r} nccl_allreduce 1073741824\n{r} sleep 0.001\n"));
    }
    let text = format!(
        r#"Scenario(name: "mpi-nccl", platform: {platform},
            workload: Mpi(ranks: 8, program: TraceText([("t.ti", {trace:?})])))"#
    );
    let mut s = parse_scenario(&text, "test", &common::repo(), &[]).unwrap();
    s.output = hetsim::schema::scenario::OutputSpec::tables_only();
    let report = hetsim::simulate_report(&s, &RunOptions::default()).unwrap();
    close(
        report.summary["sim_time_s"].as_f64().unwrap(),
        coll + 1e-3,
        1e-9,
    );
    close(
        report.summary["mpi"]["comm_time_s"]["max"]
            .as_f64()
            .unwrap(),
        coll,
        1e-9,
    );
    // A rank that never makes the call would leave the others stuck: refused before the run
    // (issue 52), naming the rank.
    let trace = (0..7)
        .map(|r| format!("{r} nccl_allreduce 1024\n"))
        .collect::<String>();
    let text = format!(
        r#"Scenario(name: "mpi-nccl", platform: {platform},
            workload: Mpi(ranks: 8, program: TraceText([("t.ti", {trace:?})])))"#
    );
    let s = parse_scenario(&text, "test", &common::repo(), &[]).unwrap();
    let e = simulate(&s, &RunOptions::default())
        .unwrap_err()
        .to_string();
    assert!(
        e.contains("ranks 0 and 7 disagree on their collective call #1")
            && e.contains("rank 7 makes no such call"),
        "{e}"
    );
}

#[test]
fn a_collective_of_count_zero_returns_at_once_as_nccl_does() {
    // All-gather on 8 GPUs rounds each rank's share down to 16 B: sizes below 128 B are
    // count 0. NCCL's taskAppend returns at once for them, so a call costs only its launch
    // (the host's 4 us, schema/src/cuda.rs) and nothing is chosen; 128 B pays NCCL's latency.
    let rows = nccltests::run(&sweep(Coll::AllGather, "dgx-a100.ron", 8, &[64.0, 128.0])).unwrap();
    assert_eq!((rows[0].count, rows[0].bytes), (0, 0.0));
    close(rows[0].time_us, 4.0, 1e-9);
    assert_eq!((rows[0].algo.as_str(), rows[0].proto.as_str()), ("-", "-"));
    assert_eq!(rows[0].algbw, 0.0);
    assert_eq!(rows[1].count, 4);
    assert!(
        rows[1].time_us > 4.0 && rows[1].algo != "-",
        "{:?}",
        rows[1]
    );
}
