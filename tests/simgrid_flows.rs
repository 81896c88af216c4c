//! `hetsim flows` against SimGrid itself on flow cases nobody solved before: random cases by
//! `hetsim flowgen`'s recipe (400 flows over 80 links, all at once and staggered, four
//! seeds), each run by SimGrid 3.32 through `tools/simgrid/flowcase.cpp` (which sets CM02,
//! factors 1, TCP-gamma 0; see its header for how a case becomes a SimGrid platform) and by
//! hetsim.
//! Expected: SimGrid's completion time of every flow, within a relative 1e-9 (the bar of
//! `tests/flow_cases.rs`, whose answers SimGrid computed once, for fixed cases).
//!
//! Needs g++ and SimGrid (`apt-get install libsimgrid-dev simgrid`, which brings python3 for
//! `tools/simgrid/flowcase-input.py`); without them the test says it skipped. CI installs
//! them (`.ci/run`).

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::Command;

use hetsim::RunOptions;
use hetsim::flowcase::{Recipe, generate, solve};

/// flowcase.cpp built into the tests' scratch folder, or why it cannot be.
fn simgrid_runner() -> Result<PathBuf, String> {
    if !Path::new("/usr/include/simgrid/s4u.hpp").exists() {
        return Err("SimGrid's headers are not installed (libsimgrid-dev)".into());
    }
    if Command::new("python3").arg("--version").output().is_err() {
        return Err("python3 is not installed (tools/simgrid/flowcase-input.py)".into());
    }
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let exe = Path::new(env!("CARGO_TARGET_TMPDIR")).join("simgrid-flowcase");
    let built = Command::new("g++")
        .args(["-O2", "-o"])
        .arg(&exe)
        .arg(root.join("tools/simgrid/flowcase.cpp"))
        .arg("-lsimgrid")
        .output()
        .map_err(|e| format!("g++: {e}"))?;
    if !built.status.success() {
        return Err(format!(
            "g++ failed: {}",
            String::from_utf8_lossy(&built.stderr)
        ));
    }
    Ok(exe)
}

/// SimGrid's completion time of every flow of `case` (the case's JSON text).
fn simgrid_ends(runner: &Path, case: &str, name: &str) -> BTreeMap<String, f64> {
    let dir = Path::new(env!("CARGO_TARGET_TMPDIR"));
    let json = dir.join(format!("{name}.json"));
    std::fs::write(&json, case).unwrap();
    // The case as flowcase.cpp reads it, by the converter flow-speed.sh uses too.
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let text = Command::new("python3")
        .arg(root.join("tools/simgrid/flowcase-input.py"))
        .arg(&json)
        .output()
        .unwrap();
    assert!(
        text.status.success(),
        "{name}: flowcase-input.py failed: {}",
        String::from_utf8_lossy(&text.stderr)
    );
    let input = dir.join(format!("{name}.txt"));
    std::fs::write(&input, text.stdout).unwrap();
    let out = Command::new(runner).arg(&input).output().unwrap();
    assert!(
        out.status.success(),
        "{name}: SimGrid failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout)
        .unwrap()
        .lines()
        .map(|line| {
            let (id, end) = line.split_once(' ').unwrap();
            (id.to_string(), end.parse().unwrap())
        })
        .collect()
}

#[test]
fn random_flow_cases_end_when_simgrid_says() {
    let runner = match simgrid_runner() {
        Ok(r) => r,
        Err(why) => {
            eprintln!("skipped: {why}");
            return;
        }
    };
    for seed in 1..=4 {
        for stagger in [0.0, 0.005] {
            let name = format!("seed{seed}-stagger{stagger}");
            let case = generate(Recipe {
                flows: 400,
                links: 80,
                seed,
                stagger,
            });
            let text = serde_json::to_string(&case).unwrap();
            let want = simgrid_ends(&runner, &text, &name);
            let got = solve(&text, &name, &RunOptions::default()).unwrap().ends;
            assert_eq!(got.len(), want.len(), "{name}: flow count");
            for (id, w) in &want {
                let g = got[id];
                assert!(
                    (g - w).abs() <= 1e-9 * w,
                    "{name}: flow {id} ends at {g} s, SimGrid says {w} s"
                );
            }
        }
    }
}
