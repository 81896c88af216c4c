//! `hetsim study` and `hetsim merge` through the CLI, on the hand-computed scenario of
//! tests/data/scenarios/known-intervals.ron.

mod common;

use common::{hetsim, ok, repo};
use std::path::Path;
use std::process::Command;

/// A study folder: the base scenario next to a study of 3 sizes x 2 start times x 2 variants.
fn study_dir(size_values: &str) -> tempfile::TempDir {
    let tmp = tempfile::tempdir().unwrap();
    let known =
        Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/data/scenarios/known-intervals.ron");
    std::fs::copy(known, tmp.path().join("known.ron")).unwrap();
    let study = format!(
        r#"Study(
    name: "grid",
    base: "known.ron",
    params: [
        Param(path: "workload.Flows[0].size", name: "a_size", values: List([{size_values}])),
        Param(path: "workload.Flows[2].start", name: "c_start", values: Linear(from: 3, to: 4, step: 1)),
    ],
    variants: [Variant(name: "full"), Variant(name: "alone", disable: ["contention"])],
    metrics: ["sim_time_s", "flows.max_duration_s"],
)"#
    );
    std::fs::write(tmp.path().join("grid.ron"), study).unwrap();
    tmp
}

fn rows(dir: &Path) -> Vec<Vec<String>> {
    let mut r = csv::Reader::from_path(dir.join("results.csv")).unwrap();
    r.records()
        .map(|x| x.unwrap().iter().map(String::from).collect())
        .collect()
}

#[test]
fn a_two_by_three_by_two_grid_gives_twelve_rows_with_known_values() {
    let tmp = study_dir(r#""1GB", "2GB", "3GB""#);
    let out = ok(&hetsim(&["study", "grid.ron", "--out", "res"], tmp.path()));
    assert!(out.contains("12 runs (0 failed)"), "{out}");
    let res = tmp.path().join("res");
    let rows = rows(&res);
    assert_eq!(rows.len(), 12);
    // Columns: run, a_size, c_start, variant, disabled, seed, sim_time_s, max_duration, status.
    // Run 0: a = 1 GB, c at 3 s, full model: a and b share l0 until 2 s, c ends at 3.5 s.
    assert_eq!(rows[0][..6], ["0", "1GB", "3", "full", "", "0"]);
    assert_eq!(rows[0][6], "3.5");
    // Run 1: the same without contention: a and b end at 1 s, c still at 3.5 s; the longest
    // flow takes 1 s.
    assert_eq!(rows[1][..5], ["1", "1GB", "3", "alone", "contention"]);
    assert_eq!(rows[1][7], "1");
    // Run 10: a = 3 GB, c at 4 s, full: a and b share l0 (0.5 GB/s each) until b ends at 2 s,
    // then a alone has 2 GB left: ends at 4 s; c ends at 4.5 s; the longest flow is a, 4 s.
    assert_eq!(rows[10][..4], ["10", "3GB", "4", "full"]);
    assert_eq!((rows[10][6].as_str(), rows[10][7].as_str()), ("4.5", "4"));
    assert!(rows.iter().all(|r| r[8] == "ok"));
    for f in [
        "sim_time_s.png",
        "sim_time_s.svg",
        "flows_max_duration_s.png",
        "ablation.png",
    ] {
        assert!(res.join(f).is_file(), "{f}");
    }
}

#[test]
fn three_shards_merged_equal_one_run() {
    let tmp = study_dir(r#""1GB", "2GB", "3GB""#);
    ok(&hetsim(
        &["study", "grid.ron", "--out", "whole", "--jobs", "2"],
        tmp.path(),
    ));
    let mut shards: Vec<String> = Vec::new();
    for i in 1..=3 {
        let dir = format!("shard{i}");
        let spec = format!("{i}/3");
        ok(&hetsim(
            &["study", "grid.ron", "--out", &dir, "--shard", &spec],
            tmp.path(),
        ));
        assert_eq!(rows(&tmp.path().join(&dir)).len(), 4, "a third of 12 runs");
        shards.push(dir);
    }
    let mut args = vec!["merge", "--out", "merged"];
    args.extend(shards.iter().map(String::as_str));
    let out = ok(&hetsim(&args, tmp.path()));
    assert!(out.contains("merged 12 runs of 12"), "{out}");
    let read = |d: &str| std::fs::read(tmp.path().join(d).join("results.csv")).unwrap();
    assert_eq!(read("merged"), read("whole"));
    assert!(tmp.path().join("merged/sim_time_s.png").is_file());
}

/// Runs the grid in 2 shards and returns their folder names.
fn two_shards(tmp: &Path) -> [&'static str; 2] {
    for (i, dir) in ["s1", "s2"].iter().enumerate() {
        let spec = format!("{}/2", i + 1);
        ok(&hetsim(
            &["study", "grid.ron", "--out", dir, "--shard", &spec],
            tmp,
        ));
    }
    ["s1", "s2"]
}

/// Rewrites line `line` (0 = header) of a shard's results.csv with `edit`.
fn edit_row(dir: &Path, line: usize, edit: impl Fn(&str) -> String) {
    let path = dir.join("results.csv");
    let text = std::fs::read_to_string(&path).unwrap();
    let lines: Vec<String> = text
        .lines()
        .enumerate()
        .map(|(i, l)| if i == line { edit(l) } else { l.to_string() })
        .collect();
    std::fs::write(&path, lines.join("\n") + "\n").unwrap();
}

#[test]
fn merge_refuses_a_shard_whose_study_name_is_not_a_plain_name() {
    // Without --out the merge goes to results/<name>: a name that climbs or is absolute would
    // write anywhere (issue 52).
    let tmp = study_dir(r#""1GB", "2GB", "3GB""#);
    let shards = two_shards(tmp.path());
    for name in ["../escaped", "/tmp/escaped", ""] {
        for s in shards {
            let path = tmp.path().join(s).join("study.json");
            let text = std::fs::read_to_string(&path).unwrap();
            let mut v: serde_json::Value = serde_json::from_str(&text).unwrap();
            v["study"]["name"] = serde_json::Value::from(name);
            std::fs::write(&path, v.to_string()).unwrap();
        }
        let o = hetsim(&["merge", shards[0], shards[1]], tmp.path());
        assert_eq!(o.status.code(), Some(2), "{name}: {}", common::stderr(&o));
        let err = common::stderr(&o);
        assert!(
            err.contains("s1/study.json: study.name: expected a plain name"),
            "{err}"
        );
        assert!(!tmp.path().join("escaped").exists());
        assert!(!tmp.path().join("results").exists());
    }
}

#[test]
fn merge_refuses_rows_that_are_not_the_grids() {
    let tmp = study_dir(r#""1GB", "2GB", "3GB""#);
    let shards = two_shards(tmp.path());
    let merge = |tmp: &Path| hetsim(&["merge", "--out", "m", shards[0], shards[1]], tmp);
    ok(&merge(tmp.path()));
    // Each edit of shard 1's first row (run 0: 1GB, 3, full, no switch, seed 0, ok) and the
    // phrase the refusal must hold.
    let cases: [(&str, &str, &str); 5] = [
        ("0,1GB,3,full", "0,5GB,3,full", "parameter values"),
        ("0,1GB,3,full", "0,1GB,3,alone", "variant"),
        ("0,1GB,3,full", "1,1GB,3,full", "not in shard 1/2"),
        ("0,1GB,3,full", "40,1GB,3,full", "beyond the grid"),
        (",ok,", ",done,", "status `done`"),
    ];
    for (from, to, says) in cases {
        let copy = tempfile::tempdir().unwrap();
        for f in ["known.ron", "grid.ron"] {
            std::fs::copy(tmp.path().join(f), copy.path().join(f)).unwrap();
        }
        two_shards(copy.path());
        edit_row(&copy.path().join("s1"), 1, |l| l.replacen(from, to, 1));
        let o = merge(copy.path());
        assert_eq!(o.status.code(), Some(2), "{from} -> {to}");
        let err = common::stderr(&o);
        assert!(
            err.contains(says) && err.contains("results.csv"),
            "{to}: {err}"
        );
        assert!(!copy.path().join("m").exists(), "nothing written");
    }
}

#[test]
fn merge_refuses_an_out_folder_inside_a_shard() {
    let tmp = study_dir(r#""1GB""#);
    let shards = two_shards(tmp.path());
    let before = std::fs::read(tmp.path().join("s1/results.csv")).unwrap();
    for out in ["s1", "s1/merged", "./s2/../s1"] {
        let o = hetsim(&["merge", "--out", out, shards[0], shards[1]], tmp.path());
        assert_eq!(o.status.code(), Some(2), "{out}");
        assert!(
            common::stderr(&o).contains("inside the shard folder"),
            "{out}"
        );
    }
    assert_eq!(
        std::fs::read(tmp.path().join("s1/results.csv")).unwrap(),
        before
    );
}

#[test]
fn a_failed_run_is_reported_and_the_others_go_on() {
    let tmp = study_dir(r#""1GB", "lots", "3GB""#);
    let o = hetsim(&["study", "grid.ron", "--out", "res"], tmp.path());
    // Exit 0 only when every run ran; the failures are counted last, the table is kept.
    assert_eq!(o.status.code(), Some(1), "{}", common::stderr(&o));
    let out = String::from_utf8_lossy(&o.stdout);
    assert!(out.contains("(4 failed)"), "{out}");
    let err = common::stderr(&o);
    assert!(
        err.trim_end()
            .lines()
            .last()
            .unwrap()
            .contains("4 of 12 runs failed"),
        "{err}"
    );
    let rows = rows(&tmp.path().join("res"));
    assert_eq!(rows.len(), 12);
    for r in &rows {
        if r[1] == "lots" {
            assert_eq!(r[8], "failed");
            assert!(
                r[9].contains("size"),
                "the error names what was expected: {}",
                r[9]
            );
            assert_eq!(r[6], "", "no metric for a failed run");
        } else {
            assert_eq!(r[8], "ok", "{r:?}");
        }
    }
}

#[test]
fn bad_study_files_are_input_errors() {
    let tmp = study_dir(r#""1GB""#);
    std::fs::write(
        tmp.path().join("bad.ron"),
        r#"Study(name: "x", base: "known.ron", metrics: ["sim_time_s"], colour: 3)"#,
    )
    .unwrap();
    let o = hetsim(&["study", "bad.ron"], tmp.path());
    assert_eq!(o.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&o.stderr).contains("colour"));
    let o = hetsim(&["study", "grid.ron", "--shard", "4/3"], tmp.path());
    assert_eq!(o.status.code(), Some(2));
    assert!(
        !tmp.path().join("results").exists(),
        "no output on bad input"
    );
}

#[test]
fn the_shipped_nic_study_runs() {
    let repo = repo();
    let tmp = tempfile::tempdir().unwrap();
    let out = tmp.path().join("nic");
    let o = Command::new(env!("CARGO_BIN_EXE_hetsim"))
        .args(["study", "--out"])
        .arg(&out)
        .arg(repo.join("scenarios/nic-study.ron"))
        .output()
        .unwrap();
    let text = ok(&o);
    // 5 NIC bandwidths x 2 sizes x 2 variants.
    assert!(text.contains("20 runs (0 failed)"), "{text}");
    let rows = rows(&out);
    // Without contention no flow waits for another, so no run is slower than the full model.
    for pair in rows.chunks(2) {
        let (full, alone): (f64, f64) = (pair[0][6].parse().unwrap(), pair[1][6].parse().unwrap());
        assert!(alone <= full, "{pair:?}");
    }
}

#[test]
fn the_shipped_lassen_study_runs_its_64_runs() {
    let repo = repo();
    let tmp = tempfile::tempdir().unwrap();
    let out = tmp.path().join("lassen");
    let o = Command::new(env!("CARGO_BIN_EXE_hetsim"))
        .args(["study", "--jobs", "2", "--out"])
        .arg(&out)
        .arg(repo.join("scenarios/lassen-study.ron"))
        .output()
        .unwrap();
    let text = ok(&o);
    assert!(text.contains("64 runs (0 failed)"), "{text}");
    let rows = rows(&out);
    // The four GPUs of a node share one NIC: at 25 Gb/s (3.125 GB/s) each 64 MB transfer gets
    // a quarter, so the remote transfers take 4 x 64e6 / 3.125e9 = 81.92 ms plus latencies.
    let t: f64 = rows[0][6].parse().unwrap();
    assert!((t - 0.08192).abs() < 1e-4, "{t}");
}

#[test]
fn the_mpi_studies_plan_their_grids_and_a_shard_runs() {
    let repo = repo();
    for (name, runs) in [("gpudirect-vs-hostcopy", 32), ("gpus-per-node", 32)] {
        let file = repo.join(format!("scenarios/studies/{name}.ron"));
        let study = hetsim::study::load_study(&file).unwrap();
        let plan = hetsim::study::plan(&study).unwrap();
        assert_eq!(plan.len(), runs, "{name}");
        if name == "gpus-per-node" {
            // 6 GPUs per node go with a 75 GB/s NIC and fabric (linked values).
            let six = plan.iter().find(|r| r.values[1] == "6").unwrap();
            assert!(
                six.overrides
                    .contains(&"platform.node.nic.bandwidth=75GB/s".to_string())
            );
            assert!(
                six.overrides
                    .contains(&"platform.network.bandwidth=75GB/s".to_string())
            );
            assert_eq!(six.base.as_deref(), Some("halo3d.ron"));
        }
        // One slice of 16 (two runs) runs to the end.
        let tmp = tempfile::tempdir().unwrap();
        let o = Command::new(env!("CARGO_BIN_EXE_hetsim"))
            .args(["study", "--shard", "1/16", "--out"])
            .arg(tmp.path())
            .arg(&file)
            .output()
            .unwrap();
        let text = ok(&o);
        assert!(
            text.contains("2 runs of 32 (shard 1/16) (0 failed)"),
            "{text}"
        );
    }
}

#[test]
fn the_network_quantum_study_sweeps_five_quanta() {
    let file = repo().join("scenarios/studies/network-quantum.ron");
    let study = hetsim::study::load_study(&file).unwrap();
    let plan = hetsim::study::plan(&study).unwrap();
    assert_eq!(plan.len(), 5);
    assert!(
        plan[2]
            .overrides
            .contains(&"network_model.quantum=100ns".to_string())
    );
}

/// A study that cannot give a result is an error, not a table of failures with exit code 0:
/// a parameter path that does not exist, a base that is not a scenario (exit 2, before any
/// run), a misspelt metric (every run fails: exit 1). Nothing is written.
#[test]
fn a_study_no_run_of_which_can_succeed_is_an_error() {
    let cases = [
        (
            "workload.Flows[0].size",
            "workload.Flows[0].sise",
            Some(2),
            "sise",
        ),
        (
            r#"base: "known.ron""#,
            r#"base: "grid.ron""#,
            Some(2),
            "grid.ron",
        ),
        // A metric no summary holds: refused after run 0, before the others (issue 52).
        (
            r#""flows.max_duration_s""#,
            r#""flows.max_complection_s""#,
            Some(2),
            "metrics: metric `flows.max_complection_s`",
        ),
    ];
    for (from, to, code, expect) in cases {
        let tmp = study_dir(r#""1GB", "2GB", "3GB""#);
        let file = tmp.path().join("grid.ron");
        let text = std::fs::read_to_string(&file).unwrap().replace(from, to);
        std::fs::write(&file, text).unwrap();
        let o = hetsim(&["study", "grid.ron", "--out", "res"], tmp.path());
        let err = String::from_utf8_lossy(&o.stderr);
        assert_eq!(o.status.code(), code, "{to}: {err}");
        assert!(err.contains(expect), "{to}: {err}");
        assert!(!tmp.path().join("res").exists(), "{to}: nothing written");
    }
}

/// Issue 52: mistakes every run would make are refused before the study runs (exit 2), with
/// the study file and the field; nothing is written.
#[test]
fn a_study_whose_every_run_would_fail_the_same_way_is_refused_before_it_starts() {
    let cases: [(&str, &str, &str); 6] = [
        (
            r#"variants: [Variant(name: "full"), Variant(name: "alone", disable: ["contention"])]"#,
            r#"variants: [Variant(name: "full"), Variant(name: "alone", disable: ["contnetion"])]"#,
            "grid.ron: variants[1].disable[0]: `contnetion` is not a switch",
        ),
        (
            r#"Variant(name: "full")"#,
            r#"Variant(name: "full", set: ["workload.Flows[0].sise=1GB"])"#,
            "under variant `full` cannot load",
        ),
        (
            r#"metrics: ["sim_time_s", "flows.max_duration_s"]"#,
            r#"metrics: ["sim_time_s", "flows.max_complection_s"]"#,
            "grid.ron: metrics: metric `flows.max_complection_s`: no `max_complection_s`",
        ),
        (
            r#"metrics: ["sim_time_s", "flows.max_duration_s"]"#,
            r#"metrics: ["sim_time_s", "flows"]"#,
            "grid.ron: metrics: metric `flows` is not a number",
        ),
        (
            r#"name: "c_start","#,
            r#"name: "c_start", linked: [Linked(path: "workload.Flows[0].size", values: [1, 2])],"#,
            "params[1].linked[0].path: `workload.Flows[0].size` is already params[0].path",
        ),
        (
            r#"values: Linear(from: 3, to: 4, step: 1)"#,
            r#"values: Linear(from: 1, to: 5000, step: 1)), Param(path: "workload.Flows[1].start", values: Linear(from: 1, to: 5000, step: 1)), Param(path: "workload.Flows[1].size", values: Linear(from: 1, to: 5000, step: 1)"#,
            "params: the grid holds 7.500e11 runs (3 x 5000 x 5000 x 5000 values x 2 variants x 1 seeds); at most 100000",
        ),
    ];
    for (from, to, expected) in cases {
        let tmp = study_dir(r#""1GB", "2GB", "3GB""#);
        let path = tmp.path().join("grid.ron");
        let text = std::fs::read_to_string(&path).unwrap();
        assert!(text.contains(from), "{from}");
        std::fs::write(&path, text.replace(from, to)).unwrap();
        let o = hetsim(&["study", "grid.ron", "--out", "res"], tmp.path());
        let err = common::stderr(&o);
        assert_eq!(o.status.code(), Some(2), "{expected}: {err}");
        assert!(err.contains(expected), "expected `{expected}` in: {err}");
        assert!(!tmp.path().join("res").exists());
    }
}
