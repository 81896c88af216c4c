//! Scenarios and platforms built into the binary, so `hetsim run` works anywhere.

use hetsim_schema::load::{LoadError, parse_scenario_with};
use hetsim_schema::scenario::Scenario;

/// The default scenario of `hetsim run` without a file.
pub const DEMO: &str = include_str!("../scenarios/demo.ron");

/// Platform files the embedded scenarios include, by the name they use.
pub const PLATFORMS: &[(&str, &str)] = &[
    (
        "platforms/demo-2node.ron",
        include_str!("../scenarios/platforms/demo-2node.ron"),
    ),
    (
        "platforms/lassen.ron",
        include_str!("../scenarios/platforms/lassen.ron"),
    ),
];

/// The demo scenario, with overrides applied.
pub fn demo(overrides: &[String]) -> Result<Scenario, LoadError> {
    let read = |name: &str| {
        PLATFORMS
            .iter()
            .find(|(n, _)| *n == name)
            .map(|(n, text)| (format!("<embedded {n}>"), text.to_string()))
            .ok_or_else(|| format!("no embedded platform `{name}`"))
    };
    parse_scenario_with(DEMO, "<embedded scenarios/demo.ron>", &read, overrides)
}
