//! A fuzz harness over what users type: scenario files, flow cases, MPI traces and `--set`
//! values, with edge values (0, negative, NaN, inf, 1e300, 1e-300, huge counts). Whatever
//! comes in, hetsim must not panic: it refuses the input with a message, or it runs and its
//! result keeps the invariants of the model (no flow ends before its start plus its route's
//! latency or faster than its bottleneck allows; `sim_time_s` is the last event; bytes are
//! conserved).
//!
//! CI runs 1,000 cases per property (under a second). For a longer run:
//! `PROPTEST_CASES=20000 cargo test --release --test fuzz`.

use proptest::prelude::*;
use std::path::Path;

use hetsim::schema::load::parse_scenario;
use hetsim::{Error, RunOptions};

/// A number as a user might write it, edge values included.
fn number() -> impl Strategy<Value = String> {
    prop_oneof![
        4 => (1u32..5000).prop_map(|v| v.to_string()),
        2 => (0.001f64..1e4).prop_map(|v| format!("{v}")),
        1 => prop::sample::select(vec![
            "0", "-1", "-0.5", "NaN", "nan", "inf", "-inf", "1e300", "1e-300", "4e9",
            "18446744073709551616", "1e20", "0.0000001",
        ])
        .prop_map(String::from),
    ]
}

fn size() -> impl Strategy<Value = String> {
    (
        number(),
        prop::sample::select(vec!["B", "kB", "MB", "GB", "KiB", "", " B", "TB"]),
    )
        .prop_map(|(v, u)| format!("{v}{u}"))
}

fn bandwidth() -> impl Strategy<Value = String> {
    (
        number(),
        prop::sample::select(vec!["GB/s", "B/s", "MB/s", "Gbps", "GB"]),
    )
        .prop_map(|(v, u)| format!("{v}{u}"))
}

fn duration() -> impl Strategy<Value = String> {
    (
        number(),
        prop::sample::select(vec!["us", "ns", "s", "ms", "h", ""]),
    )
        .prop_map(|(v, u)| format!("{v}{u}"))
}

/// Options of a fuzzed run: no progress display.
fn opts() -> RunOptions {
    RunOptions {
        disable: Vec::new(),
        progress: false,
        ..Default::default()
    }
}

/// A scenario of explicit links and flows whose values are all fuzzed.
#[derive(Debug, Clone)]
struct FlowScenario {
    links: Vec<(String, String)>,
    flows: Vec<(Vec<usize>, String, String)>,
}

impl FlowScenario {
    fn text(&self) -> String {
        let links: Vec<String> = self
            .links
            .iter()
            .enumerate()
            .map(|(i, (bw, lat))| {
                format!(r#"NamedLink(name: "l{i}", bandwidth: "{bw}", latency: "{lat}")"#)
            })
            .collect();
        let flows: Vec<String> = self
            .flows
            .iter()
            .enumerate()
            .map(|(i, (route, size, start))| {
                let route: Vec<String> = route.iter().map(|l| format!(r#""l{l}""#)).collect();
                format!(
                    r#"FlowSpec(id: "f{i}", route: [{}], size: "{size}", start: "{start}")"#,
                    route.join(", ")
                )
            })
            .collect();
        format!(
            "Scenario(name: \"fuzz\", platform: Explicit(links: [{}]), workload: Flows([{}]), limits: (max_events: 100000))",
            links.join(", "),
            flows.join(", ")
        )
    }
}

fn flow_scenario() -> impl Strategy<Value = FlowScenario> {
    prop::collection::vec((bandwidth(), duration()), 1..4).prop_flat_map(|links| {
        let n = links.len();
        let flow = (
            prop::collection::vec(0..n, 0..4),
            size(),
            prop_oneof![3 => Just("0s".to_string()), 1 => duration()],
        );
        prop::collection::vec(flow, 0..5).prop_map(move |flows| FlowScenario {
            links: links.clone(),
            flows,
        })
    })
}

/// The invariants of a finished flows run, from the scenario as the loader read it.
fn check_flows_run(s: &hetsim::schema::scenario::Scenario, report: &hetsim::output::Report) {
    use hetsim::schema::scenario::{PlatformSpec, Workload};
    let PlatformSpec::Explicit(platform) = &s.platform else {
        unreachable!()
    };
    let Workload::Flows(specs) = &s.workload else {
        unreachable!()
    };
    let link = |name: &str| platform.links.iter().find(|l| l.name == name).unwrap();
    let mut last = 0.0f64;
    let mut bytes = 0.0;
    for (spec, row) in specs.iter().zip(&report.flows) {
        let route = spec.route.as_ref().unwrap();
        let latency: f64 = route.iter().map(|l| link(l).latency.0.as_secs_f64()).sum();
        let slowest = route
            .iter()
            .map(|l| link(l).bandwidth.0)
            .fold(f64::INFINITY, f64::min);
        let start = spec.start.0.as_secs_f64();
        assert!(row.end_s.is_finite(), "{row:?}");
        // Flows carry whole bytes: a size is rounded to the nearest byte.
        let size = spec.size.0.round();
        assert_eq!(row.bytes, size, "bytes conserved: {row:?}");
        let floor = start + latency + size / slowest;
        assert!(
            row.end_s >= floor * (1.0 - 1e-9) - 1e-12,
            "{row:?} ends before start + latency + size / bottleneck = {floor}"
        );
        last = last.max(row.end_s);
        bytes += row.bytes;
    }
    let sim = report.summary["sim_time_s"].as_f64().unwrap();
    assert!(
        (sim - last).abs() <= 1e-9 * last.max(1.0),
        "sim_time_s {sim} is the last flow's end {last}"
    );
    let total = report.summary["flows"]["bytes"].as_f64().unwrap();
    assert!(
        (total - bytes).abs() <= 1e-9 * bytes.max(1.0),
        "{total} vs {bytes}"
    );
}

/// A random TI trace for 2 ranks: any op, any argument, in any order.
fn trace() -> impl Strategy<Value = String> {
    let op = prop::sample::select(vec![
        "init",
        "finalize",
        "compute",
        "sleep",
        "send",
        "isend",
        "recv",
        "irecv",
        "wait",
        "waitall",
        "barrier",
        "bcast",
        "reduce",
        "allreduce",
        "allgather",
        "alltoall",
        "reduce_scatter",
        "sendrecv",
        // SMPI's dialect (smpirun -trace-ti).
        "sendRecv",
        "test",
        "gather",
        "scatter",
        "gatherv",
        "scatterv",
        "allgatherv",
        "alltoallv",
        "reducescatter",
        "frobnicate",
    ]);
    let arg = prop_oneof![
        4 => (0u32..3).prop_map(|v| v.to_string()),
        1 => prop::sample::select(vec!["6", "0", "57", "99", "-1"]).prop_map(String::from),
        2 => number(),
        1 => Just("device".to_string()),
        1 => Just("host".to_string()),
    ];
    let line = (0u32..3, op, prop::collection::vec(arg, 0..7))
        .prop_map(|(r, op, args)| format!("{r} {op} {}", args.join(" ")));
    prop::collection::vec(line, 0..12).prop_map(|l| l.join("\n"))
}

const PLATFORM: &str = r#"Cluster(nodes: 2, node: NodeSpec(cpu_cores: 4, gpus: 1, gpu: GpuSpec(name: "G", memory: "16GiB", speed: "10TFlop/s"), nics: 1, nic: NicSpec(bandwidth: "100Gb/s", latency: "500ns")), network: Star(bandwidth: "100Gb/s", latency: "100ns"))"#;

/// The scenario of a fuzzed trace.
fn trace_scenario(text: &str) -> String {
    format!(
        "Scenario(name: \"t\", platform: {PLATFORM}, workload: Mpi(ranks: 2, gpus_per_node: 1, program: TraceText([(\"t.ti\", {text:?})])), limits: (max_events: 100000))"
    )
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(1000))]

    /// Scenario files of explicit links and flows.
    #[test]
    fn a_flows_scenario_is_refused_or_keeps_its_invariants(case in flow_scenario()) {
        let text = case.text();
        let Ok(s) = parse_scenario(&text, "fuzz.ron", Path::new("."), &[]) else {
            return Ok(());
        };
        match hetsim::simulate_report(&s, &opts()) {
            Ok(report) => check_flows_run(&s, &report),
            Err(e) => prop_assert!(!e.to_string().is_empty()),
        }
    }

    /// Flow cases (JSON numbers: no NaN or inf, but 0, negatives and 1e300 are there).
    #[test]
    fn a_flow_case_is_refused_or_ends_no_flow_too_early(
        links in prop::collection::vec(
            (prop::sample::select(vec![1.0, 1e9, 0.0, -1.0, 1e300, 1e-300, 125e6]),
             prop::sample::select(vec![0.0, 1e-6, -1e-3, 1e300, 1e-300])),
            1..4),
        flows in prop::collection::vec(
            (prop::collection::vec(0usize..4, 0..4),
             prop::sample::select(vec![0.0, 1.0, 1e6, -5.0, 1e300, 1e20]),
             prop::sample::select(vec![0.0, 0.5, -1.0, 1e300])),
            0..5),
    ) {
        let links_json: Vec<String> = links
            .iter()
            .enumerate()
            .map(|(i, (bw, lat))| format!(r#"{{"id": "l{i}", "bandwidth": {bw:e}, "latency": {lat:e}}}"#))
            .collect();
        let flows_json: Vec<String> = flows
            .iter()
            .enumerate()
            .map(|(i, (route, size, start))| {
                let route: Vec<String> = route.iter().map(|l| format!(r#""l{l}""#)).collect();
                format!(r#"{{"id": "f{i}", "route": [{}], "size": {size:e}, "start": {start:e}}}"#, route.join(", "))
            })
            .collect();
        let text = format!(r#"{{"links": [{}], "flows": [{}]}}"#, links_json.join(", "), flows_json.join(", "));
        if let Ok(r) = hetsim::flowcase::solve(&text, "case.json", &opts()) {
            for (i, (route, size, start)) in flows.iter().enumerate() {
                let end = r.ends[&format!("f{i}")];
                // The format counts a link a route repeats once (tests/data/flows/README.md).
                let mut route = route.clone();
                route.sort_unstable();
                route.dedup();
                let latency: f64 = route.iter().map(|&l| links[l].1).sum();
                let slowest = route.iter().map(|&l| links[l].0).fold(f64::INFINITY, f64::min);
                prop_assert!(end.is_finite());
                prop_assert!(end >= (start + latency + size / slowest) * (1.0 - 1e-9) - 1e-12,
                    "f{i} ends at {end}: {text}");
            }
        }
    }

    /// Traces of any op with any arguments, on 2 ranks and 2 GPUs.
    #[test]
    fn a_trace_is_refused_or_runs_to_a_finite_end(text in trace()) {
        let Ok(s) = parse_scenario(&trace_scenario(&text), "t.ron", Path::new("."), &[]) else {
            return Ok(());
        };
        if let Ok(report) = hetsim::simulate_report(&s, &opts()) {
            let sim = report.summary["sim_time_s"].as_f64().unwrap();
            prop_assert!(sim.is_finite() && sim >= 0.0);
        }
    }

    /// OTF2 archives with bytes flipped anywhere (anchor, definitions, local definitions,
    /// events): refused with a message, or replayed to a finite end.
    #[test]
    fn a_flipped_otf2_archive_is_refused_or_runs_to_a_finite_end(
        file in prop::sample::select(vec!["traces.otf2", "traces.def", "traces/0.def", "traces/0.evt", "traces/2.evt"]),
        flips in prop::collection::vec((any::<usize>(), any::<u8>()), 1..4),
    ) {
        let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/data/otf2/nonblocking");
        let tmp = tempfile::tempdir().unwrap();
        let dir = tmp.path();
        std::fs::create_dir_all(dir.join("traces")).unwrap();
        for f in ["traces.otf2", "traces.def"] {
            std::fs::copy(src.join(f), dir.join(f)).unwrap();
        }
        for r in 0..4 {
            for ext in ["def", "evt"] {
                let f = format!("traces/{r}.{ext}");
                std::fs::copy(src.join(&f), dir.join(&f)).unwrap();
            }
        }
        let target = dir.join(file);
        let mut bytes = std::fs::read(&target).unwrap();
        for &(at, x) in &flips {
            let i = at % bytes.len();
            bytes[i] ^= x.max(1);
        }
        std::fs::write(&target, bytes).unwrap();
        let text = format!(
            "Scenario(name: \"o\", platform: {}, workload: Mpi(ranks: 4, program: Otf2({:?})), limits: (max_events: 100000))",
            PLATFORM.replace("nodes: 2", "nodes: 4"),
            dir.join("traces.otf2").display().to_string()
        );
        let Ok(s) = parse_scenario(&text, "o.ron", Path::new("."), &[]) else {
            return Ok(());
        };
        match hetsim::simulate_report(&s, &opts()) {
            Ok(report) => {
                let sim = report.summary["sim_time_s"].as_f64().unwrap();
                prop_assert!(sim.is_finite() && sim >= 0.0);
            }
            Err(e) => prop_assert!(!e.to_string().is_empty()),
        }
    }

    /// `--set` of any value on the fields users change most, on the embedded what-if files.
    #[test]
    fn a_set_value_is_refused_or_builds(
        file in prop::sample::select(vec!["halo.ron", "allreduce.ron", "cholesky.ron"]),
        field in prop::sample::select(vec![
            "platform.nodes", "platform.node.gpus", "platform.node.cpu_cores",
            "platform.network.bandwidth", "platform.network.latency", "platform.node.gpu.speed",
            "workload.Mpi.ranks", "workload.Mpi.gpus_per_node",
            "workload.Mpi.program.Generator.Halo3d.iterations",
            "workload.Mpi.program.Generator.Halo3d.compute",
            "workload.Mpi.program.Generator.Halo3d.side",
            "workload.Cuda.repeat", "workload.Cuda.launch_overhead",
            "workload.n", "workload.tile", "workload.scheduler",
            "limits.max_memory", "limits.max_events", "output.width", "seed", "name",
        ]),
        value in prop_oneof![number(), size(), duration(), bandwidth()],
    ) {
        let text = hetsim::embedded::FILES
            .iter()
            .find(|(name, _)| name.ends_with(file))
            .map(|(_, text)| *text)
            .unwrap();
        let read = |name: &str| {
            hetsim::embedded::FILES
                .iter()
                .find(|(n, _)| n.ends_with(name.trim_start_matches("../")))
                .map(|(n, t)| (n.to_string(), t.to_string()))
                .ok_or_else(|| format!("no embedded file {name}"))
        };
        let set = format!("{field}={value}");
        let loaded = hetsim::schema::load::parse_scenario_with(text, file, &read, &[set]);
        if let Ok(s) = loaded {
            // Building runs every start-up check; its result may be an error, never a panic.
            let _ = hetsim::build_app(&s, &opts());
        }
    }
}

/// The properties above return early on refused input: the shapes they start from must be
/// valid, or they would test only the parser's first error.
#[test]
fn the_fuzzed_shapes_are_valid_when_their_values_are() {
    // The OTF2 property's archive runs as it is (flips then make it fail or change).
    let anchor =
        Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/data/otf2/nonblocking/traces.otf2");
    let text = format!(
        "Scenario(name: \"o\", platform: {}, workload: Mpi(ranks: 4, program: Otf2({:?})))",
        PLATFORM.replace("nodes: 2", "nodes: 4"),
        anchor.display().to_string()
    );
    let s = parse_scenario(&text, "o.ron", Path::new("."), &[]).unwrap();
    hetsim::simulate_report(&s, &opts()).unwrap();
    let flows = FlowScenario {
        links: vec![("1GB/s".into(), "1us".into())],
        flows: vec![(vec![0], "1MB".into(), "0s".into())],
    };
    let s = parse_scenario(&flows.text(), "f.ron", Path::new("."), &[]).unwrap();
    let report = hetsim::simulate_report(&s, &opts()).unwrap();
    check_flows_run(&s, &report);
    assert_eq!(report.flows[0].end_s, 1e-6 + 1e-3);
    let t = trace_scenario("0 init\n1 init\n0 send 1 1000\n1 recv 0 1000\n0 finalize\n1 finalize");
    let s = parse_scenario(&t, "t.ron", Path::new("."), &[]).unwrap();
    let report = hetsim::simulate_report(&s, &opts()).unwrap();
    assert!(report.summary["sim_time_s"].as_f64().unwrap() > 0.0);
}

/// Where the numbers of a scenario text are: bare literals and the numeric start of quoted
/// quantities (`"7.8TFlop/s"`), as byte ranges, and whether the number is a quantity's.
fn number_spans(text: &str) -> Vec<(usize, usize, bool)> {
    let b = text.as_bytes();
    let mut spans = Vec::new();
    let mut i = 0;
    while i < b.len() {
        let starts = (b[i].is_ascii_digit() || b[i] == b'-')
            && i > 0
            && matches!(b[i - 1], b' ' | b'(' | b'[' | b'"' | b':' | b'\t' | b'\n');
        if starts {
            let j = (i + 1..b.len())
                .find(|&j| {
                    !(b[j].is_ascii_digit() || matches!(b[j], b'.' | b'e' | b'E' | b'-' | b'+'))
                })
                .unwrap_or(b.len());
            if text[i..j].parse::<f64>().is_ok() {
                spans.push((i, j, b[i - 1] == b'"'));
            }
            i = j;
        } else {
            i += 1;
        }
    }
    spans
}

/// Every number in a JSON document; a null counts as NaN (serde_json writes NaN so, and a
/// run's summary has no null of its own).
fn numbers(v: &serde_json::Value, out: &mut Vec<f64>) {
    match v {
        serde_json::Value::Number(n) => out.extend(n.as_f64()),
        serde_json::Value::Null => out.push(f64::NAN),
        serde_json::Value::Array(a) => a.iter().for_each(|x| numbers(x, out)),
        serde_json::Value::Object(o) => o.values().for_each(|x| numbers(x, out)),
        _ => {}
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(200))]

    /// Issue 52: a non-finite, negative, zero or huge number in any numeric place of the
    /// what-if files (bare, or the number of a quantity with its unit) is refused as input, or
    /// the run ends with a summary whose every number is finite; never a panic, never a NaN.
    /// A negative quantity (a size, duration, bandwidth or rate with its unit) is always
    /// refused as input: run, it made work take no time.
    #[test]
    fn any_number_anywhere_is_refused_or_gives_finite_results(
        file in prop::sample::select(vec!["halo.ron", "allreduce.ron", "cholesky.ron"]),
        target in 0usize..hetsim::embedded::FILES.len(),
        at in 0usize..10_000,
        value in prop::sample::select(vec!["NaN", "inf", "-inf", "-1", "-1e300", "0", "1e300", "1e-300"]),
    ) {
        // One number of one embedded file (the scenario, its platform, or its StarPU machine's
        // files) is changed; the scenario reads the changed file where it reads that one.
        let (target_name, target_text) = hetsim::embedded::FILES[target];
        let spans = number_spans(target_text);
        prop_assume!(!spans.is_empty());
        let (i, j, quantity) = spans[at % spans.len()];
        let negative_quantity = quantity && value.starts_with('-') && target_name.ends_with(".ron");
        let edited = format!("{}{value}{}", &target_text[..i], &target_text[j..]);
        // Whether the run read the changed file (only then must a negative quantity be refused).
        let read_it = std::cell::Cell::new(false);
        let text_of = |name: &str| -> String {
            if name == target_name {
                read_it.set(true);
                edited.clone()
            } else {
                hetsim::embedded::file(name).unwrap().to_string()
            }
        };
        let scenario_name = hetsim::embedded::FILES.iter().find(|(n, _)| n.ends_with(file)).unwrap().0;
        let read = |name: &str| {
            hetsim::embedded::FILES
                .iter()
                .find(|(n, _)| n.ends_with(name.trim_start_matches("../")))
                .map(|(n, _)| (n.to_string(), text_of(n)))
                .ok_or_else(|| format!("no embedded file {name}"))
        };
        let Ok(mut s) = hetsim::schema::load::parse_scenario_with(&text_of(scenario_name), file, &read, &[]) else {
            return Ok(());
        };
        let must_refuse = negative_quantity && read_it.get();
        let near = format!(
            "{target_name}: {}",
            &edited[i.saturating_sub(40)..(i + 40).min(edited.len())]
        );
        s.output = hetsim::schema::scenario::OutputSpec::tables_only();
        // A bound on the run, so that a slow but legal value ends as a limit error.
        s.limits.max_events = Some(2_000_000);
        match hetsim::simulate_report(&s, &opts()) {
            Ok(report) => {
                prop_assert!(!must_refuse, "a negative quantity ran: {near}");
                let mut all = Vec::new();
                numbers(&report.summary, &mut all);
                prop_assert!(all.iter().all(|x| x.is_finite()),
                    "a number of the summary is not finite: {near}");
                let sim = report.summary["sim_time_s"].as_f64().unwrap();
                prop_assert!(sim >= 0.0);
            }
            Err(Error::Input(_) | Error::OutOfRange { .. }) => {}
            Err(Error::Run(e)) => prop_assert!(!must_refuse, "a negative quantity failed as a run: {e}: {near}"),
        }
    }
}

/// Every shipped scenario file that loads as it is (studies load as scenarios too), with its
/// path and text.
fn shipped_scenarios() -> Vec<(std::path::PathBuf, String)> {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let mut files = Vec::new();
    for dir in ["scenarios", "scenarios/studies", "tests/data/scenarios"] {
        let mut names: Vec<_> = std::fs::read_dir(root.join(dir))
            .unwrap()
            .map(|e| e.unwrap().path())
            .filter(|p| p.extension().is_some_and(|e| e == "ron"))
            .collect();
        names.sort();
        for p in names {
            let text = std::fs::read_to_string(&p).unwrap();
            if parse_scenario(&text, "f.ron", p.parent().unwrap(), &[]).is_ok() {
                files.push((p, text));
            }
        }
    }
    files
}

/// Ways to give an entry of a struct or a map twice in `text`, as (where to insert, what):
/// a line that holds one whole entry (`field: value,` or `"key": value,`, brackets balanced
/// on the line) inserted again after itself, and the first entry of each map written on one
/// line (`{"a": false}`) inserted again before itself.
fn repeated_entries(text: &str) -> Vec<(usize, String)> {
    let mut edits = Vec::new();
    let mut at = 0;
    for line in text.split_inclusive('\n') {
        let t = line.trim();
        let key_end = t.find(':').unwrap_or(0);
        let key = &t[..key_end];
        let is_key = !key.is_empty()
            && (key.chars().all(|c| c.is_ascii_alphanumeric() || c == '_')
                || (key.starts_with('"') && key.ends_with('"') && key.len() > 1));
        if is_key && !t.starts_with("//") && t.ends_with(',') && depth(t) == 0 {
            edits.push((at + line.len(), line.to_string()));
        }
        at += line.len();
    }
    for (open, _) in text.match_indices('{') {
        let body = &text[open + 1..];
        let mut level = 0;
        let end = body.char_indices().find(|&(_, c)| {
            level += depth(&c.to_string());
            level < 0 || (level == 0 && c == ',')
        });
        let entry = end.map_or("", |(e, _)| &body[..e]).trim();
        if entry.contains(':') && !entry.contains('\n') {
            edits.push((open + 1, format!("{entry}, ")));
        }
    }
    edits
}

/// Brackets opened minus brackets closed in `text`.
fn depth(text: &str) -> i32 {
    text.chars()
        .map(|c| match c {
            '(' | '[' | '{' => 1,
            ')' | ']' | '}' => -1,
            _ => 0,
        })
        .sum()
}

/// A huge count as a user might mistype it: past what any machine holds, near the integer
/// limits, and one that only a budget can catch.
fn huge_count() -> impl Strategy<Value = &'static str> {
    prop::sample::select(vec![
        "100000",
        "10000000",
        "4294967295",
        "4294967296",
        "1000000000000",
        "9223372036854775807",
    ])
}

/// Where the bare integers of a scenario text are (not a quantity's number, not a decimal).
fn integer_spans(text: &str) -> Vec<(usize, usize)> {
    number_spans(text)
        .into_iter()
        .filter(|&(i, j, quantity)| !quantity && text[i..j].bytes().all(|b| b.is_ascii_digit()))
        .map(|(i, j, _)| (i, j))
        .collect()
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(100))]

    /// Issue 52: an entry given twice in any struct or map of any shipped scenario (a field,
    /// a switch, a codelet model, a forced algorithm) is refused: never the last one kept.
    #[test]
    fn an_entry_given_twice_anywhere_is_refused(
        file in 0usize..64,
        at in 0usize..10_000,
    ) {
        let files = shipped_scenarios();
        let (path, text) = &files[file % files.len()];
        let edits = repeated_entries(text);
        prop_assume!(!edits.is_empty());
        let (i, entry) = &edits[at % edits.len()];
        let edited = format!("{}{entry}{}", &text[..*i], &text[*i..]);
        let loaded = parse_scenario(&edited, "f.ron", path.parent().unwrap(), &[]);
        prop_assert!(
            loaded.is_err(),
            "{}: `{}` given twice was accepted",
            path.display(),
            entry.trim()
        );
    }

    /// Issue 52: a huge number in any count of any shipped scenario is refused as input, or
    /// the run ends (at most at its event limit) with an error or a result; never an abort
    /// for memory, a hang or a panic.
    #[test]
    fn a_huge_count_anywhere_is_refused_or_bounded(
        file in 0usize..64,
        at in 0usize..10_000,
        value in huge_count(),
    ) {
        let files = shipped_scenarios();
        let (path, text) = &files[file % files.len()];
        let spans = integer_spans(text);
        prop_assume!(!spans.is_empty());
        let (i, j) = spans[at % spans.len()];
        let edited = format!("{}{value}{}", &text[..i], &text[j..]);
        let Ok(mut s) = parse_scenario(&edited, "f.ron", path.parent().unwrap(), &[]) else {
            return Ok(());
        };
        s.output = hetsim::schema::scenario::OutputSpec::tables_only();
        s.limits.max_events = Some(200_000);
        let _ = hetsim::simulate_report(&s, &opts());
    }
}

#[test]
fn the_edit_finders_see_entries_and_counts() {
    let text = "S(\n  a: 1,\n  b: (x: 2, y: [3]),\n  c: [\n    4,\n  ],\n  \"k\": \"2us\",\n  m: {\"p\": (q: 1), \"r\": 2},\n)\n";
    let edits = repeated_entries(text);
    let entries: Vec<&str> = edits.iter().map(|(_, e)| e.trim()).collect();
    let expected = [
        "a: 1,",
        "b: (x: 2, y: [3]),",
        "\"k\": \"2us\",",
        "m: {\"p\": (q: 1), \"r\": 2},",
        "\"p\": (q: 1),",
    ];
    assert_eq!(entries, expected);
    let counts: Vec<&str> = integer_spans(text)
        .iter()
        .map(|&(i, j)| &text[i..j])
        .collect();
    assert_eq!(counts, ["1", "2", "3", "4", "1", "2"]);
    assert!(shipped_scenarios().len() >= 10);
}
