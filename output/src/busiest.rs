//! The one rule for "the busiest links", followed by the result line, the timeline's link rows
//! and the link-utilisation picture: the highest mean utilisation (bytes carried over
//! bandwidth x run time, in the busier direction), ties broken by busy time, then by display
//! order.

use hetsim_engine::record::{Recorder, ResourceKind, Sample};

/// How the pictures' notes name the rule.
pub const RULE: &str = "by mean utilisation";

/// The links' `utilisation` samples (% of bandwidth), in recording order.
pub fn utilisation_samples(rec: &Recorder) -> impl Iterator<Item = &Sample> {
    let counter = rec.counters().iter().position(|c| c.name == "utilisation");
    rec.samples().iter().filter(move |s| {
        Some(s.counter.0 as usize) == counter
            && rec.resource_info(s.resource).kind == ResourceKind::Link
    })
}

/// The time integral of each resource's `utilisation` samples (% x s; 0 for a resource never
/// sampled), indexed by resource: proportional to its mean utilisation over the run.
pub fn loads(rec: &Recorder, end_s: f64) -> Vec<f64> {
    let mut load = vec![0.0; rec.resources().len()];
    // Each sample holds until the resource's next one (the last one at an instant wins).
    let mut last: Vec<Option<(f64, f64)>> = vec![None; load.len()];
    for s in utilisation_samples(rec) {
        let i = s.resource.index();
        let t = s.at.as_secs_f64();
        if let Some((t0, v)) = last[i] {
            load[i] += v * (t - t0);
        }
        last[i] = Some((t, s.value));
    }
    for (i, l) in last.iter().enumerate() {
        if let Some((t0, v)) = l {
            load[i] += v * (end_s - t0).max(0.0);
        }
    }
    load
}
