//! `hetsim trace-stats` on Chakra execution traces: the reference training step of
//! `../shared/reference/chakra/` (read in place; skipped when it is not there), with the
//! figures its README gives.

mod common;

use common::{hetsim, repo, stderr};

#[test]
fn trace_stats_reads_a_chakra_training_step() {
    let real = repo().join("../shared/reference/chakra/real/chakra.0.et.gz");
    if !real.exists() {
        eprintln!("skipped: {} is not there", real.display());
        return;
    }
    let tmp = tempfile::tempdir().unwrap();
    let o = hetsim(&["trace-stats", real.to_str().unwrap()], tmp.path());
    assert!(o.status.success(), "{}", stderr(&o));
    let text = String::from_utf8_lossy(&o.stdout);
    for want in [
        "nodes: COMM_COLL_NODE 21, COMP_NODE 3643",
        "compute: 1209 GPU kernels, 292.828 ms; 2434 CPU operators, 50.941 ms",
        "collective ALL_REDUCE     (all ranks): 5 calls",
        "(largest 30.04 MiB)",
        "critical path through data_deps: 46.140 ms over 1966 nodes",
    ] {
        assert!(text.contains(want), "{want}: {text}");
    }
    let bad = tmp.path().join("x.0.et");
    std::fs::write(&bad, [0x05, 1, 2]).unwrap();
    let o = hetsim(&["trace-stats", bad.to_str().unwrap()], tmp.path());
    assert_eq!(o.status.code(), Some(2));
    assert!(stderr(&o).contains("x.0.et, metadata"), "{}", stderr(&o));
}
