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
