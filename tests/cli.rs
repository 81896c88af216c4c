//! The command line end to end: runs, outputs, determinism, overrides, switches, bad input.

mod common;

use common::{hetsim, ok, repo, stderr};
use std::path::Path;
use std::process::Command;

fn read_csv(path: &Path) -> Vec<Vec<String>> {
    std::fs::read_to_string(path)
        .unwrap()
        .lines()
        .map(|l| l.split(',').map(str::to_string).collect())
        .collect()
}

#[test]
fn the_default_run_answers_four_what_if_questions_first() {
    let tmp = tempfile::tempdir().unwrap();
    let o = hetsim(&["run"], tmp.path());
    assert!(o.status.success(), "{}", stderr(&o));
    let stdout = String::from_utf8_lossy(&o.stdout);
    let lines: Vec<&str> = stdout.lines().collect();
    // The answers come first, one per question, each starting with the question and its
    // verdict (the figures are the runs', not written down anywhere).
    let starts = [
        "GPUDirect instead of HostCopy cuts the halo exchange's communication per rank by ",
        "Six GPUs per node instead of four raises the halo exchange's communication per rank by ",
        "A tree instead of a ring cuts the time of a 64 MiB NCCL allreduce by ",
        "dmdas instead of dmda cuts the makespan of a 20 x 20-tile Cholesky by ",
    ];
    for (line, start) in lines.iter().zip(starts) {
        assert!(line.starts_with(start), "{line}\nexpected: {start}...");
    }
    assert!(lines[2].contains("NCCL's own tuner picks "), "{}", lines[2]);
    assert!(
        stdout.contains("hetsim run scenarios/whatif/halo.ron"),
        "{stdout}"
    );
    let dir = tmp.path().join("results/whatif");
    for name in [
        "summary.json",
        "whatif.csv",
        "comparison.svg",
        "comparison.png",
    ] {
        assert!(dir.join(name).is_file(), "{name} written");
        assert!(
            stdout.contains(&format!("results/whatif/{name}")),
            "{name} reported"
        );
    }
    let summary: serde_json::Value =
        serde_json::from_slice(&std::fs::read(dir.join("summary.json")).unwrap()).unwrap();
    let questions = summary["questions"].as_array().unwrap();
    assert_eq!(questions.len(), 4);
    // Each answer is the ratio of the two runs' own summaries.
    for q in questions {
        let (before, after) = (
            q["before"]["value_s"].as_f64().unwrap(),
            q["after"]["value_s"].as_f64().unwrap(),
        );
        let change = q["change_pct"].as_f64().unwrap();
        assert!((change - 100.0 * (after / before - 1.0)).abs() < 1e-9);
        assert!(lines.iter().any(|l| *l == q["answer"].as_str().unwrap()));
    }
    let hostcopy = &questions[0]["before"]["summary"]["mpi"]["paths"];
    assert_eq!(
        hostcopy["gpudirect"]["messages"], 0,
        "HostCopy runs use no GPUDirect"
    );
    assert_eq!(
        questions[0]["before"]["value_s"],
        questions[0]["before"]["summary"]["mpi"]["comm_time_s"]["mean"]
    );
    // The picture is there in both forms and names every question.
    let svg = std::fs::read_to_string(dir.join("comparison.svg")).unwrap();
    for q in questions {
        assert!(
            svg.contains(q["question"].as_str().unwrap()),
            "{}",
            q["question"]
        );
    }
    // Deterministic: a second run writes the same summary and table.
    let again = hetsim(&["run", "--quiet", "--out", "again"], tmp.path());
    assert!(
        again.status.success() && again.stdout.is_empty(),
        "--quiet prints nothing"
    );
    for name in ["summary.json", "whatif.csv"] {
        assert_eq!(
            std::fs::read(dir.join(name)).unwrap(),
            std::fs::read(tmp.path().join("again").join(name)).unwrap(),
            "{name}"
        );
    }
    // The what-if takes switches for every run, but not one a question turns off itself (it
    // would answer "unchanged", issue 52), and refuses --set (it has three files).
    let off = hetsim(
        &["run", "--disable", "contention", "--out", "off"],
        tmp.path(),
    );
    assert!(off.status.success(), "{}", stderr(&off));
    let off = hetsim(
        &["run", "--disable", "gpudirect", "--out", "off2"],
        tmp.path(),
    );
    assert_eq!(off.status.code(), Some(2), "{}", stderr(&off));
    let set = hetsim(&["run", "--set", "platform.nodes=4"], tmp.path());
    assert_eq!(set.status.code(), Some(2));
    assert!(
        stderr(&set).contains("scenarios/whatif/halo.ron"),
        "{}",
        stderr(&set)
    );
}

#[test]
fn the_flow_demo_runs_and_writes_its_outputs() {
    let tmp = tempfile::tempdir().unwrap();
    let demo = repo().join("scenarios/demo.ron");
    let demo = demo.to_str().unwrap();
    let o = hetsim(&["run", demo, "--quiet"], tmp.path());
    assert!(o.status.success(), "{}", stderr(&o));
    assert!(o.stdout.is_empty(), "--quiet prints nothing on success");
    let o = hetsim(&["run", demo], tmp.path());
    assert!(o.status.success(), "{}", stderr(&o));
    let dir = tmp.path().join("results/demo");
    let stdout = String::from_utf8_lossy(&o.stdout);
    // The result first, then the run's cost, then where each output went.
    assert!(
        stdout.starts_with(
            "demo: 6 flows move 3.304 GB in 163.8 ms; busiest link node[0].nic[0], 100.0 % used\n\
             demo: simulated 163.8 ms in "
        ),
        "{stdout}"
    );
    for name in [
        "summary.json",
        "flows.csv",
        "links.csv",
        "intervals.csv",
        "trace.json",
        "paje.trace",
        "timeline.svg",
        "timeline.png",
        "link_utilisation.svg",
        "link_utilisation.png",
    ] {
        let path = dir.join(name);
        assert!(path.is_file(), "{name} written");
        assert!(
            stdout.contains(&path.strip_prefix(tmp.path()).unwrap().display().to_string()),
            "{name} reported: {stdout}"
        );
    }
    assert_eq!(stdout.lines().count(), 13, "{stdout}");
    let summary: serde_json::Value =
        serde_json::from_slice(&std::fs::read(dir.join("summary.json")).unwrap()).unwrap();
    for key in [
        "scenario",
        "seed",
        "sim_time_s",
        "events",
        "wall_s",
        "switches",
        "flows",
    ] {
        assert!(summary.get(key).is_some(), "summary.json lacks `{key}`");
    }
    assert_eq!(summary["flows"]["count"], 6);
    assert_eq!(summary["switches"]["contention"], true);
    // Four GPUs send 512 MB each through node 0's one NIC of 12.5 GB/s: 2.048e9 / 12.5e9 =
    // 0.16384 s, plus the route latency (1 us PCIe, 500 ns NIC, 2 x 100 ns cable, 500 ns NIC,
    // 1 us PCIe = 3.2 us).
    let flows = read_csv(&dir.join("flows.csv"));
    assert_eq!(flows[0], ["id", "src", "dst", "bytes", "start_s", "end_s"]);
    let remote: Vec<f64> = flows[1..5].iter().map(|r| r[5].parse().unwrap()).collect();
    for end in remote {
        assert!((end - 0.1638432).abs() < 1e-12, "{end}");
    }
    let links = read_csv(&dir.join("links.csv"));
    assert_eq!(links[0], ["link", "bytes", "busy_s", "mean_utilisation"]);
    let nic = links.iter().find(|r| r[0] == "node[0].nic[0]").unwrap();
    assert_eq!(nic[1], "2048000000.0");
}

#[test]
fn run_stats_prints_the_run_and_solver_counters_on_stderr() {
    let tmp = tempfile::tempdir().unwrap();
    let demo = repo().join("scenarios/demo.ron");
    let o = hetsim(
        &["run", demo.to_str().unwrap(), "--quiet", "--stats"],
        tmp.path(),
    );
    assert!(o.status.success(), "{}", stderr(&o));
    assert!(
        o.stdout.is_empty(),
        "--quiet still prints nothing on stdout"
    );
    let err = stderr(&o);
    let summary: serde_json::Value = serde_json::from_slice(
        &std::fs::read(tmp.path().join("results/demo/summary.json")).unwrap(),
    )
    .unwrap();
    // The counters are the run's own: its event count is the summary's.
    let events = format!("run: {} events, ", summary["events"]);
    assert!(err.starts_with(&events), "{err}");
    // Six flows start and end: the solver ran and moved rates.
    let solves: u64 = err
        .split("solves: ")
        .nth(1)
        .and_then(|r| r.split(',').next())
        .and_then(|n| n.parse().ok())
        .unwrap_or_else(|| panic!("no solve count in {err}"));
    assert!(solves >= 2, "{err}");
    assert!(
        err.contains("rate changes of flows already running"),
        "{err}"
    );
}

#[test]
fn same_scenario_twice_gives_identical_outputs() {
    let tmp = tempfile::tempdir().unwrap();
    let lassen = repo().join("scenarios/lassen-shared-nic.ron");
    let run = |out: &str| {
        let o = hetsim(
            &["run", lassen.to_str().unwrap(), "--quiet", "--out", out],
            tmp.path(),
        );
        assert!(o.status.success(), "{}", stderr(&o));
    };
    run("a");
    run("b");
    for f in ["flows.csv", "links.csv"] {
        assert_eq!(
            std::fs::read(tmp.path().join("a").join(f)).unwrap(),
            std::fs::read(tmp.path().join("b").join(f)).unwrap(),
            "{f}"
        );
    }
    let strip = |d: &str| {
        let mut v: serde_json::Value = serde_json::from_slice(
            &std::fs::read(tmp.path().join(d).join("summary.json")).unwrap(),
        )
        .unwrap();
        v.as_object_mut().unwrap().remove("wall_s");
        v
    };
    assert_eq!(strip("a"), strip("b"));
}

#[test]
fn overrides_and_switches_change_the_model() {
    let tmp = tempfile::tempdir().unwrap();
    let end = |args: &[&str]| -> f64 {
        let demo = repo().join("scenarios/demo.ron");
        let mut all = vec!["run", demo.to_str().unwrap(), "--quiet", "--out", "o"];
        all.extend_from_slice(args);
        let o = hetsim(&all, tmp.path());
        assert!(o.status.success(), "{}", stderr(&o));
        let s: serde_json::Value =
            serde_json::from_slice(&std::fs::read(tmp.path().join("o/summary.json")).unwrap())
                .unwrap();
        s["sim_time_s"].as_f64().unwrap()
    };
    let base = end(&[]);
    // A NIC (and cable) twice as fast would halve the bottleneck to 2.048e9 / 25e9 = 0.08192 s,
    // but then the node's PCIe host link (24 GB/s) binds: 2.048e9 / 24e9 s plus the 3.2 us
    // latency. The upload (flow 5) is emptied so that it does not share node 1's host link.
    let faster = end(&[
        "--set",
        "platform.node.nic.bandwidth=25GB/s",
        "--set",
        "platform.network.bandwidth=25GB/s",
        "--set",
        "workload.5.size=0",
    ]);
    assert!(
        (faster - (2.048e9 / 24e9 + 3.2e-6)).abs() < 1e-9,
        "{faster}"
    );
    // Without contention every remote flow runs alone at its route's bottleneck (12 GB/s).
    let alone = end(&["--disable", "contention"]);
    assert!(alone < base && faster < base, "{alone} {faster} {base}");
}

#[test]
fn systems_lists_every_switch() {
    let o = hetsim(&["systems"], &repo());
    assert!(o.status.success());
    let text = String::from_utf8_lossy(&o.stdout);
    assert!(
        text.lines()
            .any(|l| l.starts_with("contention") && l.contains("on")),
        "{text}"
    );
}

#[test]
fn systems_fits_a_terminal_and_keeps_the_long_forms_for_long() {
    // Issue 56: the runtime's text was one line of 4,142 characters.
    let o = hetsim(&["systems"], &repo());
    let short = String::from_utf8_lossy(&o.stdout).to_string();
    assert!(short.lines().all(|l| l.chars().count() <= 100), "{short}");
    let runtime: Vec<&str> = short
        .lines()
        .skip_while(|l| !l.starts_with("runtime "))
        .take_while(|l| !l.is_empty())
        .collect();
    assert!((1..=8).contains(&runtime.len()), "{runtime:?}");
    assert!(short.contains("hetsim systems --long"), "{short}");
    let o = hetsim(&["systems", "--long"], &repo());
    let long = String::from_utf8_lossy(&o.stdout).to_string();
    assert!(long.lines().all(|l| l.chars().count() <= 100));
    // The long form's details are there, and only there.
    assert!(long.contains("prefetch pins") && !short.contains("prefetch pins"));
}

#[test]
fn gpus_per_node_set_alone_names_the_fields_that_must_follow() {
    // Issue 56: `--set platform.node.gpus=8` on the halo what-if changed nothing (the job
    // fixes 4 GPUs per node and 8 ranks) and said nothing.
    let tmp = tempfile::tempdir().unwrap();
    let halo = repo().join("scenarios/whatif/halo.ron");
    let halo = halo.to_str().unwrap();
    let o = hetsim(
        &["run", halo, "--set", "platform.node.gpus=8", "--out", "o"],
        tmp.path(),
    );
    assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
    let e = stderr(&o);
    assert!(
        e.contains("workload.Mpi.gpus_per_node = 4 and workload.Mpi.ranks = 8")
            && e.contains("--set workload.Mpi.gpus_per_node=8 --set workload.Mpi.ranks=16"),
        "{e}"
    );
    // With the job following (the README's six-GPU question), or the variant spelled out,
    // it runs.
    for sets in [
        &[
            "platform.node.gpus=6",
            "workload.Mpi.gpus_per_node=6",
            "workload.Mpi.ranks=12",
        ][..],
        &["platform.Cluster.node.gpus=4"][..],
    ] {
        let mut args = vec!["run", halo, "--quiet", "--out", "o"];
        for s in sets {
            args.extend(["--set", s]);
        }
        let o = hetsim(&args, tmp.path());
        assert!(o.status.success(), "{sets:?}: {}", stderr(&o));
    }
}

#[test]
fn validate_accepts_the_shipped_scenarios() {
    for f in [
        "scenarios/demo.ron",
        "scenarios/lassen-shared-nic.ron",
        "scenarios/whatif/halo.ron",
        "scenarios/whatif/allreduce.ron",
        "scenarios/whatif/cholesky.ron",
        "scenarios/studies/nccl-superpod.ron",
    ] {
        let o = hetsim(&["validate", f], &repo());
        assert!(o.status.success(), "{f}: {}", stderr(&o));
    }
}

#[test]
fn help_leads_with_the_four_questions_and_their_commands() {
    let o = hetsim(&["--help"], &repo());
    assert!(o.status.success());
    let text = String::from_utf8_lossy(&o.stdout);
    let usage = text.find("Usage:").unwrap();
    for q in [
        "What if we used GPUDirect instead of staging through host memory?",
        "What if we put six GPUs per node instead of four?",
        "What if NCCL used a tree instead of a ring?",
        "What if StarPU scheduled with dmdas instead of dmda?",
    ] {
        let at = text
            .find(q)
            .unwrap_or_else(|| panic!("{q} missing: {text}"));
        assert!(at < usage, "{q} comes before the usage");
    }
    // Each command the help gives names a file that exists.
    for word in text[..usage].split_whitespace() {
        if word.starts_with("scenarios/") {
            assert!(repo().join(word).is_file(), "{word}");
        }
    }
}

/// Writes `text` as a scenario, runs it, and expects exit code 2, no output files and an
/// error that mentions every `expect` fragment.
fn rejects(text: &str, extra: &[&str], expect: &[&str]) {
    let tmp = tempfile::tempdir().unwrap();
    let file = tmp.path().join("bad.ron");
    std::fs::write(&file, text).unwrap();
    let mut args = vec!["run", "bad.ron", "--quiet", "--out", "out"];
    args.extend_from_slice(extra);
    let o = hetsim(&args, tmp.path());
    assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
    assert!(!tmp.path().join("out").exists(), "no output on bad input");
    let e = stderr(&o);
    for frag in expect {
        assert!(e.contains(frag), "error lacks `{frag}`: {e}");
    }
    assert!(!e.contains("panicked"), "{e}");
}

const GOOD: &str = r#"Scenario(
    name: "bad",
    platform: Cluster(
        nodes: 2,
        node: NodeSpec(gpus: 2),
        network: Star(bandwidth: "12.5GB/s", latency: "1us"),
    ),
    workload: Flows([FlowSpec(src: "node[0].gpu[0]", dst: "node[1].gpu[1]", size: "1MB")]),
)"#;

/// [`GOOD`] with another workload.
fn with_workload(workload: &str) -> String {
    let flows = r#"workload: Flows([FlowSpec(src: "node[0].gpu[0]", dst: "node[1].gpu[1]", size: "1MB")]),"#;
    assert!(GOOD.contains(flows));
    GOOD.replace(flows, &format!("workload: {workload},"))
}

#[test]
fn malformed_ron_is_rejected_with_its_position() {
    rejects(
        &GOOD.replace("nodes: 2,", "nodes: 2"),
        &[],
        &["bad.ron:", "platform"],
    );
}

#[test]
fn unknown_field_is_rejected_with_its_path() {
    rejects(
        &GOOD.replace("gpus: 2", "gpus: 2, gpsu: 3"),
        &[],
        &["bad.ron", "platform.Cluster.node", "gpsu"],
    );
}

#[test]
fn zero_or_negative_bandwidth_is_rejected() {
    // Refused as the file is read (issue 52: a number and a number with a unit alike).
    rejects(
        &GOOD.replace("\"12.5GB/s\"", "0"),
        &[],
        &[
            "bad.ron:6:",
            "platform.Cluster.network.Star.bandwidth",
            "above zero",
        ],
    );
    rejects(
        &GOOD.replace("\"12.5GB/s\"", "\"-5GB/s\""),
        &[],
        &["platform.Cluster.network.Star.bandwidth", "above zero"],
    );
}

#[test]
fn unknown_endpoint_is_rejected() {
    rejects(
        &GOOD.replace("node[1].gpu[1]", "node[1].gpu[7]"),
        &[],
        &["workload.Flows[0].dst", "GPU 7"],
    );
    rejects(
        &GOOD.replace("node[1].gpu[1]", "node[9].host"),
        &[],
        &["workload.Flows[0].dst", "node 9"],
    );
}

#[test]
fn unroutable_pair_is_rejected() {
    rejects(
        &GOOD.replace("Star(bandwidth: \"12.5GB/s\", latency: \"1us\")", "None"),
        &[],
        &["unroutable", "no network"],
    );
}

#[test]
fn bad_overrides_and_switches_are_rejected() {
    rejects(
        GOOD,
        &["--set", "platform.node.colour=red"],
        &["--set", "colour"],
    );
    rejects(GOOD, &["--disable", "gravity"], &["gravity", "contention"]);
}

#[test]
fn flow_case_with_unknown_link_is_rejected() {
    let tmp = tempfile::tempdir().unwrap();
    let case = tmp.path().join("case.json");
    std::fs::write(&case, r#"{"links": [{"id": "l0", "bandwidth": 1e9}], "flows": [{"id": "f0", "route": ["l0", "l9"], "size": 10}]}"#).unwrap();
    let o = hetsim(&["flows", case.to_str().unwrap()], tmp.path());
    assert_eq!(o.status.code(), Some(2));
    assert!(stderr(&o).contains("unknown link `l9`"), "{}", stderr(&o));
    assert!(o.stdout.is_empty());
    std::fs::write(
        &case,
        r#"{"links": [{"id": "l0", "bandwidth": -1}], "flows": []}"#,
    )
    .unwrap();
    let o = hetsim(&["flows", case.to_str().unwrap()], tmp.path());
    assert_eq!(o.status.code(), Some(2));
    assert!(stderr(&o).contains("links[0].bandwidth"), "{}", stderr(&o));
}

#[test]
fn limits_stop_a_run_with_exit_code_1_and_no_outputs() {
    let tmp = tempfile::tempdir().unwrap();
    let demo = repo().join("scenarios/demo.ron");
    for limit in ["limits.max_events=3", "limits.max_time=1ms"] {
        let o = hetsim(
            &[
                "run",
                demo.to_str().unwrap(),
                "--quiet",
                "--out",
                "o",
                "--set",
                limit,
            ],
            tmp.path(),
        );
        assert_eq!(o.status.code(), Some(1), "{limit}: {}", stderr(&o));
        assert!(stderr(&o).contains("limit reached"), "{}", stderr(&o));
        if limit.contains("events") {
            // Five flows start at 0: the limit stops delivery at 3, inside that step.
            assert!(stderr(&o).contains("after 3 events"), "{}", stderr(&o));
        }
        assert!(!tmp.path().join("o").exists());
    }
}

/// `network_model.quantum`: flows join and leave the sharing only at multiples of it.
#[test]
fn a_quantum_defers_joins_and_ends_to_its_grid() {
    let tmp = tempfile::tempdir().unwrap();
    let text = r#"Scenario(
    name: "quantum",
    platform: Explicit(links: [NamedLink(name: "l0", bandwidth: "1GB/s", latency: "1us")]),
    workload: Flows([
        FlowSpec(id: Some("a"), route: Some(["l0"]), size: "500MB"),
        FlowSpec(id: Some("b"), route: Some(["l0"]), size: "1GB"),
    ]),
)"#;
    std::fs::write(tmp.path().join("q.ron"), text).unwrap();
    let ends = |extra: &[&str]| -> Vec<f64> {
        let mut args = vec!["run", "q.ron", "--quiet", "--out", "o"];
        args.extend_from_slice(extra);
        let o = hetsim(&args, tmp.path());
        assert!(o.status.success(), "{}", stderr(&o));
        let rows = read_csv(&tmp.path().join("o/flows.csv"));
        rows[1..].iter().map(|r| r[5].parse().unwrap()).collect()
    };
    // Exact (the reference notes' case b plus 1 us of latency): both share 1 GB/s, a ends at
    // 1e-6 + 5e8 / 5e8 s, then b runs alone: 1e-6 + 1.5 s.
    let exact = ends(&[]);
    assert!((exact[0] - 1.000001).abs() < 1e-12, "{exact:?}");
    assert!((exact[1] - 1.500001).abs() < 1e-12, "{exact:?}");
    // Quantum 0.3 ms: both join at 0.3 ms; a's last byte is through at 1.0003 s and it leaves
    // at the next multiple, 1.0005 s, holding half the link until then; b has then moved
    // 5e8 * 1.0002 B, its remaining 4.999e8 B take 0.4999 s alone: 1.5004 s, rounded up to
    // 1.5006 s.
    let q = ends(&["--set", "network_model.quantum=0.3ms"]);
    assert!((q[0] - 1.0005).abs() < 1e-12, "{q:?}");
    assert!((q[1] - 1.5006).abs() < 1e-12, "{q:?}");
}

/// A route that lists a link twice loads it twice, as SimGrid 3.32 does (tools/simgrid/run.sh
/// prints its answers for this platform): at 1 GB/s, 1 GB over [L, L] or [L, M, L] alone takes
/// 2 s; next to 1 GB over [L], both take 3 s (the level x fills L at 2x + x = 1 GB/s). A flow
/// case (JSON) counts the repeat once, as its format says: 1 GB over [L, L] alone takes 1 s.
#[test]
fn a_link_listed_twice_is_loaded_twice_as_in_simgrid() {
    let tmp = tempfile::tempdir().unwrap();
    let scenario = |flows: &str| {
        format!(
            r#"Scenario(
    name: "duplicate-link",
    platform: Explicit(links: [NamedLink(name: "L", bandwidth: "1GB/s", sharing: Shared),
                               NamedLink(name: "M", bandwidth: "1GB/s", sharing: Shared)]),
    workload: Flows([{flows}]),
)"#
        )
    };
    let ends = |flows: &str| -> Vec<f64> {
        std::fs::write(tmp.path().join("d.ron"), scenario(flows)).unwrap();
        let o = hetsim(&["run", "d.ron", "--quiet", "--out", "o"], tmp.path());
        assert!(o.status.success(), "{}", stderr(&o));
        let rows = read_csv(&tmp.path().join("o/flows.csv"));
        rows[1..].iter().map(|r| r[5].parse().unwrap()).collect()
    };
    let dup = r#"FlowSpec(id: Some("d"), route: Some(["L", "L"]), size: "1GB")"#;
    let split = r#"FlowSpec(id: Some("s"), route: Some(["L", "M", "L"]), size: "1GB")"#;
    let single = r#"FlowSpec(id: Some("b"), route: Some(["L"]), size: "1GB")"#;
    assert_eq!(ends(dup), [2.0]);
    assert_eq!(ends(split), [2.0]);
    let both = ends(&format!("{dup}, {single}"));
    assert!(both.iter().all(|t| (t - 3.0).abs() < 1e-9), "{both:?}");

    let case = r#"{"links": [{"id": "L", "bandwidth": 1e9, "sharing": "shared"},
                             {"id": "S", "bandwidth": 1e9, "sharing": "split-duplex"}],
                   "flows": [{"id": "d", "route": ["L", "L:down"], "size": 1000000000},
                             {"id": "s", "route": ["S:up", "S:down"], "size": 1000000000}]}"#;
    std::fs::write(tmp.path().join("c.json"), case).unwrap();
    let o = hetsim(&["flows", "c.json"], tmp.path());
    let got: serde_json::Value = serde_json::from_str(&ok(&o)).unwrap();
    assert_eq!(got["flows"]["d"].as_f64(), Some(1.0), "{got}");
    assert_eq!(got["flows"]["s"].as_f64(), Some(1.0), "{got}");
}

/// Each workload's first line says its result: a task graph its scheduler, makespan and
/// GFlop/s; MPI its communication share and slowest rank; NCCL each operation's time and busbw.
#[test]
fn each_workload_says_its_result_first() {
    let tmp = tempfile::tempdir().unwrap();
    let cases = [
        (
            "cholesky-attila.ron",
            "cholesky-attila: dmdas ran 1540 tasks in ",
            " GFlop/s on 3 GPUs + 8 CPUs",
        ),
        (
            "mpi-trace.ron",
            "mpi-trace: communication is ",
            "% of run time (mean of 8 ranks); the slowest, rank ",
        ),
        (
            "dgx-a100-training.ron",
            "dgx-a100-training: all_reduce of 512 MiB on 8 GPUs: ",
            " each (12 calls), busbw ",
        ),
        (
            "lassen-shared-nic.ron",
            "lassen-shared-nic: 40 flows move 4.096 GB in ",
            "; busiest link ",
        ),
    ];
    for (file, start, inside) in cases {
        let scenario = repo().join("scenarios").join(file);
        let o = hetsim(
            &[
                "run",
                scenario.to_str().unwrap(),
                "--disable",
                "record",
                "--out",
                file,
            ],
            tmp.path(),
        );
        assert!(o.status.success(), "{file}: {}", stderr(&o));
        let stdout = String::from_utf8_lossy(&o.stdout);
        let first = stdout.lines().next().unwrap_or_default();
        assert!(
            first.starts_with(start) && first.contains(inside),
            "{first}"
        );
    }
}

/// Simulated time has no practical ceiling (it used to end at 18,446.744 s) and a time beyond
/// its range is an error, never a clamped result.
#[test]
fn long_runs_are_exact_and_times_out_of_range_are_errors() {
    let tmp = tempfile::tempdir().unwrap();
    let case = |name: &str, text: &str| {
        let path = tmp.path().join(name);
        std::fs::write(&path, text).unwrap();
        hetsim(&["flows", path.to_str().unwrap()], tmp.path())
    };
    // 1e5 B and 2e5 B share a 1 B/s link: the first ends at 2e5 s (half the link each), the
    // second has 1e5 B left and the whole link: 3e5 s (max-min by hand).
    let o = case(
        "slow.json",
        r#"{"links": [{"id": "l0", "bandwidth": 1, "latency": 0}],
            "flows": [{"id": "a", "size": 1e5, "route": ["l0"]}, {"id": "b", "size": 2e5, "route": ["l0"]}]}"#,
    );
    assert!(o.status.success(), "{}", stderr(&o));
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    assert_eq!(v["flows"]["a"], 200000.0);
    assert_eq!(v["flows"]["b"], 300000.0);
    // A year of transfer: 3.1536e7 B at 1 B/s.
    let o = case(
        "year.json",
        r#"{"links": [{"id": "l0", "bandwidth": 1, "latency": 0}],
            "flows": [{"id": "a", "size": 31536000, "route": ["l0"]}]}"#,
    );
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    assert_eq!(v["flows"]["a"], 31536000.0);
    // A link of 1e-300 B/s would take 1e305 s alone: an input error naming the size, before
    // the run.
    let o = case(
        "tiny.json",
        r#"{"links": [{"id": "l0", "bandwidth": 1e-300, "latency": 0}],
            "flows": [{"id": "a", "size": 1e5, "route": ["l0"]}]}"#,
    );
    assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
    assert!(o.stdout.is_empty());
    let e = stderr(&o);
    // Named in the case's own terms (issue 52).
    assert!(
        e.contains("tiny.json: field `flows[0].size`") && e.contains("beyond"),
        "{e}"
    );
    // Work that alone would end past the range: input errors at their field or line.
    rejects(
        &with_workload(r#"Cuda(program: [Kernel(flops: 1e40)])"#),
        &[],
        &["workload.Cuda.program[0].Kernel", "beyond"],
    );
    rejects(
        &with_workload(
            r#"Mpi(ranks: 2, gpus_per_node: 1, program: TraceText([("t.ti", "0 compute 1e40\n1 compute 5")]))"#,
        ),
        &[],
        &["t.ti:1 (compute)", "beyond"],
    );
    rejects(
        &GOOD.replace(r#"size: "1MB""#, r#"size: "1e30B""#),
        &[],
        &["workload.Flows[0].size", "beyond"],
    );
    // Two flows of 1e9 B on 1 B/s fit alone (1e9 s of the 1.2e9 s range) but not together
    // (2e9 s): the run finds it and stops, as bad input naming the slow link, no result.
    let o = case(
        "shared.json",
        r#"{"links": [{"id": "l0", "bandwidth": 1, "latency": 0}],
            "flows": [{"id": "a", "size": 1e9, "route": ["l0"]},
                      {"id": "b", "size": 1e9, "route": ["l0"]}]}"#,
    );
    assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
    assert!(o.stdout.is_empty());
    let e = stderr(&o);
    assert!(e.contains("simulated time out of range"), "{e}");
    assert!(
        e.contains("lowest bandwidth: links[0].bandwidth = 1 B/s"),
        "{e}"
    );
    assert!(
        !e.contains("longest duration"),
        "a zero duration sets no pace: {e}"
    );
}

/// A scenario file names its results folder: it cannot make a run write outside `results/`
/// (or above the working folder), and a rerun leaves no stale outputs of the previous one.
#[test]
fn a_scenario_cannot_write_outside_its_results_folder() {
    for name in ["/tmp/abs", "../../x", ".hidden", "a/b", ""] {
        rejects(
            &GOOD.replace(r#"name: "bad""#, &format!("name: {name:?}")),
            &[],
            &["bad.ron", "name", "plain name"],
        );
    }
    for dir in ["/tmp/x", "../x", "a/../../x"] {
        rejects(
            &GOOD.replace(
                "workload:",
                &format!("output: OutputSpec(dir: Some({dir:?})),\n    workload:"),
            ),
            &[],
            &["bad.ron", "output.dir", "relative folder"],
        );
    }
}

#[test]
fn a_rerun_with_fewer_outputs_leaves_no_stale_files() {
    let tmp = tempfile::tempdir().unwrap();
    let demo = repo().join("scenarios/demo.ron");
    let demo = demo.to_str().unwrap();
    let o = hetsim(&["run", demo, "--quiet", "--out", "o"], tmp.path());
    assert!(o.status.success(), "{}", stderr(&o));
    assert!(tmp.path().join("o/timeline.png").is_file());
    std::fs::write(tmp.path().join("o/mine.txt"), "kept").unwrap();
    let o = hetsim(
        &["run", demo, "--quiet", "--out", "o", "--disable", "record"],
        tmp.path(),
    );
    assert!(o.status.success(), "{}", stderr(&o));
    let mut names: Vec<String> = std::fs::read_dir(tmp.path().join("o"))
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    names.sort();
    assert_eq!(
        names,
        [
            ".hetsim-lock",
            ".hetsim-outputs",
            "flows.csv",
            "links.csv",
            "mine.txt",
            "summary.json"
        ]
    );
}

#[test]
fn an_output_folder_that_would_make_a_run_write_elsewhere_or_in_part_is_refused_whole() {
    // Issue 52: a lock that is a link to another file was truncated through the link; an
    // output name taken by a folder stopped the publication after the other files moved.
    let tmp = tempfile::tempdir().unwrap();
    let demo = repo().join("scenarios/demo.ron");
    let demo = demo.to_str().unwrap();
    let out = tmp.path().join("o");
    std::fs::create_dir(&out).unwrap();
    let victim = tmp.path().join("victim.txt");
    std::fs::write(&victim, "precious").unwrap();
    std::os::unix::fs::symlink(&victim, out.join(".hetsim-lock")).unwrap();
    let o = hetsim(&["run", demo, "--quiet", "--out", "o"], tmp.path());
    assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
    assert!(
        stderr(&o).contains(".hetsim-lock is not a plain file"),
        "{}",
        stderr(&o)
    );
    assert_eq!(std::fs::read_to_string(&victim).unwrap(), "precious");
    std::fs::remove_file(out.join(".hetsim-lock")).unwrap();
    // A folder where summary.json goes: nothing at all is published.
    std::fs::create_dir(out.join("summary.json")).unwrap();
    let o = hetsim(&["run", demo, "--quiet", "--out", "o"], tmp.path());
    assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
    assert!(stderr(&o).contains("summary.json exists and is not a file; nothing was written"));
    let mut names: Vec<String> = std::fs::read_dir(&out)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    names.sort();
    assert_eq!(names, [".hetsim-lock", "summary.json"]);
}

/// The state of an output folder: its visible files, sorted, after checking that they are
/// exactly what its manifest lists and that no staging folder is left.
fn published(dir: &Path) -> Vec<String> {
    let mut files = Vec::new();
    for e in std::fs::read_dir(dir).unwrap() {
        let name = e.unwrap().file_name().to_string_lossy().into_owned();
        assert!(!name.starts_with(".hetsim-staging-"), "litter: {name}");
        if !name.starts_with('.') {
            files.push(name);
        }
    }
    files.sort();
    let manifest = std::fs::read_to_string(dir.join(".hetsim-outputs")).unwrap();
    let mut listed: Vec<String> = manifest.lines().map(String::from).collect();
    listed.sort();
    assert_eq!(files, listed, "the files are the manifest's");
    files
}

/// A folder's summary.json without its wall-clock time (the one line that differs between
/// two runs of one scenario).
fn summary(dir: &Path) -> String {
    std::fs::read_to_string(dir.join("summary.json"))
        .unwrap()
        .lines()
        .filter(|l| !l.contains("\"wall_s\""))
        .collect()
}

/// What a run published in `dir`: its files and its summary.
fn outputs(dir: &Path) -> (Vec<String>, String) {
    (published(dir), summary(dir))
}

/// Starts `hetsim run SCENARIO --quiet --out o` in `cwd`, its stderr kept off the test's.
fn spawn_run(scenario: &str, cwd: &Path) -> std::process::Child {
    Command::new(env!("CARGO_BIN_EXE_hetsim"))
        .args(["run", scenario, "--quiet", "--out", "o"])
        .current_dir(cwd)
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap()
}

/// Each scenario's files and summary when run alone into a folder.
fn reference_outputs(scenarios: &[&str]) -> Vec<(Vec<String>, String)> {
    let tmp = tempfile::tempdir().unwrap();
    scenarios
        .iter()
        .map(|s| {
            let o = hetsim(&["run", s, "--quiet", "--out", "o"], tmp.path());
            assert!(o.status.success(), "{}", stderr(&o));
            let state = outputs(&tmp.path().join("o"));
            std::fs::remove_dir_all(tmp.path().join("o")).unwrap();
            state
        })
        .collect()
}

#[test]
fn an_interrupt_leaves_the_previous_outputs_or_the_new_ones_and_no_litter() {
    let demo = repo().join("scenarios/demo.ron");
    let lu = repo().join("scenarios/lu-attila.ron");
    let (demo, lu) = (demo.to_str().unwrap(), lu.to_str().unwrap());
    let refs = reference_outputs(&[demo, lu]);
    let tmp = tempfile::tempdir().unwrap();
    let run = |s: &str| spawn_run(s, tmp.path());
    // How long the LU run takes here, so the interrupts spread over all of it, the output
    // writing included.
    let started = std::time::Instant::now();
    assert!(run(lu).wait().unwrap().success());
    let whole = started.elapsed();
    let mut interrupted_before_publication = 0;
    for k in 0..12u32 {
        assert!(run(demo).wait().unwrap().success());
        assert_eq!(published(&tmp.path().join("o")), refs[0].0);
        let mut child = run(lu);
        std::thread::sleep(whole * k / 10);
        let _ = Command::new("kill")
            .args(["-INT", &child.id().to_string()])
            .status();
        let code = child.wait().unwrap().code();
        let state = outputs(&tmp.path().join("o"));
        // No code: the signal came before the handler was set, and the default action ended
        // the process before it wrote anything. 130: interrupted, either before the
        // publication (the folder as it was) or after it (the new run's, whole); never a mix.
        match code {
            None => assert_eq!(state, refs[0], "killed at start: as before"),
            Some(130) => assert!(refs.contains(&state), "interrupted: one run's files"),
            Some(0) => assert_eq!(state, refs[1], "finished: the new run's"),
            other => panic!("exit {other:?} after an interrupt"),
        }
        if code == Some(130) && state == refs[0] {
            interrupted_before_publication += 1;
        }
    }
    assert!(
        interrupted_before_publication > 0,
        "some interrupts came in time"
    );
}

#[test]
fn concurrent_runs_into_one_folder_leave_one_runs_files() {
    let demo = repo().join("scenarios/demo.ron");
    let lu = repo().join("scenarios/lu-attila.ron");
    let (demo, lu) = (demo.to_str().unwrap(), lu.to_str().unwrap());
    let refs = reference_outputs(&[demo, lu]);
    let tmp = tempfile::tempdir().unwrap();
    for _ in 0..4 {
        let children: Vec<_> = [lu, demo, lu, demo]
            .iter()
            .map(|s| spawn_run(s, tmp.path()))
            .collect();
        for mut c in children {
            assert!(c.wait().unwrap().success());
        }
        let state = outputs(&tmp.path().join("o"));
        assert!(
            refs.contains(&state),
            "one run's files and summary, not a mix: {:?}",
            state.0
        );
    }
}

#[test]
fn a_byte_order_mark_is_read_and_a_picture_width_is_checked_at_load() {
    let tmp = tempfile::tempdir().unwrap();
    std::fs::write(tmp.path().join("bom.ron"), format!("\u{feff}{GOOD}")).unwrap();
    let o = hetsim(&["validate", "bom.ron"], tmp.path());
    assert!(o.status.success(), "{}", stderr(&o));
    for width in ["0", "4000000000"] {
        rejects(
            GOOD,
            &["--set", &format!("output.width={width}")],
            &["output.width", "pixels"],
        );
    }
}

/// Indices, counts and sizes are checked against the platform and the workload before
/// anything runs: an input error names the file and the field, never a run with some other
/// peer, endpoint or count.
#[test]
fn indices_counts_and_sizes_are_checked_before_the_run() {
    let flows = |src: &str, dst: &str| {
        with_workload(&format!(
            r#"Flows([FlowSpec(src: "{src}", dst: "{dst}", size: "1MB")])"#
        ))
    };
    rejects(
        &flows("node[0].cpu[100000]", "node[1].gpu[0]"),
        &[],
        &["bad.ron", "workload.Flows[0].src", "CPU core 100000"],
    );
    rejects(
        &flows("node[0].gpu[0]", "node[0].gpu[0]"),
        &[],
        &["workload.Flows[0]", "crosses no link"],
    );
    rejects(
        &GOOD.replace(r#"size: "1MB""#, r#"size: "-1B""#),
        &[],
        &["size", "non-negative"],
    );
    let mpi = |generator: &str| {
        with_workload(&format!(
            "Mpi(ranks: 4, gpus_per_node: 2, program: Generator({generator}))"
        ))
    };
    for (generator, field) in [
        (
            r#"Halo3d(iterations: 0, compute: "1ms")"#,
            "Halo3d.iterations",
        ),
        (
            r#"Sweep(iterations: 1, blocks: 0, compute: "1ms")"#,
            "Sweep.blocks",
        ),
        (
            r#"Solver(iterations: 1, levels: 0, compute: "1ms")"#,
            "Solver.levels",
        ),
    ] {
        rejects(&mpi(generator), &[], &["bad.ron", field, "at least 1"]);
    }
    let cuda = |op: &str| with_workload(&format!("Cuda(program: [{op}])"));
    for (op, field) in [
        (
            r#"Copy(kind: Peer(99), bytes: "1MB")"#,
            "program[0].Copy.kind.Peer",
        ),
        (
            r#"Copy(kind: Peer(-5), bytes: "1MB")"#,
            "program[0].Copy.kind.Peer",
        ),
        (
            r#"Copy(kind: Peer(0), bytes: "1MB")"#,
            "program[0].Copy.kind.Peer",
        ),
        (
            r#"Nccl(op: SendRecv, bytes: "1MB", peer: 99)"#,
            "program[0].Nccl.peer",
        ),
        (
            r#"Nccl(op: Broadcast, bytes: "1MB", root: 4)"#,
            "program[0].Nccl.root",
        ),
        (
            r#"Kernel(stream: 4000000000, time: "1ms")"#,
            "stream 4000000000",
        ),
        (
            r#"Launch(stream: 0, graph: "g")"#,
            "program[0].Launch.graph: `g` is not captured",
        ),
        (
            r#"Capture(graph: "g", ops: []), Launch(stream: 0, graph: "g", times: 0)"#,
            "program[1].Launch.times",
        ),
    ] {
        rejects(&cuda(op), &[], &["bad.ron", field]);
    }
    let kernel = r#"[Kernel(time: "1ms")]"#;
    for (spec, field) in [
        (
            format!("Cuda(nccl: (net_efficiency: 0), program: {kernel})"),
            "workload.Cuda.nccl.net_efficiency",
        ),
        (
            format!("Cuda(nccl: (nvlink_efficiency: 1.5), program: {kernel})"),
            "workload.Cuda.nccl.nvlink_efficiency",
        ),
        (
            format!("Cuda(nccl: (channels: 4000000000), program: {kernel})"),
            "workload.Cuda.nccl.channels",
        ),
        (
            format!("Cuda(repeat: 0, program: {kernel})"),
            "workload.Cuda.repeat",
        ),
    ] {
        rejects(&with_workload(&spec), &[], &["bad.ron", field]);
    }
}

/// Inputs that ask for too much are refused before anything is built, naming the field, the
/// estimate and the limit (limits.max_memory, default half of this machine's memory); an
/// included file must be a regular file.
#[test]
fn budgets_are_checked_before_work_and_inputs_are_regular_files() {
    let demo = repo().join("scenarios/demo.ron");
    let lassen = repo().join("scenarios/lassen-shared-nic.ron");
    let chol = repo().join("scenarios/cholesky-attila.ron");
    let halo = repo().join("scenarios/studies/halo3d.ron");
    let cases: [(&std::path::Path, &[&str], &str); 5] = [
        (&demo, &["platform.nodes=100000000"], "platform.nodes"),
        // A billion time steps of 8 ranks are some 1e11 messages, each one kept in the
        // run's records.
        (
            &halo,
            &[
                "workload.Mpi.program.Generator.Halo3d.iterations=1000000000",
                "workload.Mpi.ranks=8",
            ],
            "workload.Mpi.program.Generator.Halo3d.iterations",
        ),
        (
            &lassen,
            &["platform.network.taper=1e-300"],
            "platform.network",
        ),
        (
            &chol,
            &["workload.n=4000000000", "workload.tile=1"],
            "workload.Cholesky.n",
        ),
        // 50 x 50 tiles are 23,380 tasks: more than 1 MB.
        (
            &chol,
            &["workload.n=48000", "limits.max_memory=1MB"],
            "workload.Cholesky.n",
        ),
    ];
    let tmp = tempfile::tempdir().unwrap();
    for (file, sets, field) in cases {
        let mut args = vec!["run", file.to_str().unwrap(), "--out", "o"];
        for s in sets {
            args.extend(["--set", s]);
        }
        let o = hetsim(&args, tmp.path());
        assert_eq!(o.status.code(), Some(2), "{sets:?}: {}", stderr(&o));
        let e = stderr(&o);
        assert!(
            e.contains(field) && e.contains("limits.max_memory") && e.contains("GiB"),
            "{e}"
        );
        assert!(!tmp.path().join("o").exists());
    }
    // A platform file that is a device is refused at once (it used to be read forever).
    std::fs::write(
        tmp.path().join("dev.ron"),
        std::fs::read_to_string(&demo)
            .unwrap()
            .replace(r#"Named("demo-2node")"#, r#"File("/dev/zero")"#),
    )
    .unwrap();
    if std::path::Path::new("/dev/zero").exists() {
        let o = hetsim(&["validate", "dev.ron"], tmp.path());
        assert_eq!(o.status.code(), Some(2));
        assert!(stderr(&o).contains("not a regular file"), "{}", stderr(&o));
    }
}

/// A per-level value says what is wrong with the value, not only "one value, or a list".
#[test]
fn a_bad_per_level_value_says_what_is_wrong_with_it() {
    let lassen = repo().join("scenarios/lassen-shared-nic.ron");
    let o = hetsim(
        &[
            "validate",
            lassen.to_str().unwrap(),
            "--set",
            "platform.network.latency=-1ns",
        ],
        &repo(),
    );
    assert_eq!(o.status.code(), Some(2));
    assert!(
        stderr(&o).contains("network.FatTree.latency") && stderr(&o).contains("non-negative"),
        "{}",
        stderr(&o)
    );
}

#[test]
fn trace_stats_shows_what_a_trace_holds_and_refuses_a_bad_line() {
    // scenarios/traces/ring-8.ti: 8 ranks, each sending 256 KiB to its right neighbour in 3
    // phases, 3 allreduces of 64 KiB and a barrier (the file's lines).
    let o = hetsim(&["trace-stats", "scenarios/traces/ring-8.ti"], &repo());
    let out = common::ok(&o);
    for want in [
        "ranks: 8",
        "point-to-point: 24 messages, 6 MiB in all",
        "[256 KiB, 512 KiB)             24  100.0%",
        "partners per rank (distinct destinations): min 1, mean 1.0, max 1",
        "allreduce              24 calls (3 per rank), 1.5 MiB",
        "barrier                 8 calls (1 per rank)",
    ] {
        assert!(out.contains(want), "missing `{want}` in:\n{out}");
    }
    let tmp = tempfile::tempdir().unwrap();
    std::fs::write(tmp.path().join("bad.ti"), "0 send 1 8\n1 recv 0 eight\n").unwrap();
    let o = hetsim(&["trace-stats", "bad.ti"], tmp.path());
    assert_eq!(o.status.code(), Some(2));
    assert!(
        stderr(&o).contains("bad.ti:2: size `eight` is not a number"),
        "{}",
        stderr(&o)
    );
}

/// "What if the NIC were 2x faster?" on the halo exchange: the result names the bound (the
/// node's PCIe host bus, full whenever it carries anything) and says that the change missed
/// it; doubling that bus instead moves the bound to the NIC.
#[test]
fn a_run_names_its_busiest_link_and_a_set_that_missed_it() {
    let tmp = tempfile::tempdir().unwrap();
    let halo = repo().join("scenarios/whatif/halo.ron");
    let run = |set: &str| {
        let o = hetsim(
            &[
                "run",
                halo.to_str().unwrap(),
                "--disable",
                "record",
                "--set",
                set,
            ],
            tmp.path(),
        );
        assert!(o.status.success(), "{set}: {}", stderr(&o));
        String::from_utf8_lossy(&o.stdout).into_owned()
    };
    let nic = run("platform.node.nic.bandwidth=200Gb/s");
    assert!(
        nic.contains("whatif-halo: busiest link node[0].pcie, ")
            && nic.contains("at 100.0 % while busy\n")
            && nic.contains(
                "--set changed 2 links (node[0].nic[0], node[1].nic[0]); none of them is the busiest link, node[0].pcie\n"
            ),
        "{nic}"
    );
    let bus = run("platform.node.pcie.bus=48GB/s");
    assert!(
        bus.contains("whatif-halo: busiest link node[0].nic[0], ")
            && bus.contains("none of them is the busiest link, node[0].nic[0]\n"),
        "the NIC becomes the bound once the bus is doubled: {bus}"
    );
}

/// `validate` takes the switches `run` takes, and refuses an unknown one as `run` does.
#[test]
fn validate_checks_switches_too() {
    let tmp = tempfile::tempdir().unwrap();
    let demo = repo().join("scenarios/demo.ron");
    let demo = demo.to_str().unwrap();
    ok(&hetsim(
        &["validate", demo, "--disable", "contention"],
        tmp.path(),
    ));
    let o = hetsim(&["validate", demo, "--disable", "nosuch"], tmp.path());
    assert_eq!(o.status.code(), Some(2));
    assert!(
        stderr(&o).contains("--disable nosuch: unknown switch"),
        "{}",
        stderr(&o)
    );
}

/// A shipped scenario copied to another folder still runs (it names its platform), a copied
/// `File(...)` include that breaks says how to name the shipped platform, and the benchmarks
/// take a platform's name.
#[test]
fn shipped_platforms_are_found_by_name_from_any_folder() {
    let tmp = tempfile::tempdir().unwrap();
    let halo = std::fs::read_to_string(repo().join("scenarios/whatif/halo.ron")).unwrap();
    assert!(halo.contains(r#"platform: Named("demo-2node")"#));
    std::fs::write(tmp.path().join("halo.ron"), &halo).unwrap();
    let out = ok(&hetsim(&["run", "halo.ron", "-q"], tmp.path()));
    assert!(out.is_empty());
    let broken = halo.replace(
        r#"Named("demo-2node")"#,
        r#"File("../platforms/demo-2node.ron")"#,
    );
    // In a folder of its own, so that `../platforms/` is surely not there.
    std::fs::create_dir(tmp.path().join("mine")).unwrap();
    std::fs::write(tmp.path().join("mine/broken.ron"), broken).unwrap();
    let o = hetsim(&["validate", "mine/broken.ron"], tmp.path());
    assert_eq!(o.status.code(), Some(2));
    assert!(
        stderr(&o)
            .contains(r#"`demo-2node` is a shipped platform: write platform: Named("demo-2node")"#),
        "{}",
        stderr(&o)
    );
    let unknown = halo.replace(r#"Named("demo-2node")"#, r#"Named("dgx-z900")"#);
    std::fs::write(tmp.path().join("unknown.ron"), unknown).unwrap();
    let o = hetsim(&["validate", "unknown.ron"], tmp.path());
    assert!(stderr(&o).contains("no shipped platform `dgx-z900`; expected one of demo-2node, "));
    let table = ok(&hetsim(
        &[
            "nccl-tests",
            "--platform",
            "dgx-a100",
            "-e",
            "64K",
            "-n",
            "1",
            "--out",
            "nt",
        ],
        tmp.path(),
    ));
    assert!(
        table.contains("simulated by hetsim on dgx-a100 (8 GPUs)"),
        "{table}"
    );
}
