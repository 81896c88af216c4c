//! Timelines and traces of a run whose intervals are known by hand
//! (tests/data/scenarios/known-intervals.ron explains the numbers).

use std::collections::{HashMap, HashSet};
use std::path::{Path, PathBuf};
use std::process::Command;

fn run_known(extra: &[&str]) -> (tempfile::TempDir, PathBuf) {
    let tmp = tempfile::tempdir().unwrap();
    let scenario =
        Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/data/scenarios/known-intervals.ron");
    let out = tmp.path().join("out");
    let o = Command::new(env!("CARGO_BIN_EXE_hetsim"))
        .args(["run", "--quiet", "--out"])
        .arg(&out)
        .arg(&scenario)
        .args(extra)
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    (tmp, out)
}

#[test]
fn intervals_csv_has_the_hand_computed_rows() {
    let (_tmp, out) = run_known(&[]);
    let text = std::fs::read_to_string(out.join("intervals.csv")).unwrap();
    assert_eq!(
        text,
        "resource,group,kind,state,label,start_s,end_s,duration_s\n\
         l0,network,link,busy,,0,2,2\n\
         l1,network,link,busy,,0,2,2\n\
         l1,network,link,busy,,3,3.5,0.5\n"
    );
}

#[test]
fn trace_json_parses_with_one_event_per_interval_and_transfer() {
    let (_tmp, out) = run_known(&[]);
    let trace: serde_json::Value =
        serde_json::from_slice(&std::fs::read(out.join("trace.json")).unwrap()).unwrap();
    let events = trace["traceEvents"].as_array().unwrap();
    let count = |ph: &str| events.iter().filter(|e| e["ph"] == ph).count();
    assert_eq!(count("X"), 3, "one complete event per interval");
    assert_eq!((count("b"), count("e")), (3, 3), "one async pair per flow");
    // l1's second busy period: 3 s = 3e6 us for 0.5 s.
    let late = events
        .iter()
        .find(|e| e["ph"] == "X" && e["ts"] == 3_000_000)
        .expect("the interval at 3 s");
    assert_eq!(late["dur"], 500_000);
    // Utilisation counters: l0 carries a and b at 100 %, l1 carries b at 50 % (see the file).
    let first = |name: &str| {
        events
            .iter()
            .find(|e| e["ph"] == "C" && e["name"] == name)
            .unwrap()["args"]["utilisation"]
            .as_f64()
            .unwrap()
    };
    assert_eq!(first("l0 utilisation (%)"), 100.0);
    assert_eq!(first("l1 utilisation (%)"), 50.0);
    // Every thread is named in its process.
    let named: HashSet<(i64, i64)> = events
        .iter()
        .filter(|e| e["name"] == "thread_name")
        .map(|e| (e["pid"].as_i64().unwrap(), e["tid"].as_i64().unwrap()))
        .collect();
    for e in events.iter().filter(|e| e["ph"] == "X") {
        assert!(named.contains(&(e["pid"].as_i64().unwrap(), e["tid"].as_i64().unwrap())));
    }
}

/// Checks a Paje file the way a reader does: events are declared in the header, types are
/// defined before use, containers are created before any event names them, and times never
/// go back. Returns the number of each event by name.
fn check_paje(text: &str) -> HashMap<String, usize> {
    let mut defs: HashMap<String, (String, Vec<String>)> = HashMap::new();
    let mut current: Option<(String, String, Vec<String>)> = None;
    let mut types: HashSet<String> = ["0".to_string()].into();
    let mut containers: HashSet<String> = ["0".to_string()].into();
    let mut counts = HashMap::new();
    let mut last_time = 0.0f64;
    for (n, line) in text.lines().enumerate() {
        if let Some(rest) = line.strip_prefix("%EventDef ") {
            let mut it = rest.split_whitespace();
            let (name, id) = (it.next().unwrap(), it.next().unwrap());
            current = Some((id.to_string(), name.to_string(), Vec::new()));
            continue;
        }
        if line.starts_with("%EndEventDef") {
            let (id, name, fields) = current.take().unwrap();
            defs.insert(id, (name, fields));
            continue;
        }
        if let Some(field) = line.strip_prefix('%') {
            let field = field.split_whitespace().next().unwrap().to_string();
            current.as_mut().unwrap().2.push(field);
            continue;
        }
        // Fields: words, or quoted strings.
        let mut fields = Vec::new();
        let mut rest = line.trim();
        while !rest.is_empty() {
            if let Some(r) = rest.strip_prefix('"') {
                let end = r.find('"').unwrap();
                fields.push(r[..end].to_string());
                rest = r[end + 1..].trim_start();
            } else {
                let end = rest.find(' ').unwrap_or(rest.len());
                fields.push(rest[..end].to_string());
                rest = rest[end..].trim_start();
            }
        }
        let (name, names) = defs
            .get(&fields[0])
            .unwrap_or_else(|| panic!("line {}: undeclared event {}", n + 1, fields[0]));
        assert_eq!(names.len(), fields.len() - 1, "line {}: field count", n + 1);
        let get = |f: &str| -> Option<&String> {
            names.iter().position(|x| x == f).map(|i| &fields[i + 1])
        };
        *counts.entry(name.clone()).or_insert(0) += 1;
        if let Some(t) = get("Time") {
            let t: f64 = t.parse().unwrap();
            assert!(t >= last_time, "line {}: time goes back", n + 1);
            last_time = t;
        }
        for f in ["Container", "StartContainer", "EndContainer"] {
            if let Some(c) = get(f) {
                assert!(
                    containers.contains(c),
                    "line {}: container {c} used before it is created",
                    n + 1
                );
            }
        }
        for f in ["Type", "StartContainerType", "EndContainerType"] {
            if let Some(t) = get(f) {
                assert!(
                    types.contains(t),
                    "line {}: type {t} used before it is defined",
                    n + 1
                );
            }
        }
        if name.starts_with("PajeDefine") {
            types.insert(get("Alias").unwrap().clone());
        }
        if name == "PajeCreateContainer" {
            containers.insert(get("Alias").unwrap().clone());
        }
    }
    counts
}

#[test]
fn paje_declares_every_container_before_use() {
    let (_tmp, out) = run_known(&[]);
    let text = std::fs::read_to_string(out.join("paje.trace")).unwrap();
    let counts = check_paje(&text);
    assert_eq!(counts["PajePushState"], 3);
    assert_eq!(counts["PajePopState"], 3);
    assert_eq!(counts["PajeStartLink"], 3);
    assert_eq!(counts["PajeEndLink"], 3);
    // The root's group `network` and the links l0, l1.
    assert_eq!(counts["PajeCreateContainer"], 3);
}

#[test]
fn the_demo_paje_trace_is_well_formed_too() {
    let tmp = tempfile::tempdir().unwrap();
    let o = Command::new(env!("CARGO_BIN_EXE_hetsim"))
        .arg("run")
        .arg(Path::new(env!("CARGO_MANIFEST_DIR")).join("scenarios/demo.ron"))
        .args(["--quiet", "--out"])
        .arg(tmp.path())
        .output()
        .unwrap();
    assert!(o.status.success());
    let counts = check_paje(&std::fs::read_to_string(tmp.path().join("paje.trace")).unwrap());
    // Six flows of the demo scenario, each a link in the trace.
    assert_eq!(counts["PajeStartLink"], 6);
}

#[test]
fn record_off_writes_no_timeline_outputs() {
    let (_tmp, out) = run_known(&["--disable", "record"]);
    for name in [
        "intervals.csv",
        "trace.json",
        "paje.trace",
        "timeline.svg",
        "timeline.png",
    ] {
        assert!(!out.join(name).exists(), "{name} without a recording");
    }
    assert!(out.join("summary.json").is_file());
}

#[test]
fn outputs_can_be_chosen_in_the_scenario() {
    let (_tmp, out) = run_known(&[
        "--set",
        "output.paje=false",
        "--set",
        "output.timeline=false",
    ]);
    assert!(!out.join("paje.trace").exists());
    assert!(!out.join("timeline.png").exists());
    assert!(out.join("trace.json").is_file());
}

#[test]
fn timelines_are_byte_identical_across_runs() {
    let (_a, out_a) = run_known(&[]);
    let (_b, out_b) = run_known(&[]);
    for name in [
        "intervals.csv",
        "trace.json",
        "paje.trace",
        "timeline.svg",
        "link_utilisation.svg",
    ] {
        assert_eq!(
            std::fs::read(out_a.join(name)).unwrap(),
            std::fs::read(out_b.join(name)).unwrap(),
            "{name}"
        );
    }
}
