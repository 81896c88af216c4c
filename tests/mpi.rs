//! MPI point-to-point protocols and collectives on an idle network, against closed formulas
//! on tests/data/scenarios/mpi/star-8.ron (its header gives the figures):
//!   host path (other node): L_host = 1.5 us, B_host = 12.5 GB/s
//!   GPU path (other node):  L_gpu = 3.5 us,  B_gpu = 10 GB/s
//!   NVLink (same node):     L_nv = 0.7 us,   B_nv = 75 GB/s
//!   control message: 16 B on the host path; copy: 2 us + 0.07 ns/B; pinning: 4 us.

use std::path::Path;

use hetsim::schema::load::parse_scenario;
use hetsim::schema::scenario::{OutputSpec, Scenario};
use hetsim::{Error, RunOptions, simulate_report};

const L_HOST: f64 = 1.5e-6;
const B_HOST: f64 = 12.5e9;
const L_GPU: f64 = 3.5e-6;
const B_GPU: f64 = 10e9;
const CONTROL: f64 = L_HOST + 16.0 / B_HOST;
const PIN: f64 = 4e-6;

fn copy(bytes: f64) -> f64 {
    2e-6 + 0.07e-9 * bytes
}

/// Runs `trace` on `ranks` ranks placed one per node (or as `gpus_per_node` says).
fn run(
    trace: &str,
    ranks: u32,
    gpus_per_node: u32,
    disable: &[&str],
) -> Result<serde_json::Value, Error> {
    run_with(trace, ranks, gpus_per_node, disable, "")
}

/// As [`run`], with more fields of the `Mpi` workload (e.g. `collectives: (...)`).
fn run_with(
    trace: &str,
    ranks: u32,
    gpus_per_node: u32,
    disable: &[&str],
    extra: &str,
) -> Result<serde_json::Value, Error> {
    let workload = format!(
        r#"ranks: {ranks}, gpus_per_node: {gpus_per_node}, program: TraceText([("inline", {trace:?})]), {extra}"#
    );
    summary(&star8(&workload, "")?, disable)
}

/// A scenario on tests/data/scenarios/mpi/star-8.ron with the fields of its `Mpi` workload
/// and more scenario fields (e.g. `switches: {...}`); it writes tables only.
fn star8(workload: &str, fields: &str) -> Result<Scenario, Error> {
    let platform =
        Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/data/scenarios/mpi/star-8.ron");
    let text = format!(
        r#"Scenario(name: "mpi-test", platform: File({:?}), workload: Mpi({workload}), {fields})"#,
        platform.display().to_string(),
    );
    let mut scenario = parse_scenario(&text, "test", Path::new("."), &[])
        .map_err(|e| Error::Input(e.to_string()))?;
    scenario.output = OutputSpec::tables_only();
    Ok(scenario)
}

/// Runs a scenario with switches turned off; its summary.
fn summary(scenario: &Scenario, disable: &[&str]) -> Result<serde_json::Value, Error> {
    let opts = RunOptions {
        disable: disable.iter().map(|s| s.to_string()).collect(),
        progress: false,
        ..Default::default()
    };
    simulate_report(scenario, &opts).map(|r| r.summary)
}

fn sim_time(s: &serde_json::Value) -> f64 {
    s["sim_time_s"].as_f64().unwrap()
}

fn close(a: f64, b: f64) -> bool {
    (a - b).abs() <= 1e-12 + 1e-9 * b.abs()
}

fn one_message(bytes: f64, disable: &[&str]) -> f64 {
    let trace = format!("0 send 1 {bytes}\n1 recv 0 {bytes}\n");
    sim_time(&run(&trace, 2, 1, disable).unwrap())
}

#[test]
fn gpudirect_is_rendezvous_then_pinning_then_the_gpu_path() {
    // T = 2 control messages (RTS, CTS) + pinning + L_gpu + S / B_gpu.
    for s in [1000.0, 1e6] {
        let want = 2.0 * CONTROL + PIN + L_GPU + s / B_GPU;
        let got = one_message(s, &[]);
        assert!(close(got, want), "S={s}: {got} vs {want}");
    }
}

#[test]
fn hostcopy_pays_a_copy_at_each_end() {
    // Eager (S <= 64000 B): copy out + L_host + S / B_host + copy in.
    let s = 1000.0;
    let want = copy(s) + L_HOST + s / B_HOST + copy(s);
    let got = one_message(s, &["gpudirect"]);
    assert!(close(got, want), "{got} vs {want}");
    // Rendezvous: RTS + CTS, then the same.
    let s = 1e6;
    let want = 2.0 * CONTROL + copy(s) + L_HOST + s / B_HOST + copy(s);
    let got = one_message(s, &["gpudirect"]);
    assert!(close(got, want), "{got} vs {want}");
}

#[test]
fn eager_protocol_off_sends_everything_by_rendezvous() {
    let s = 1000.0;
    let want = 2.0 * CONTROL + copy(s) + L_HOST + s / B_HOST + copy(s);
    let got = one_message(s, &["gpudirect", "eager_protocol"]);
    assert!(close(got, want), "{got} vs {want}");
}

#[test]
fn same_node_messages_take_nvlink() {
    // Two ranks on node 0: rendezvous control between one host costs nothing (no link), then
    // L_nv + S / B_nv.
    let s = 1e6;
    let trace = format!("0 send 1 {s}\n1 recv 0 {s}\n");
    let summary = run(&trace, 2, 2, &[]).unwrap();
    let want = 0.7e-6 + s / 75e9;
    assert!(
        close(sim_time(&summary), want),
        "{} vs {want}",
        sim_time(&summary)
    );
    assert_eq!(summary["mpi"]["paths"]["nvlink"]["messages"], 1);
}

#[test]
fn ping_pong_grows_linearly_and_gpudirect_wins_by_the_copy_cost() {
    let pingpong = |s: f64, disable: &[&str]| {
        let t = format!("0 send 1 {s}\n1 recv 0 {s}\n1 send 0 {s}\n0 recv 1 {s}\n");
        sim_time(&run(&t, 2, 1, disable).unwrap())
    };
    for (mode, disable, per_byte) in [
        ("gpudirect", &[][..], 1.0 / B_GPU),
        ("hostcopy", &["gpudirect"][..], 1.0 / B_HOST + 2.0 * 0.07e-9),
    ] {
        // Above the eager limit, each extra byte costs the path's per-byte time, twice.
        let (a, b) = (pingpong(1e6, disable), pingpong(2e6, disable));
        let slope = (b - a) / 1e6;
        assert!(
            close(slope, 2.0 * per_byte),
            "{mode}: {slope} vs {}",
            2.0 * per_byte
        );
    }
    // The gap at S: 2 x [2 copies + L_host + S/B_host - pin - L_gpu - S/B_gpu].
    let s = 4e6;
    let gap = pingpong(s, &["gpudirect"]) - pingpong(s, &[]);
    let want = 2.0 * (2.0 * copy(s) + L_HOST + s / B_HOST - PIN - L_GPU - s / B_GPU);
    assert!(close(gap, want), "{gap} vs {want}");
    assert!(gap > 0.0);
}

/// Each rank's end (s) after running `trace` one rank per node with more workload fields.
fn rank_ends(trace: &str, ranks: u32, disable: &[&str], extra: &str) -> Vec<f64> {
    let workload = format!(
        r#"ranks: {ranks}, gpus_per_node: 1, program: TraceText([("inline", {trace:?})]), {extra}"#
    );
    let opts = RunOptions {
        disable: disable.iter().map(|s| s.to_string()).collect(),
        progress: false,
        ..Default::default()
    };
    let report = simulate_report(&star8(&workload, "").unwrap(), &opts).unwrap();
    report.mpi.unwrap().ranks.iter().map(|r| r.end_s).collect()
}

#[test]
fn eager_sends_complete_at_injection_and_share_the_root_nic() {
    // Rank 0 sends 3 eager messages of S in a row (host buffers). Each send is done once its
    // data is injected, so rank 0 ends at 0 and the three flows share its NIC: each gets
    // B_host / 3 and all arrive at L_host + 3 S / B_host (8.7 us). Completing a send on
    // delivery would serialise them: 3 (L_host + S / B_host) = 11.7 us.
    let s = 30000.0;
    let trace = format!(
        "0 send 1 {s} host\n0 send 2 {s} host\n0 send 3 {s} host\n\
         1 recv 0 {s} host\n2 recv 0 {s} host\n3 recv 0 {s} host\n"
    );
    let ends = rank_ends(&trace, 4, &[], "");
    let arrive = L_HOST + 3.0 * s / B_HOST;
    assert_eq!(ends[0], 0.0);
    for (r, &end) in ends.iter().enumerate().skip(1) {
        assert!(close(end, arrive), "rank {r}: {end} vs {arrive}");
    }
}

#[test]
fn an_eager_hostcopy_send_completes_after_its_copy_out() {
    // Device buffers without GPUDirect: a blocking send is done once its data is copied to a
    // host buffer, so rank 0's second send starts its copy at copy(S) and rank 0 ends at
    // 2 copy(S); each message then travels and is copied in at its receiver.
    let s = 30000.0;
    let trace = format!("0 send 1 {s}\n0 send 2 {s}\n1 recv 0 {s}\n2 recv 0 {s}\n");
    let ends = rank_ends(&trace, 3, &["gpudirect"], "");
    let want = [
        2.0 * copy(s),
        copy(s) + L_HOST + s / B_HOST + copy(s),
        2.0 * copy(s) + L_HOST + s / B_HOST + copy(s),
    ];
    for (got, want) in ends.iter().zip(want) {
        assert!(close(*got, want), "{ends:?} vs {want}");
    }
}

#[test]
fn a_sender_out_of_eager_credits_waits_for_a_receive() {
    // Two eager buffers per peer: of 3 messages to rank 1, two go at once and share the NIC
    // (arriving at L_host + 2 S / B_host); the third takes the buffer of the first receive
    // then, and rank 0's third send is done at that moment.
    let s = 30000.0;
    let trace = format!(
        "0 send 1 {s} host\n0 send 1 {s} host\n0 send 1 {s} host\n\
         1 irecv 0 {s} host\n1 irecv 0 {s} host\n1 irecv 0 {s} host\n1 waitall\n"
    );
    let ends = rank_ends(&trace, 2, &[], "protocol: (eager_credits: 2)");
    let first_two = L_HOST + 2.0 * s / B_HOST;
    assert!(close(ends[0], first_two), "{} vs {first_two}", ends[0]);
    let third = first_two + L_HOST + s / B_HOST;
    assert!(close(ends[1], third), "{} vs {third}", ends[1]);
    // With the default 64, the three share the NIC from the start.
    let ends = rank_ends(&trace, 2, &[], "");
    assert!(close(ends[1], L_HOST + 3.0 * s / B_HOST), "{ends:?}");
    let e = run_with(&trace, 2, 1, &[], "protocol: (eager_credits: 0)").unwrap_err();
    assert!(
        e.to_string()
            .contains("workload.Mpi.protocol.eager_credits: expected at least 1"),
        "{e}"
    );
}

#[test]
fn compute_runs_at_the_gpu_speed() {
    // 1e9 flops at 10 TFlop/s = 100 us.
    let summary = run("0 compute 1e9\n1 compute 2e9\n", 2, 1, &[]).unwrap();
    assert!(close(sim_time(&summary), 200e-6));
    assert!(close(
        summary["mpi"]["compute_time_s"]["mean"].as_f64().unwrap(),
        150e-6
    ));
}

#[test]
fn binomial_bcast_on_a_star_takes_ceil_log2_p_rounds() {
    // 8 ranks, one per node; each round is one GPUDirect message: ceil(log2 8) = 3 rounds.
    let s = 1e6;
    let trace: String = (0..8).map(|r| format!("{r} bcast {s}\n")).collect();
    let force = r#"collectives: (force: {"bcast": "binomial"})"#;
    let got = sim_time(&run_with(&trace, 8, 1, &[], force).unwrap());
    let msg = 2.0 * CONTROL + PIN + L_GPU + s / B_GPU;
    assert!(close(got, 3.0 * msg), "{got} vs {}", 3.0 * msg);
}

#[test]
fn ring_allreduce_takes_two_p_minus_one_steps_of_size_over_p() {
    // 5 ranks (not a power of two, so ring): 2(p-1) = 8 steps of S/p each, every step one
    // GPUDirect message per rank on its own links (split-duplex star: no sharing).
    let (s, p) = (5e6, 5.0);
    let trace: String = (0..5).map(|r| format!("{r} allreduce {s} 0\n")).collect();
    let force = r#"collectives: (force: {"allreduce": "ring"})"#;
    let got = sim_time(&run_with(&trace, 5, 1, &[], force).unwrap());
    let step = 2.0 * CONTROL + PIN + L_GPU + s / p / B_GPU;
    assert!(close(got, 8.0 * step), "{got} vs {}", 8.0 * step);
}

#[test]
fn a_receive_never_matched_is_reported_with_its_rank_and_operation() {
    let e = run("0 recv 1 8\n1 compute 1\n", 2, 1, &[]).unwrap_err();
    let Error::Run(msg) = e else { panic!("{e:?}") };
    assert!(
        msg.contains(
            "rank 0 waits at inline:1 (recv) for: recv from 1 tag 0 (8 B) [never matched]"
        ),
        "{msg}"
    );
}

#[test]
fn a_bad_trace_line_is_an_input_error_with_its_line() {
    let e = run("0 send 1 8\n1 recv 0 eight\n", 2, 1, &[]).unwrap_err();
    let Error::Input(msg) = e else {
        panic!("{e:?}")
    };
    assert!(
        msg.contains("inline:2: size `eight` is not a number"),
        "{msg}"
    );
}

#[test]
fn the_shared_nic_divides_its_bandwidth() {
    // Two ranks on node 0 each send S to their peer on node 1 at once (HostCopy, host path):
    // they share node 0's NIC, so the data phase takes 2 S / B_host instead of S / B_host
    // (control messages pay latency and size without sharing).
    let s = 1e6;
    let trace = format!("0 send 2 {s}\n1 send 3 {s}\n2 recv 0 {s}\n3 recv 1 {s}\n");
    let got = sim_time(&run(&trace, 4, 2, &["gpudirect"]).unwrap());
    let want = 2.0 * CONTROL + copy(s) + L_HOST + 2.0 * s / B_HOST + copy(s);
    assert!(close(got, want), "{got} vs {want}");
}

#[test]
fn hetsim_p2p_prints_osu_tables_and_writes_csv_and_plots() {
    let repo = Path::new(env!("CARGO_MANIFEST_DIR"));
    let tmp = tempfile::tempdir().unwrap();
    let o = std::process::Command::new(env!("CARGO_BIN_EXE_hetsim"))
        .args(["p2p", "--platform"])
        .arg(repo.join("tests/data/scenarios/mpi/star-8.ron"))
        .args([
            "--from",
            "node[0].gpu[0]",
            "--to",
            "node[1].gpu[0]",
            "-b",
            "1K",
            "-e",
            "1M",
            "--out",
        ])
        .arg(tmp.path())
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let out = String::from_utf8_lossy(&o.stdout);
    assert!(out.contains("# Size"), "{out}");
    let csv = std::fs::read_to_string(tmp.path().join("p2p.csv")).unwrap();
    // 1 KiB to 1 MiB by 2: 11 sizes, two modes.
    assert_eq!(csv.lines().count(), 1 + 22);
    // GPUDirect latency of 1 MiB: half a round trip = one message (see the formulas above).
    let s = 1048576.0;
    let want_us = (2.0 * CONTROL + PIN + L_GPU + s / B_GPU) * 1e6;
    let line = csv
        .lines()
        .find(|l| l.starts_with("gpudirect,1048576,"))
        .unwrap();
    let got: f64 = line.split(',').nth(2).unwrap().parse().unwrap();
    assert!(close(got, want_us), "{got} vs {want_us}");
    for f in ["p2p_latency.png", "p2p_bandwidth.svg"] {
        assert!(tmp.path().join(f).is_file(), "{f}");
    }
    let bad = std::process::Command::new(env!("CARGO_BIN_EXE_hetsim"))
        .args(["p2p", "--platform"])
        .arg(repo.join("tests/data/scenarios/mpi/star-8.ron"))
        .args([
            "--from",
            "node[0].gpu[0]",
            "--to",
            "node[1].gpu[0]",
            "-e",
            "lots",
        ])
        .output()
        .unwrap();
    assert_eq!(bad.status.code(), Some(2));
}

#[test]
fn the_generator_scenarios_run_and_gpudirect_pays_for_large_messages() {
    // The Minisweep-like sweep moves 4 MB messages: GPUDirect saves the two copies of each.
    let repo = Path::new(env!("CARGO_MANIFEST_DIR"));
    for name in ["halo3d", "sweep", "stencil", "solver"] {
        let file = repo.join(format!("scenarios/studies/{name}.ron"));
        let mut scenario = hetsim::schema::load::load_scenario(&file, &[]).unwrap();
        scenario.output = OutputSpec::tables_only();
        let t = |disable: &[&str]| sim_time(&summary(&scenario, disable).unwrap());
        let (gd, hc) = (t(&[]), t(&["gpudirect"]));
        assert!(gd > 0.0 && hc > 0.0, "{name}");
        if name == "sweep" {
            assert!(hc > 1.2 * gd, "sweep: hostcopy {hc} vs gpudirect {gd}");
        }
    }
}

#[test]
fn rabenseifner_allreduce_matches_its_alpha_beta_cost_on_a_power_of_two() {
    // p = 8 ranks, one per node: 2 lg p rounds; recursive halving exchanges n/2, n/4, n/8,
    // recursive doubling n/8, n/4, n/2 (each round one GPUDirect message each way on
    // split-duplex links: no sharing). T = sum over rounds of (2 control + pin + L_gpu + b/B).
    let (n, p) = (8e6, 8.0f64);
    let trace: String = (0..8).map(|r| format!("{r} allreduce {n} 0\n")).collect();
    let got = sim_time(&run(&trace, 8, 1, &[]).unwrap());
    let alpha = 2.0 * CONTROL + PIN + L_GPU;
    let rounds = 2.0 * p.log2();
    let bytes = 2.0 * n * (p - 1.0) / p;
    let want = rounds * alpha + bytes / B_GPU;
    assert!(close(got, want), "{got} vs {want}");
}

#[test]
fn an_unknown_forced_algorithm_is_an_input_error() {
    let e = run_with(
        "0 barrier\n1 barrier\n",
        2,
        1,
        &[],
        r#"collectives: (force: {"allreduce": "fastest"})"#,
    )
    .unwrap_err();
    let Error::Input(msg) = e else {
        panic!("{e:?}")
    };
    assert!(
        msg.contains("collectives.force.allreduce: `fastest` is not an algorithm of allreduce"),
        "{msg}"
    );
}

#[test]
fn tracer_and_mpich_selections_differ_where_their_algorithms_do() {
    // A 1 MB allreduce on 8 ranks: TraceR's binary-tree reduce + bcast moves the whole vector
    // up and down the tree; MPICH's Rabenseifner moves 2n(p-1)/p per rank: MPICH is faster.
    let trace: String = (0..8).map(|r| format!("{r} allreduce 1e6 0\n")).collect();
    let mpich = sim_time(&run(&trace, 8, 1, &[]).unwrap());
    let tracer = sim_time(&run_with(&trace, 8, 1, &[], "collectives: (select: Tracer)").unwrap());
    assert!(tracer > 1.5 * mpich, "tracer {tracer} vs mpich {mpich}");
}

#[test]
fn copy_at_sender_charges_both_copies_before_sending() {
    // TraceR's accounting: the sender pays one copy of the message (no receiver copy).
    let s = 1000.0;
    let trace = format!("0 send 1 {s}\n1 recv 0 {s}\n");
    let got =
        sim_time(&run_with(&trace, 2, 1, &["gpudirect"], "protocol: (copy_at: Sender)").unwrap());
    let want = copy(s) + L_HOST + s / B_HOST;
    assert!(close(got, want), "{got} vs {want}");
}

#[test]
fn pcie_copy_contention_moves_copies_onto_the_pcie_links() {
    // The copy is its fixed 2 us, then a flow GPU -> host over the GPU's PCIe link (10 GB/s,
    // 1 us latency), instead of 0.07 ns/B: eager, one copy at each end.
    let s = 1000.0;
    let trace = format!("0 send 1 {s}\n1 recv 0 {s}\n");
    let scenario = star8(
        &format!(r#"ranks: 2, gpus_per_node: 1, program: TraceText([("i", {trace:?})])"#),
        r#"switches: {"pcie_copy_contention": true}"#,
    )
    .unwrap();
    let got = sim_time(&summary(&scenario, &["gpudirect"]).unwrap());
    let pcie_copy = 2e-6 + 1e-6 + s / 10e9;
    let want = pcie_copy + L_HOST + s / B_HOST + pcie_copy;
    assert!(close(got, want), "{got} vs {want}");
}

#[test]
fn round_robin_placement_spreads_ranks_over_nodes() {
    // 4 ranks, 2 GPUs per node: linear puts ranks 0 and 1 on node 0 (NVLink between them);
    // round-robin puts them on nodes 0 and 1 (the network).
    let trace = "0 send 1 1e6\n1 recv 0 1e6\n";
    let linear = run(trace, 4, 2, &[]).unwrap();
    assert_eq!(linear["mpi"]["paths"]["nvlink"]["messages"], 1);
    let rr = run_with(trace, 4, 2, &[], "placement: RoundRobin").unwrap();
    assert_eq!(rr["mpi"]["paths"]["gpudirect"]["messages"], 1);
}

#[test]
fn communication_grows_with_ranks_per_node_behind_one_nic() {
    // The stencil and sweep generators on 8 ranks: 1 rank per node, then 2 per node sharing a
    // NIC (same platform, same program): mean communication time grows.
    for generator in [
        "Stencil(iterations: 2, large: \"4MB\", compute: \"100us\")",
        "Sweep(iterations: 1, bytes: \"4MB\", blocks: 8, compute: \"100us\")",
    ] {
        let comm = |per_node: u32| {
            let workload = format!(
                "ranks: 8, gpus_per_node: {per_node}, placement: RoundRobin, program: Generator({generator})"
            );
            let s = summary(&star8(&workload, "").unwrap(), &["gpudirect"]).unwrap();
            s["mpi"]["comm_time_s"]["mean"].as_f64().unwrap()
        };
        let (one, two) = (comm(1), comm(2));
        // The stencil exchanges all at once (large growth); the sweep overlaps only where its
        // pipelined wavefronts meet (about 10 %).
        assert!(two > 1.05 * one, "{generator}: {one} -> {two}");
    }
}

#[test]
fn the_shipped_trace_scenario_replays() {
    // scenarios/mpi-trace.ron replays scenarios/traces/ring-8.ti on Lassen (V100: 7.8 TFlop/s).
    let repo = Path::new(env!("CARGO_MANIFEST_DIR"));
    let tmp = tempfile::tempdir().unwrap();
    let o = std::process::Command::new(env!("CARGO_BIN_EXE_hetsim"))
        .args(["run", "-q", "--out"])
        .arg(tmp.path())
        .arg(repo.join("scenarios/mpi-trace.ron"))
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let ranks = std::fs::read_to_string(tmp.path().join("ranks.csv")).unwrap();
    assert_eq!(ranks.lines().count(), 9, "a header and 8 ranks");
    // Rank 0 computes 3 x 2e9 flops, plus its share of each 64 KB allreduce's 1e6 flops:
    // Rabenseifner (MPICH's choice) reduces n/2 + n/4 + n/8 on 8 ranks, 0.875e6 flops.
    let compute: f64 = ranks
        .lines()
        .nth(1)
        .unwrap()
        .split(',')
        .nth(4)
        .unwrap()
        .parse()
        .unwrap();
    let want = 3.0 * (2e9 + 0.875e6) / 7.8e12;
    assert!(close(compute, want), "{compute} vs {want}");
}

#[test]
fn nvlink_transfers_wait_for_a_copy_queue() {
    // Rank 0 sends six 1 MB messages at once to rank 1 on the same node. With 4 copy queues
    // the first four share NVLink (4 S / B_nv after L_nv), then the last two (2 S / B_nv after
    // another L_nv): 6 S / B_nv + 2 L_nv. With 8 queues all six share at once: 6 S / B_nv + L_nv.
    let s = 1e6;
    let mut t = String::new();
    for _ in 0..6 {
        t.push_str(&format!("0 isend 1 {s}\n1 irecv 0 {s}\n"));
    }
    t.push_str("0 waitall\n1 waitall\n");
    let (l, b) = (0.7e-6, 75e9);
    let four = sim_time(&run(&t, 2, 2, &[]).unwrap());
    assert!(close(four, 6.0 * s / b + 2.0 * l), "{four}");
    let eight = sim_time(&run_with(&t, 2, 2, &[], "protocol: (copy_queues: 8)").unwrap());
    assert!(close(eight, 6.0 * s / b + l), "{eight}");
}

#[test]
fn each_call_pays_the_call_overhead_as_communication() {
    // A 200 ns overhead on send and recv: one eager HostCopy message takes 200 ns longer at
    // the receiver, who posted its receive 200 ns after start (both pay in parallel).
    let s = 1000.0;
    let trace = format!("0 send 1 {s}\n1 recv 0 {s}\n");
    let base = sim_time(&run(&trace, 2, 1, &["gpudirect"]).unwrap());
    let summary = run_with(
        &trace,
        2,
        1,
        &["gpudirect"],
        "protocol: (call_overhead: \"200ns\")",
    )
    .unwrap();
    assert!(
        close(sim_time(&summary), base + 200e-9),
        "{} vs {base}",
        sim_time(&summary)
    );
    // Communication time includes the overhead; there is no computation.
    assert!(close(
        summary["mpi"]["comm_time_s"]["max"].as_f64().unwrap(),
        base + 200e-9
    ));
    assert_eq!(summary["mpi"]["compute_time_s"]["max"], 0.0);
}

#[test]
fn ranks_are_timeline_rows_with_compute_and_wait_states() {
    // The shipped trace scenario with its default outputs: rank rows in intervals.csv, and the
    // messages as transfers between rank threads in trace.json.
    let repo = Path::new(env!("CARGO_MANIFEST_DIR"));
    let tmp = tempfile::tempdir().unwrap();
    let o = std::process::Command::new(env!("CARGO_BIN_EXE_hetsim"))
        .args(["run", "-q", "--out"])
        .arg(tmp.path())
        .arg(repo.join("scenarios/mpi-trace.ron"))
        .output()
        .unwrap();
    assert!(o.status.success());
    let csv = std::fs::read_to_string(tmp.path().join("intervals.csv")).unwrap();
    let rank0: Vec<&str> = csv
        .lines()
        .filter(|l| l.starts_with("node[0].rank[0],"))
        .collect();
    // 3 compute steps plus the reductions' compute, and waits in between.
    assert!(
        rank0
            .iter()
            .filter(|l| l.contains(",rank,compute,"))
            .count()
            >= 3,
        "{rank0:?}"
    );
    assert!(rank0.iter().any(|l| l.contains(",rank,wait,")), "{rank0:?}");
    let trace: serde_json::Value =
        serde_json::from_slice(&std::fs::read(tmp.path().join("trace.json")).unwrap()).unwrap();
    let ev = trace["traceEvents"].as_array().unwrap();
    let to_rank1 = ev
        .iter()
        .filter(|e| e["ph"] == "b" && e["args"]["to"] == "node[0].rank[1]")
        .count();
    assert!(
        to_rank1 >= 3,
        "ring messages 0 -> 1 each iteration: {to_rank1}"
    );
}

/// `network_model.quantum`: on an uncontended path each data flow joins at most one quantum
/// late and leaves at most one quantum late (control messages are not flows), so ten
/// rendezvous round trips (20 data flows, one after another) end between 0 and 2 x 20 quanta
/// later than exactly; and the shift is real (at least one quantum) for a 1 us quantum.
#[test]
fn a_network_quantum_delays_each_flow_by_at_most_two_quanta() {
    let s = 1e6;
    let trace: String = (0..10)
        .map(|_| format!("0 send 1 {s}\n1 recv 0 {s}\n1 send 0 {s}\n0 recv 1 {s}\n"))
        .collect();
    let workload =
        format!(r#"ranks: 2, gpus_per_node: 1, program: TraceText([("inline", {trace:?})])"#);
    let exact = sim_time(&summary(&star8(&workload, "").unwrap(), &[]).unwrap());
    let q = 1e-6;
    let quantised = star8(&workload, r#"network_model: (quantum: "1us")"#).unwrap();
    let shift = sim_time(&summary(&quantised, &[]).unwrap()) - exact;
    assert!(shift >= q && shift <= 2.0 * 20.0 * q, "{shift}");
}
