//! The Chakra workload schema: execution traces (one per rank, or one replicated on every
//! rank) run as ASTRA-sim's workload layer runs them, collectives through NCCL's model.

use serde::{Deserialize, Serialize};

use crate::cuda::NcclSpec;

/// Chakra execution traces on the platform's GPUs, one rank per GPU.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ChakraSpec {
    /// The traces, relative to the scenario's folder: `path/NAME.{rank}.et` (`{rank}` is the
    /// rank's number), gzip-compressed or not. A path without `{rank}` is one rank's trace
    /// replicated on every rank, as the steps of data-parallel training are.
    pub files: String,
    /// How many ranks run: the first GPUs of the platform, node by node (default all).
    #[serde(default)]
    pub ranks: Option<u32>,
    /// GPU kernels take their traced (or roofline) time divided by this: 1.5 asks "what if
    /// the GPUs were 1.5x faster". CPU operators keep their time.
    #[serde(default = "one")]
    pub compute_scale: f64,
    /// ASTRA-sim's communicator-group file (JSON: `{"NAME": [ranks...], ...}`), relative to
    /// the scenario's folder: a collective's `pg_name` names its group. Absent: every
    /// collective is over all ranks.
    #[serde(default)]
    pub comm_groups: Option<String>,
    #[serde(default)]
    pub nccl: NcclSpec,
}

fn one() -> f64 {
    1.0
}

impl ChakraSpec {
    /// A trace pattern on every GPU with the schema's defaults for everything else.
    pub fn new(files: impl Into<String>) -> Self {
        ChakraSpec {
            files: files.into(),
            ranks: None,
            compute_scale: one(),
            comm_groups: None,
            nccl: NcclSpec::default(),
        }
    }

    /// The trace file of `rank`: the pattern with `{rank}` replaced.
    pub fn file_of(&self, rank: u32) -> String {
        self.files.replace("{rank}", &rank.to_string())
    }

    /// Whether every rank reads the same file.
    pub fn replicated(&self) -> bool {
        !self.files.contains("{rank}")
    }

    /// Checks what needs no platform: a scale above zero. Errors name the field.
    pub fn check(&self) -> Result<(), (String, String)> {
        if !(self.compute_scale.is_finite() && self.compute_scale > 0.0) {
            return Err((
                "compute_scale".into(),
                format!("expected a number above 0, got {}", self.compute_scale),
            ));
        }
        if self.ranks == Some(0) {
            return Err(("ranks".into(), "expected at least 1".into()));
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_pattern_names_each_rank_and_a_plain_path_is_replicated() {
        let s = ChakraSpec::new("t/step.{rank}.et");
        assert_eq!(s.file_of(3), "t/step.3.et");
        assert!(!s.replicated());
        assert!(ChakraSpec::new("t/step.0.et.gz").replicated());
    }

    #[test]
    fn a_scale_of_zero_or_no_ranks_is_refused_by_field() {
        let mut s = ChakraSpec::new("a.et");
        s.compute_scale = 0.0;
        assert_eq!(s.check().unwrap_err().0, "compute_scale");
        s.compute_scale = 1.5;
        s.ranks = Some(0);
        assert_eq!(s.check().unwrap_err().0, "ranks");
    }
}
