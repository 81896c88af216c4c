//! Every reference flow case through `hetsim flows` matches SimGrid's completion times.
//!
//! Expected values: `tests/data/flows/*.expected.json`, computed by SimGrid 3.32 (CM02 model,
//! TCP-gamma 0, latency and bandwidth factors 1) and checked by its authors against an exact
//! rational computation (see `tests/data/flows/README.md`). Tolerance: relative 1e-9.

use std::path::Path;
use std::process::Command;

fn solve(case: &Path) -> serde_json::Value {
    let out = Command::new(env!("CARGO_BIN_EXE_hetsim"))
        .arg("flows")
        .arg(case)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}: {}",
        case.display(),
        String::from_utf8_lossy(&out.stderr)
    );
    serde_json::from_slice(&out.stdout).unwrap()
}

fn check(name: &str) {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/data/flows");
    let got = solve(&dir.join(format!("{name}.json")));
    let text = std::fs::read_to_string(dir.join(format!("{name}.expected.json"))).unwrap();
    let want: serde_json::Value = serde_json::from_str(&text).unwrap();
    let (got, want) = (
        got["flows"].as_object().unwrap(),
        want["flows"].as_object().unwrap(),
    );
    assert_eq!(got.len(), want.len(), "{name}: flow count");
    for (id, w) in want {
        let (g, w) = (got[id].as_f64().unwrap(), w.as_f64().unwrap());
        assert!(
            (g - w).abs() <= 1e-9 * w.abs(),
            "{name}: flow {id} ends at {g}, SimGrid says {w}"
        );
    }
}

/// 5e8 B over 1e9 B/s after 1 ms of latency: 0.501 s.
#[test]
fn a_single_link() {
    check("a_single_link");
}

/// Two flows share 1e9 B/s: 5e8 B/s each; the first ends at 1.001 s, the second at 1.501 s.
#[test]
fn b_two_flows_share() {
    check("b_two_flows_share");
}

/// The long flow's bottleneck moves from l0 to l1 to l0 and l2: 2, 28/9, 77/18 and 4.5 s.
#[test]
fn c_parking_lot() {
    check("c_parking_lot");
}

#[test]
fn d_staggered() {
    check("d_staggered");
}

/// Fat pipes give every flow the whole bandwidth; split-duplex directions are independent.
#[test]
fn g_fatpipe_duplex() {
    check("g_fatpipe_duplex");
}

/// 1,000 random flows over 2,000 links, all starting at 0.
#[test]
fn perf_case_n1000_t0() {
    check("perf/case_n1000_t0");
}

/// The 10,000-flow reference cases; slow in a debug build, so run on demand:
/// `cargo test --release --test flow_cases -- --ignored`.
#[test]
#[ignore]
fn perf_case_n10000_stag() {
    check("perf/case_n10000_stag");
}

#[test]
#[ignore]
fn perf_case_n10000_t0() {
    check("perf/case_n10000_t0");
}
