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
