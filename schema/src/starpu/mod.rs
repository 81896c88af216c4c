//! Readers for StarPU's own calibration files, so that a calibrated machine can be simulated
//! from what `starpu_calibrate_bus` and the performance-model sampling wrote:
//!
//! - [`perfmodel`]: codelet performance models (`codelets/45/<symbol>.<hostname>`, format
//!   version 45): per device combination and implementation, the regression sums, the
//!   non-linear fit `a * size^b + c`, optional multiple-regression coefficients, and the
//!   history table (footprint hash, size, flops, mean and deviation in us, samples);
//! - [`bus`]: `<host>.bandwidth` (MB/s) and `<host>.latency` (us) matrices between memory
//!   nodes, `<host>.affinity` (the CPUs nearest each GPU), `<host>.config` (device counts).
//!
//! StarPU's sampling directories store some models as git symbolic links; a checkout without
//! links leaves a one-line file holding the target's name, which [`resolve_link`] follows.

pub mod bus;
pub mod footprint;
pub mod perfmodel;
pub mod platform;

use std::path::{Path, PathBuf};

/// Follows a symbolic link stored as a file whose whole text is a sibling's name.
pub fn resolve_link(path: &Path) -> std::io::Result<PathBuf> {
    let mut p = path.to_path_buf();
    for _ in 0..8 {
        let meta = std::fs::metadata(&p)?;
        if meta.len() > 256 {
            return Ok(p);
        }
        let text = std::fs::read_to_string(&p)?;
        let name = text.trim();
        if name.is_empty() || name.contains(char::is_whitespace) || name.starts_with('#') {
            return Ok(p);
        }
        let target = p.with_file_name(name);
        if !target.is_file() {
            return Ok(p);
        }
        p = target;
    }
    Ok(p)
}

/// A number as StarPU prints it (`nan`, `-nan`, `inf` included).
pub(crate) fn number(token: &str) -> Option<f64> {
    match token.to_ascii_lowercase().as_str() {
        "nan" | "-nan" => Some(f64::NAN),
        "inf" => Some(f64::INFINITY),
        "-inf" => Some(f64::NEG_INFINITY),
        t => t.parse().ok(),
    }
}
