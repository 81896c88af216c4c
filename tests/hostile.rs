//! Hostile inputs, round two (issue 52), through the binary: each class of input that broke
//! the contract is refused as bad input (exit 2), with a message naming the file, field or
//! flag, and nothing written.

mod common;

use common::{hetsim, repo, stderr};
use std::path::Path;

/// Runs `hetsim ARGS` in `cwd`, which must refuse it as bad input; its message.
fn refused(args: &[&str], cwd: &Path) -> String {
    let o = hetsim(args, cwd);
    let err = stderr(&o);
    assert_eq!(o.status.code(), Some(2), "{args:?}: {err}");
    assert!(!err.contains("panicked"), "{args:?}: {err}");
    err
}

fn path(rel: &str) -> String {
    repo().join(rel).to_str().unwrap().to_string()
}

#[test]
fn a_platform_that_does_not_build_is_the_error_for_every_workload_on_it() {
    // 257 nodes do not fit the DGX cluster's two-level fat-tree of 16 x 16: the NCCL
    // workloads used to go on and panic on the missing topology.
    let tmp = tempfile::tempdir().unwrap();
    let nodes = "platform.nodes=257";
    let expected = "platform.nodes: 257 nodes do not fit a fat-tree";
    let study = path("scenarios/studies/nccl-allreduce.ron");
    let err = refused(&["run", &study, "--set", nodes, "--out", "o"], tmp.path());
    assert!(err.contains(expected), "{err}");
    let platform = path("scenarios/platforms/dgx-h100-cluster.ron");
    let err = refused(
        &[
            "nccl-tests",
            "--platform",
            &platform,
            "--set",
            nodes,
            "-g",
            "8",
            "-e",
            "1M",
            "--out",
            "o",
        ],
        tmp.path(),
    );
    assert!(err.contains(expected), "{err}");
    assert!(!tmp.path().join("o").exists());
}

/// A one-GPU DAG of two tasks under dmda, its text changed by `edit`: its path.
fn dag_scenario(dir: &Path, edit: impl Fn(String) -> String) -> String {
    let text = r#"Scenario(
    name: "dag-hostile",
    platform: Cluster(
        nodes: 1,
        node: NodeSpec(
            cpu_cores: 2,
            gpus: 1,
            gpu: GpuSpec(name: "G", memory: "16GiB", speed: "10TFlop/s"),
            pcie: PcieSpec(up: "10GB/s", down: "10GB/s", bus: "100GB/s", latency: "0us"),
            nics: 1,
            nic: NicSpec(bandwidth: "100GB/s", latency: "0us"),
        ),
        network: Star(bandwidth: "100GB/s", latency: "0us"),
    ),
    workload: Dag(
        handles: [(name: "x", size: 1e6)],
        tasks: [
            (name: "a", codelet: "k", accesses: [("x", RW)], flops: 1e9),
            (name: "b", codelet: "k", accesses: [("x", R)], flops: 1e9),
        ],
    ),
    runtime: RuntimeSpec(
        scheduler: dmda,
        models: {"k": CodeletModel(cuda: Some(Power(a: 2.0, b: 0.5)), cpu: Some(Constant("1ms")))},
    ),
)"#;
    let path = dir.join("dag.ron");
    std::fs::write(&path, edit(text.to_string())).unwrap();
    path.to_str().unwrap().to_string()
}

#[test]
fn numbers_out_of_range_in_a_task_graph_are_refused_not_run_as_zero() {
    let tmp = tempfile::tempdir().unwrap();
    let run = |edit: &dyn Fn(String) -> String| {
        let file = dag_scenario(tmp.path(), edit);
        refused(&["run", &file, "--quiet", "--out", "o"], tmp.path())
    };
    // dm* policies panicked on weights that are not finite.
    for (name, value) in [("alpha", "inf"), ("beta", "NaN"), ("alpha", "-1.0")] {
        let err = run(&|t| {
            t.replace(
                "scheduler: dmda,",
                &format!("scheduler: dmda, {name}: {value},"),
            )
        });
        assert!(
            err.contains(&format!("runtime.{name}: expected a finite weight")),
            "{err}"
        );
    }
    // A model giving a negative, NaN or infinite time ran the task in no time (or panicked).
    for a in ["-2.0", "NaN", "inf"] {
        let err = run(&|t| t.replace("a: 2.0", &format!("a: {a}")));
        assert!(
            err.contains("task a (k): its model on Cuda(0) gives"),
            "{err}"
        );
        assert!(
            err.contains("expected finite times of zero or more"),
            "{err}"
        );
    }
    // Negative flops gave a negative GFlop/s.
    let err = run(&|t| t.replacen("flops: 1e9", "flops: -1e9", 1));
    assert!(
        err.contains("workload.Dag: tasks[0].flops: expected a finite count"),
        "{err}"
    );
    // A GPU speed of -1 or 0 (or NaN in the file) made kernels take no time.
    for speed in ["-1", "0", "NaN", "\"-5GFlop/s\""] {
        let err = run(&|t| t.replace("speed: \"10TFlop/s\"", &format!("speed: {speed}")));
        assert!(
            err.contains("platform.Cluster.node.gpu.speed"),
            "{speed}: {err}"
        );
    }
    // None of them wrote anything; the scenario as it is runs.
    assert!(!tmp.path().join("o").exists());
    let file = dag_scenario(tmp.path(), |t| t);
    common::ok(&hetsim(
        &["run", &file, "--quiet", "--out", "o"],
        tmp.path(),
    ));
}

#[test]
fn counts_that_would_exhaust_memory_are_refused_before_anything_is_built() {
    let tmp = tempfile::tempdir().unwrap();
    let dgx = path("scenarios/platforms/dgx-h100.ron");
    let nccl = |extra: &[&str]| {
        let mut args = vec!["nccl-tests", "--platform", &dgx, "-g", "8", "-b", "8"];
        args.extend_from_slice(extra);
        args.extend_from_slice(&["--out", "o"]);
        refused(&args, tmp.path())
    };
    // Iterations near 2^32: every call of every size's program was allocated.
    for flag in ["-n", "-w"] {
        let err = nccl(&["-e", "64", flag, "4000000000"]);
        assert!(
            err.contains("-n, -w: 4.000e9 calls on each of 8 GPUs"),
            "{err}"
        );
        assert!(err.contains("over limits.max_memory"), "{err}");
    }
    // A factor a hair above 1: hundreds of millions of sizes, one simulation each.
    let err = nccl(&["-e", "1G", "-f", "1.0000001"]);
    assert!(err.contains("-f 1.0000001 make 1.871e8 sizes"), "{err}");
    let err = refused(
        &[
            "p2p",
            "--platform",
            &dgx,
            "--from",
            "node[0].gpu[0]",
            "--to",
            "node[0].gpu[1]",
            "-b",
            "8",
            "-e",
            "1G",
            "-f",
            "1.0000001",
            "--out",
            "o",
        ],
        tmp.path(),
    );
    assert!(
        err.contains("sizes, one simulation each; at most 1000"),
        "{err}"
    );
    // 100,000 GPUs in a node wired in pairs, in `run` and `validate`.
    let demo = path("scenarios/demo.ron");
    for cmd in ["run", "validate"] {
        let err = refused(
            &[cmd, &demo, "--set", "platform.node.gpus=100000"],
            tmp.path(),
        );
        assert!(err.contains("field `platform.node.gpus`"), "{err}");
    }
    // A CUDA program repeated 300 million times records an interval per stream item.
    let training = path("scenarios/dgx-a100-training.ron");
    let err = refused(
        &[
            "run",
            &training,
            "--set",
            "workload.repeat=300000000",
            "--out",
            "o",
        ],
        tmp.path(),
    );
    assert!(err.contains("field `workload.Cuda.repeat`"), "{err}");
    // A two-level fat-tree of arity 30,000: 9e8 links.
    let study = path("scenarios/studies/nccl-allreduce.ron");
    let err = refused(
        &[
            "validate",
            &study,
            "--set",
            "platform.network.FatTree.children=[30000, 30000]",
            "--set",
            "platform.nodes=2",
        ],
        tmp.path(),
    );
    assert!(err.contains("platform.network.FatTree.children"), "{err}");
    assert!(!tmp.path().join("o").exists());
}

#[test]
fn the_built_in_what_if_refuses_a_switch_that_would_erase_its_question_and_shows_the_others() {
    let tmp = tempfile::tempdir().unwrap();
    // GPUDirect off on both sides printed "unchanged" with exit 0.
    let err = refused(&["run", "--disable", "gpudirect", "--out", "w"], tmp.path());
    assert!(
        err.contains("--disable gpudirect: the what-if question `gpudirect`"),
        "{err}"
    );
    assert!(
        err.contains("hetsim run scenarios/whatif/halo.ron --disable gpudirect"),
        "{err}"
    );
    assert!(!tmp.path().join("w").exists());
    // Another switch applies to every run, and says so in the answer and the summary.
    let out = common::ok(&hetsim(
        &["run", "--disable", "contention", "--out", "w"],
        tmp.path(),
    ));
    assert!(
        out.contains("(every run with contention switched off)"),
        "{out}"
    );
    let summary = std::fs::read_to_string(tmp.path().join("w/summary.json")).unwrap();
    let v: serde_json::Value = serde_json::from_str(&summary).unwrap();
    assert_eq!(v["disabled"], serde_json::json!(["contention"]));
}

#[test]
fn a_key_given_twice_in_a_map_is_refused_not_overwritten() {
    let tmp = tempfile::tempdir().unwrap();
    let run = |edit: &dyn Fn(String) -> String| {
        let file = dag_scenario(tmp.path(), edit);
        refused(&["run", &file, "--quiet", "--out", "o"], tmp.path())
    };
    let err = run(&|t| {
        t.replace(
            "    runtime: RuntimeSpec(",
            "    switches: {\"prefetch\": true, \"prefetch\": false},\n    runtime: RuntimeSpec(",
        )
    });
    assert!(
        err.contains("field `switches`: the key `prefetch` is given twice"),
        "{err}"
    );
    let err = run(&|t| {
        t.replace(
            "models: {\"k\": ",
            "models: {\"k\": CodeletModel(cpu: Some(Constant(\"2ms\"))), \"k\": ",
        )
    });
    assert!(
        err.contains("field `runtime.models`: the key `k` is given twice"),
        "{err}"
    );
    assert!(!tmp.path().join("o").exists());
}

#[test]
fn ranks_that_disagree_on_a_collective_are_refused_naming_them() {
    // A broadcast with another root on rank 2, then an NCCL allreduce of another size on
    // rank 2: MPI and NCCL would hang or fail; the simulation ran without a word.
    let tmp = tempfile::tempdir().unwrap();
    let lassen = path("scenarios/platforms/lassen.ron");
    let scenario = |lines: &str| {
        let text = format!(
            "Scenario(name: \"disagree\", platform: File({lassen:?}), workload: Mpi(ranks: 4, program: TraceText([(\"inline\", {lines:?})])))"
        );
        let file = tmp.path().join("disagree.ron");
        std::fs::write(&file, text).unwrap();
        refused(&["run", file.to_str().unwrap(), "--out", "o"], tmp.path())
    };
    let err = scenario("0 bcast 1024 0\n1 bcast 1024 0\n2 bcast 1024 1\n3 bcast 1024 0\n");
    assert!(
        err.contains("ranks 0 and 2 disagree on their collective call #1"),
        "{err}"
    );
    assert!(
        err.contains("rank 2 calls bcast of 1024 B from root 1 (inline:3"),
        "{err}"
    );
    let err = scenario(
        "0 nccl_allreduce 1000\n1 nccl_allreduce 1000\n2 nccl_allreduce 2000\n3 nccl_allreduce 1000\n",
    );
    assert!(
        err.contains("rank 2 calls nccl all_reduce of 2000 B"),
        "{err}"
    );
    // One rank without the call at all.
    let err = scenario("0 barrier\n1 barrier\n2 barrier\n3 compute 1\n");
    assert!(err.contains("rank 3 makes no such call"), "{err}");
    assert!(!tmp.path().join("o").exists());
}

#[test]
fn errors_name_the_flow_cases_fields_and_the_benchmarks_flags() {
    let tmp = tempfile::tempdir().unwrap();
    // A flow case's errors named the scenario it becomes (platform.links, workload.Flows).
    let case = |json: &str| {
        std::fs::write(tmp.path().join("case.json"), json).unwrap();
        refused(&["flows", "case.json"], tmp.path())
    };
    let link = r#"{"id":"l0","bandwidth":1e9,"latency":0}"#;
    let flow = r#"{"id":"a","route":["l0"],"size":1e9,"start":0}"#;
    let err = case(&format!(r#"{{"links":[{link},{link}],"flows":[{flow}]}}"#));
    assert!(
        err.contains("case.json: field `links[1].id`: `l0` is used twice"),
        "{err}"
    );
    let err = case(&format!(r#"{{"links":[{link}],"flows":[{flow},{flow}]}}"#));
    assert!(err.contains("case.json: field `flows[1].id`"), "{err}");
    let slow = r#"{"id":"l0","bandwidth":1e-300,"latency":0}"#;
    let err = case(&format!(r#"{{"links":[{slow}],"flows":[{flow}]}}"#));
    assert!(err.contains("case.json: field `flows[0].size`"), "{err}");
    // A case that does not deserialize names the field at fault (it is parsed a second time,
    // tracking paths, only when the plain parse fails), and text after the case is refused.
    let err = case(&format!(
        r#"{{"links":[{link}],"flows":[{{"id":"a","route":["l0"],"size":"big"}}]}}"#
    ));
    assert!(
        err.contains("case.json: field `flows[0].size`: invalid type"),
        "{err}"
    );
    let err = case(&format!(r#"{{"links":[{link}],"flows":[{flow}]}} x"#));
    assert!(err.contains("case.json: trailing characters"), "{err}");
    // p2p and nccl-tests named the scenario's fields, not their flags.
    let dgx = path("scenarios/platforms/dgx-h100.ron");
    let p2p = |from: &str, to: &str, end: &str| {
        refused(
            &[
                "p2p",
                "--platform",
                &dgx,
                "--from",
                from,
                "--to",
                to,
                "-b",
                "8",
                "-e",
                end,
                "-f",
                "1000",
                "--out",
                "o",
            ],
            tmp.path(),
        )
    };
    let err = p2p("node[0].gpu[9]", "node[0].gpu[1]", "64");
    assert!(
        err.starts_with("error: --from: expected node[N].gpu[G]"),
        "{err}"
    );
    let err = p2p("node[0].gpu[1]", "node[0].gpu[1]", "64");
    assert!(
        err.starts_with("error: --to: `node[0].gpu[1]` already holds a rank"),
        "{err}"
    );
    let err = p2p("node[0].gpu[0]", "node[0].gpu[1]", "1e30");
    assert!(err.starts_with("error: -e: a message of"), "{err}");
    let nccl = |g: &str, end: &str| {
        refused(
            &[
                "nccl-tests",
                "--platform",
                &dgx,
                "-g",
                g,
                "-e",
                end,
                "--out",
                "o",
            ],
            tmp.path(),
        )
    };
    let err = nccl("100", "64");
    assert!(err.starts_with("error: -g: expected 1 to 8"), "{err}");
    let err = nccl("8", "1e30");
    assert!(err.starts_with("error: -e: a buffer of"), "{err}");
    assert!(!tmp.path().join("o").exists());
}

/// A copy of scenarios/cholesky-attila.ron and its StarPU machine in `dir`, with `edit`
/// applied to the GEMM codelet's calibration file; the scenario's path.
fn attila_with_gemm(dir: &Path, edit: impl Fn(&str) -> String) -> String {
    let copy = |from: &Path, to: &Path| {
        for e in walk(from) {
            let rel = e.strip_prefix(from).unwrap();
            std::fs::create_dir_all(to.join(rel).parent().unwrap()).unwrap();
            std::fs::copy(&e, to.join(rel)).unwrap();
        }
    };
    copy(&repo().join("scenarios/machines"), &dir.join("machines"));
    std::fs::copy(
        repo().join("scenarios/cholesky-attila.ron"),
        dir.join("chol.ron"),
    )
    .unwrap();
    let gemm = dir.join("machines/codelets/45/chol_model_gemm.attila");
    let text = std::fs::read_to_string(&gemm).unwrap();
    std::fs::write(&gemm, edit(&text)).unwrap();
    dir.join("chol.ron").to_str().unwrap().to_string()
}

fn walk(dir: &Path) -> Vec<std::path::PathBuf> {
    let mut out = Vec::new();
    for e in std::fs::read_dir(dir).unwrap() {
        let p = e.unwrap().path();
        if p.is_dir() {
            out.extend(walk(&p));
        } else {
            out.push(p);
        }
    }
    out
}

/// The calibration file with every history entry's mean (microseconds) replaced by `mean`.
fn with_means(text: &str, mean: impl Fn(&str) -> String) -> String {
    text.lines()
        .map(|l| {
            let f: Vec<&str> = l.split_whitespace().collect();
            let entry =
                f.len() == 8 && f[0].len() == 8 && f[0].chars().all(|c| c.is_ascii_hexdigit());
            if entry {
                let mut f: Vec<String> = f.iter().map(|s| s.to_string()).collect();
                f[3] = mean(&f[3]);
                f.join("\t")
            } else {
                l.to_string()
            }
        })
        .collect::<Vec<_>>()
        .join("\n")
}

#[test]
fn calibrations_and_memories_that_cannot_be_right_are_refused_naming_their_file() {
    let tmp = tempfile::tempdir().unwrap();
    let run = |edit: &dyn Fn(&str) -> String| {
        let dir = tempfile::tempdir_in(tmp.path()).unwrap();
        let file = attila_with_gemm(dir.path(), edit);
        refused(&["run", &file, "--quiet", "--out", "o"], dir.path())
    };
    let gemm = "codelets/45/chol_model_gemm.attila";
    // Empty; every mean NaN (no finite entry, and no regression in this file); negative.
    let err = run(&|_| String::new());
    assert!(
        err.contains(gemm) && err.contains("Performance Model Version"),
        "{err}"
    );
    let err = run(&|t| with_means(t, |_| "nan".into()));
    assert!(err.contains("cannot run") && err.contains(gemm), "{err}");
    let err = run(&|t| with_means(t, |m| format!("-{m}")));
    assert!(
        err.contains("expected finite times of zero or more") && err.contains(gemm),
        "{err}"
    );
    // A cluster GPU of no memory left the GPUs unused.
    let file = dag_scenario(tmp.path(), |t| t.replace("memory: \"16GiB\"", "memory: 0"));
    let err = refused(&["run", &file, "--quiet", "--out", "o"], tmp.path());
    assert!(
        err.contains("platform.node.gpu.memory: 0 B leaves the runtime no room"),
        "{err}"
    );
}

#[test]
fn output_files_that_would_fill_a_disk_are_refused_before_the_run() {
    // 3,000 ranks of the LULESH-like halo wrote a 2.7 GB trace.json.
    let tmp = tempfile::tempdir().unwrap();
    let halo = path("scenarios/studies/halo3d.ron");
    let err = refused(
        &["run", &halo, "--set", "workload.ranks=3000", "--out", "o"],
        tmp.path(),
    );
    assert!(
        err.contains("workload.Mpi.program.Generator.Halo3d.iterations"),
        "{err}"
    );
    assert!(
        err.contains("of output files, over limits.max_output"),
        "{err}"
    );
    assert!(!tmp.path().join("o").exists());
    // Without the two largest recorded files the same job fits (validate builds it).
    let o = hetsim(
        &[
            "validate",
            &halo,
            "--set",
            "workload.ranks=3000",
            "--set",
            "output.trace_json=false",
            "--set",
            "output.paje=false",
        ],
        tmp.path(),
    );
    assert!(o.status.success(), "{}", stderr(&o));
}

#[test]
fn times_past_the_range_are_bad_input_naming_the_inputs_that_set_them() {
    let tmp = tempfile::tempdir().unwrap();
    // A protocol field: every MPI call costs a year of software overhead.
    let halo = path("scenarios/whatif/halo.ron");
    let set = "workload.Mpi.protocol.call_overhead=3e7s";
    let err = refused(&["run", &halo, "--set", set, "--out", "o"], tmp.path());
    assert!(err.contains("simulated time out of range"), "{err}");
    assert!(
        err.contains("longest duration: workload.Mpi.protocol.call_overhead = 3e7 s"),
        "{err}"
    );
    assert!(!tmp.path().join("o").exists());
    // A calibration file: every GEMM takes ten years (each fits the range, their sum does not).
    let dir = tempfile::tempdir_in(tmp.path()).unwrap();
    let file = attila_with_gemm(dir.path(), |t: &str| with_means(t, |_| "3e14".into()));
    let err = refused(&["run", &file, "--quiet", "--out", "o"], dir.path());
    assert!(
        err.contains("longest duration: ")
            && err.contains("codelets/45/chol_model_gemm.attila (footprint ")
            && err.contains(" = 3e8 s"),
        "{err}"
    );
    // The platform file StarPU wrote: a host bus of a thousandth of a byte per second, and
    // no CPU worker, so every tile crosses it.
    let dir = tempfile::tempdir_in(tmp.path()).unwrap();
    let file = attila_with_gemm(dir.path(), |t: &str| t.to_string());
    let xml = dir.path().join("machines/bus/attila.platform.xml");
    let text = std::fs::read_to_string(&xml).unwrap();
    let host = r#"<link id="Host" bandwidth="6526732233.112210""#;
    assert!(text.contains(host));
    let slow = text.replace(host, r#"<link id="Host" bandwidth="0.001""#);
    std::fs::write(&xml, slow).unwrap();
    let args = [
        "run",
        &file,
        "--set",
        "platform.ncpu=0",
        "--quiet",
        "--out",
        "o",
    ];
    let err = refused(&args, dir.path());
    assert!(
        err.contains("lowest bandwidth: ")
            && err.contains("bus/attila.platform.xml (link `Host` bandwidth) = 1e-3 B/s"),
        "{err}"
    );
}

#[test]
fn counts_the_fuzzer_found_past_the_budget_are_refused_naming_them() {
    // Found by fuzz.rs's huge-count property: GPUs and cores per node near u32::MAX wrapped
    // in the budget's sum, 10,000 GPUs of a task runtime routed 1e8 pairs (20.9 GB, 204 s),
    // and a StarPU worker count near u32::MAX wrapped in the check against the host's cores.
    let tmp = tempfile::tempdir().unwrap();
    let mix = path("tests/data/scenarios/mix-pcie.ron");
    for (set, field) in [
        ("platform.node.gpus=4294967295", "platform.node.gpus"),
        (
            "platform.node.cpu_cores=4294967295",
            "platform.node.cpu_cores",
        ),
        ("platform.node.gpus=10000", "platform.node.gpus"),
    ] {
        let err = refused(&["run", &mix, "--set", set, "--out", "o"], tmp.path());
        assert!(err.contains(&format!("field `{field}`")), "{set}: {err}");
    }
    let chol = path("scenarios/cholesky-attila.ron");
    let err = refused(
        &[
            "run",
            &chol,
            "--set",
            "platform.ncpu=4294967295",
            "--out",
            "o",
        ],
        tmp.path(),
    );
    assert!(
        err.contains("platform.ncpu: attila has 12 CPU cores"),
        "{err}"
    );
    assert!(!tmp.path().join("o").exists());
}
