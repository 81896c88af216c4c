//! What a finished NCCL collective leaves for reports, and the name timelines give a group.

use hetsim_schema::cuda::NcclCall;

/// One NCCL call (or group of calls) across the communicator.
#[derive(Debug, Clone)]
pub struct CollectiveRecord {
    pub op: String,
    pub bytes: f64,
    pub algo: String,
    pub proto: String,
    pub channels: u32,
    /// GPUs in the communicator.
    pub ranks: u32,
    /// nccl-tests' busbw / algbw for a single call (`None` for a group of calls).
    pub bus_factor: Option<f64>,
    pub start_s: f64,
    pub end_s: f64,
    /// NCCL's own cost-model prediction, for comparison with the simulated time.
    pub predicted_us: f64,
}

/// The calls' names joined by `+` (a group), as timelines and reports show them.
pub fn group_name(calls: &[NcclCall]) -> String {
    calls
        .iter()
        .map(|c| c.op.name())
        .collect::<Vec<_>>()
        .join("+")
}

#[cfg(test)]
mod tests {
    use super::*;
    use hetsim_schema::load::from_ron;

    #[test]
    fn a_group_is_named_by_its_calls_joined_by_plus() {
        let calls: Vec<NcclCall> = from_ron(
            "[(op: AllReduce, bytes: 8), (op: Broadcast, bytes: 8)]",
            "test",
            "calls",
        )
        .unwrap();
        assert_eq!(group_name(&calls), "all_reduce+broadcast");
        assert_eq!(group_name(&calls[..1]), "all_reduce");
    }
}
