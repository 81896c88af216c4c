//! Scenario files built into the binary, so that `hetsim run` works anywhere: the what-if
//! scenarios and every file they include, by their path in the repository.

use hetsim_schema::load::{LoadError, parse_scenario_with};
use hetsim_schema::scenario::Scenario;

macro_rules! files {
    ($($path:literal),* $(,)?) => {
        &[$(($path, include_str!(concat!("../", $path)))),*]
    };
}

/// (path in the repository, text).
pub const FILES: &[(&str, &str)] = files!(
    "scenarios/whatif/halo.ron",
    "scenarios/whatif/allreduce.ron",
    "scenarios/whatif/cholesky.ron",
    "scenarios/machines/bus/attila.platform.xml",
    "scenarios/machines/bus/attila.bandwidth",
    "scenarios/machines/bus/attila.latency",
    "scenarios/machines/codelets/45/chol_model_potrf.attila",
    "scenarios/machines/codelets/45/chol_model_trsm.attila",
    "scenarios/machines/codelets/45/chol_model_syrk.attila",
    "scenarios/machines/codelets/45/chol_model_gemm.attila",
);

/// The embedded file at `path`.
pub fn file(path: &str) -> Option<&'static str> {
    FILES.iter().find(|(p, _)| *p == path).map(|(_, t)| *t)
}

/// Loads the embedded scenario at `path` (e.g. `scenarios/whatif/halo.ron`) with overrides;
/// its includes are read from the embedded files, relative to its folder.
pub fn scenario(path: &str, overrides: &[String]) -> Result<Scenario, LoadError> {
    let label = format!("<embedded {path}>");
    let text = file(path).ok_or_else(|| LoadError::new(&label, "", "no such embedded file"))?;
    let dir = path.rsplit_once('/').map_or("", |(d, _)| d);
    let read = |name: &str| {
        let full = normalise(&format!("{dir}/{name}"));
        file(&full)
            .map(|text| (format!("<embedded {full}>"), text.to_string()))
            .ok_or_else(|| format!("no embedded file `{full}`"))
    };
    parse_scenario_with(text, &label, &read, overrides)
}

/// `a/b/../c/./d` -> `a/c/d`.
fn normalise(path: &str) -> String {
    let mut parts: Vec<&str> = Vec::new();
    for p in path.split('/') {
        match p {
            "" | "." => {}
            ".." => {
                parts.pop();
            }
            p => parts.push(p),
        }
    }
    parts.join("/")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn paths_are_normalised() {
        assert_eq!(
            normalise("scenarios/whatif/../platforms/./x.ron"),
            "scenarios/platforms/x.ron"
        );
    }

    #[test]
    fn every_embedded_scenario_loads_from_embedded_files_alone() {
        for (path, _) in FILES
            .iter()
            .filter(|(p, _)| p.starts_with("scenarios/whatif/"))
        {
            scenario(path, &[]).unwrap_or_else(|e| panic!("{path}: {e}"));
        }
    }
}
