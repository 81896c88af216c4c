//! Helpers shared by the tests that drive the `hetsim` binary. (Each test file uses some of
//! them; the others would be dead code there.)
#![allow(dead_code)]

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

/// Runs `hetsim ARGS` in `cwd`.
pub fn hetsim(args: &[&str], cwd: &Path) -> Output {
    Command::new(env!("CARGO_BIN_EXE_hetsim"))
        .args(args)
        .current_dir(cwd)
        .output()
        .unwrap()
}

pub fn stderr(o: &Output) -> String {
    String::from_utf8_lossy(&o.stderr).into_owned()
}

/// The standard output of a run that must have succeeded.
pub fn ok(o: &Output) -> String {
    assert!(o.status.success(), "{}", stderr(o));
    String::from_utf8_lossy(&o.stdout).into_owned()
}

pub fn repo() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

/// Runs a Cuda workload (RON of `CudaSpec`) on a platform (RON): the CUDA report and the
/// simulated time in seconds.
pub fn run_cuda(
    platform: &str,
    cuda: &str,
) -> Result<(hetsim::systems::cuda::CudaReport, f64), hetsim::Error> {
    use hetsim::schema::load::parse_scenario;
    let text = format!(r#"Scenario(name: "t", platform: {platform}, workload: Cuda({cuda}))"#);
    let mut s = parse_scenario(&text, "test", &repo(), &[])
        .map_err(|e| hetsim::Error::Input(e.to_string()))?;
    s.output = hetsim::schema::scenario::OutputSpec::tables_only();
    let (app, stats) = hetsim::simulate(&s, &hetsim::RunOptions::default())?;
    let report = app
        .world()
        .resource::<hetsim::systems::cuda::CudaReport>()
        .clone();
    Ok((report, stats.sim_time.as_secs_f64()))
}

/// `got` is within `rel` of `want`.
pub fn assert_close(got: f64, want: f64, rel: f64) {
    assert!(
        (got - want).abs() <= rel * want.abs(),
        "got {got}, expected {want} (within {rel})"
    );
}

/// `hetsim nccl-tests` options for `op` on a shipped platform file, `gpus` GPUs, `sizes`,
/// NCCL's own choice, 5 timed iterations after 1 warm-up.
pub fn nccl_sweep(
    op: hetsim::schema::cuda::Coll,
    platform: &str,
    gpus: u32,
    sizes: &[f64],
) -> hetsim::nccltests::Options {
    hetsim::nccltests::Options {
        op,
        sizes: sizes.to_vec(),
        gpus,
        platform: repo().join("scenarios/platforms").join(platform),
        set: vec![],
        algos: vec![],
        protos: vec![],
        channels: None,
        iters: 5,
        warmup: 1,
    }
}
