//! Two workloads on one fabric (tests/data/scenarios/mix-pcie.ron): an MPI message and a task
//! runtime's copy cross one PCIe link at once and share it as max-min fairness says, each
//! model hearing of its own flow's end.

mod common;

use hetsim::output::FlowRow;
use hetsim::schema::load::{load_scenario, parse_scenario};
use hetsim::schema::scenario::{OutputSpec, Scenario};
use hetsim::{Error, RunOptions, simulate_report};

fn scenario(set: &[&str]) -> Scenario {
    let file = common::repo().join("tests/data/scenarios/mix-pcie.ron");
    let set: Vec<String> = set.iter().map(|s| s.to_string()).collect();
    let mut s = load_scenario(&file, &set).unwrap();
    s.output = OutputSpec::tables_only();
    s
}

fn run(s: &Scenario, disable: &[&str]) -> Result<hetsim::output::Report, Error> {
    let opts = RunOptions {
        disable: disable.iter().map(|s| s.to_string()).collect(),
        progress: false,
        ..Default::default()
    };
    simulate_report(s, &opts)
}

fn flow<'a>(flows: &'a [FlowRow], id: &str) -> &'a FlowRow {
    flows.iter().find(|f| f.id == id).unwrap()
}

fn close(a: f64, b: f64) -> bool {
    (a - b).abs() <= 1e-12 + 1e-9 * b.abs()
}

#[test]
fn an_mpi_message_and_a_runtime_copy_share_a_pcie_link() {
    // The copy (x0) starts at 0, the message's data (m0.data) at d, after the handshake and
    // pinning. Alone on the 10 GB/s link the copy moves 1e10 d bytes; then each gets 5 GB/s
    // until the copy ends at 0.2 - d; the message, 1e10 d bytes short, ends alone at 0.2 s.
    // Task b runs 10 ms after its copy.
    let r = run(&scenario(&[]), &[]).unwrap();
    let (x, m) = (flow(&r.flows, "x0"), flow(&r.flows, "m0.data"));
    let d = m.start_s;
    assert!(d > 4e-6 && d < 5e-6, "handshake and pinning: {d}");
    assert_eq!(x.start_s, 0.0);
    assert!(close(x.end_s, 0.2 - d), "copy ends at {}", x.end_s);
    assert!(close(m.end_s, 0.2), "message ends at {}", m.end_s);
    let makespan = r.runtime.as_ref().unwrap().makespan_s;
    assert!(close(makespan, 0.2 - d + 0.01), "makespan {makespan}");
    let ranks = &r.mpi.as_ref().unwrap().ranks;
    assert!(
        close(ranks[0].end_s, 0.2),
        "receiver ends at {}",
        ranks[0].end_s
    );

    // Without contention each flow has the link alone: 0.1 s each.
    let r = run(&scenario(&[]), &["contention"]).unwrap();
    let (x, m) = (flow(&r.flows, "x0"), flow(&r.flows, "m0.data"));
    assert!(close(x.end_s, 0.1), "copy alone ends at {}", x.end_s);
    assert!(
        close(m.end_s, m.start_s + 0.1),
        "message alone ends at {}",
        m.end_s
    );
}

#[test]
fn a_mix_holds_one_workload_of_each_kind() {
    let bad = |workload: &str| {
        let text = format!(
            r#"Scenario(name: "m", platform: File("platforms/demo-2node.ron"), workload: {workload})"#
        );
        let s = parse_scenario(&text, "test", &common::repo().join("scenarios"), &[]).unwrap();
        match run(&s, &[]) {
            Err(Error::Input(e)) => e,
            other => panic!(
                "{workload}: expected an input error, got {:?}",
                other.map(|r| r.summary)
            ),
        }
    };
    let flows = r#"Flows([(src: "node[0].host", dst: "node[1].host", size: "1MB")])"#;
    let e = bad(&format!("Mix([{flows}, {flows}])"));
    assert!(
        e.contains("workload.Mix[1].Flows: a second Flows workload"),
        "{e}"
    );
    let e = bad(&format!("Mix([Mix([{flows}])])"));
    assert!(
        e.contains("workload.Mix[0].Mix: expected Flows, Mpi"),
        "{e}"
    );
    let e = bad("Mix([])");
    assert!(
        e.contains("workload.Mix: expected at least one workload"),
        "{e}"
    );
}
