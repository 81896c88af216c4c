//! Flow cases: the JSON format of the reference max-min problems (`tests/data/flows/README.md`),
//! run through the same engine, platform and network as any scenario.

use serde::Deserialize;
use std::collections::{BTreeMap, HashMap};

use hetsim_schema::SimTime;
use hetsim_schema::scenario::{
    Explicit, FlowSpec, NamedLink, OutputSpec, PlatformSpec, Scenario, Sharing, Workload,
};
use hetsim_schema::units::{Bandwidth, Bytes, Duration};

use crate::{Error, RunOptions};
use hetsim_schema::pace::Extreme;

#[derive(Debug, Deserialize)]
struct Case {
    links: Vec<CaseLink>,
    flows: Vec<CaseFlow>,
    /// Informational (e.g. how the case was generated).
    #[serde(default, rename = "generator")]
    _generator: Option<serde_json::Value>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct CaseLink {
    id: String,
    bandwidth: f64,
    #[serde(default)]
    latency: f64,
    #[serde(default = "shared")]
    sharing: String,
}

fn shared() -> String {
    "shared".into()
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct CaseFlow {
    id: String,
    route: Vec<String>,
    size: f64,
    #[serde(default)]
    start: f64,
}

/// Deserializes a case. The plain parse is the fast one (tracking field paths cost about a
/// tenth of a 10,000-flow case's run); only a case that fails it is parsed again, to name the
/// field at fault.
fn read_case(text: &str, label: &str) -> Result<Case, Error> {
    serde_json::from_str(text).map_err(|plain| {
        let de = &mut serde_json::Deserializer::from_str(text);
        match serde_path_to_error::deserialize::<_, Case>(de) {
            Err(e) => Error::Input(format!("{label}: field `{}`: {}", e.path(), e.inner())),
            // Only what follows the case's object can fail the plain parse alone.
            Ok(_) => Error::Input(format!("{label}: {plain}")),
        }
    })
}

/// Reads a flow case into a scenario (an explicit platform and a `Flows` workload).
pub fn parse(text: &str, label: &str) -> Result<Scenario, Error> {
    let case = read_case(text, label)?;
    let bad = |path: String, what: String| Error::Input(format!("{label}: field `{path}`: {what}"));
    let mut links = Vec::with_capacity(case.links.len());
    let mut sharing_of = HashMap::new();
    for (i, l) in case.links.iter().enumerate() {
        let sharing = match l.sharing.as_str() {
            "shared" => Sharing::Shared,
            "split-duplex" => Sharing::SplitDuplex,
            "fatpipe" => Sharing::FatPipe,
            other => {
                return Err(bad(
                    format!("links[{i}].sharing"),
                    format!("`{other}`: expected shared, split-duplex or fatpipe"),
                ));
            }
        };
        if !(l.bandwidth.is_finite() && l.bandwidth > 0.0) {
            return Err(bad(
                format!("links[{i}].bandwidth"),
                format!("expected a positive bandwidth, got {}", l.bandwidth),
            ));
        }
        let latency =
            SimTime::try_from_secs(l.latency).map_err(|e| bad(format!("links[{i}].latency"), e))?;
        sharing_of.insert(l.id.as_str(), sharing);
        links.push(NamedLink {
            name: l.id.clone(),
            bandwidth: Bandwidth(l.bandwidth),
            latency: Duration(latency),
            sharing,
        });
    }
    let mut flows = Vec::with_capacity(case.flows.len());
    for (i, f) in case.flows.iter().enumerate() {
        // The format counts a link a route lists twice once for that flow (the README), so
        // the route keeps its first crossing of each capacity: hetsim's own platforms, like
        // SimGrid's, charge a link once per listing.
        let mut route: Vec<String> = Vec::with_capacity(f.route.len());
        let mut crossed = Vec::with_capacity(f.route.len());
        for hop in &f.route {
            let (name, dir) = match (hop.strip_suffix(":up"), hop.strip_suffix(":down")) {
                (Some(n), _) => (n, "up"),
                (_, Some(n)) => (n, "down"),
                _ => (hop.as_str(), "up"),
            };
            let Some(&sharing) = sharing_of.get(name) else {
                return Err(bad(
                    format!("flows[{i}].route"),
                    format!("flow `{}` names unknown link `{name}`", f.id),
                ));
            };
            let capacity = match sharing {
                Sharing::SplitDuplex => (name, dir),
                Sharing::Shared | Sharing::FatPipe => (name, ""),
            };
            if !crossed.contains(&capacity) {
                crossed.push(capacity);
                route.push(hop.clone());
            }
        }
        if !(f.size.is_finite() && f.size >= 0.0) {
            return Err(bad(
                format!("flows[{i}].size"),
                format!("expected a non-negative size, got {}", f.size),
            ));
        }
        let start =
            SimTime::try_from_secs(f.start).map_err(|e| bad(format!("flows[{i}].start"), e))?;
        flows.push(FlowSpec {
            id: Some(f.id.clone()),
            src: None,
            dst: None,
            route: Some(route),
            size: Bytes(f.size),
            start: Duration(start),
        });
    }
    Ok(Scenario {
        name: label.to_string(),
        seed: 0,
        platform: PlatformSpec::Explicit(Explicit {
            links,
            routes: vec![],
        }),
        workload: Workload::Flows(flows),
        jobs: Vec::new(),
        switches: Default::default(),
        // A flow case asks for completion times only: nothing to record.
        output: OutputSpec::tables_only(),
        limits: Default::default(),
        runtime: Default::default(),
        network_model: Default::default(),
    })
}

/// What solving a flow case gives.
#[derive(Debug, Clone)]
pub struct CaseResult {
    /// Each flow's completion time in seconds, by id.
    pub ends: BTreeMap<String, f64>,
    /// What the run cost.
    pub work: crate::Work,
}

/// Runs a flow case.
pub fn solve(text: &str, label: &str, opts: &RunOptions) -> Result<CaseResult, Error> {
    let scenario = parse(text, label)?;
    let (mut app, run) = crate::simulate(&scenario, opts).map_err(|e| match e {
        Error::Input(m) => Error::Input(in_case_terms(label, &m)),
        Error::OutOfRange { message, pace } => Error::OutOfRange {
            message: format!("{label}: {message}"),
            pace: pace
                .into_iter()
                .map(|e| Extreme {
                    source: case_field(&e.source).unwrap_or(e.source),
                    ..e
                })
                .collect(),
        },
        e => e,
    })?;
    let work = crate::Work::of(&app, run);
    let report = hetsim_output::report(app.world_mut(), &scenario.name, scenario.seed, &run);
    let ends = report.flows.into_iter().map(|f| (f.id, f.end_s)).collect();
    Ok(CaseResult { ends, work })
}

/// An error of the scenario a case becomes, in the case's own terms: its file, and the JSON
/// field (`links[i]`, `flows[i]`) for the scenario's `platform.links[i]` and
/// `workload.Flows[i]` (a link's `name` is its `id`).
fn in_case_terms(label: &str, message: &str) -> String {
    let translate = |path: &str| -> Option<String> {
        if let Some(rest) = path.strip_prefix("platform.links[") {
            let (i, field) = rest.split_once(']')?;
            let field = if field == ".name" { ".id" } else { field };
            Some(format!("links[{i}]{field}"))
        } else {
            let rest = path.strip_prefix("workload.Flows[")?;
            Some(format!("flows[{rest}"))
        }
    };
    match message.split_once(": ") {
        Some((path, why)) => match translate(path) {
            Some(field) => format!("{label}: field `{field}`: {why}"),
            None => format!("{label}: {message}"),
        },
        None => format!("{label}: {message}"),
    }
}

/// The case's JSON field for a field path of the scenario a case becomes
/// (`platform.Explicit.links.1.bandwidth` is `links[1].bandwidth`).
fn case_field(path: &str) -> Option<String> {
    let (list, rest) = if let Some(rest) = path.strip_prefix("platform.Explicit.links.") {
        ("links", rest)
    } else {
        ("flows", path.strip_prefix("workload.Flows.")?)
    };
    let (i, field) = rest.split_once('.')?;
    Some(format!("{list}[{i}].{field}"))
}

/// How to make a random flow case like the reference performance inputs.
#[derive(Debug, Clone, Copy)]
pub struct Recipe {
    pub flows: usize,
    pub links: usize,
    pub seed: u64,
    /// Starts are spread uniformly over `[0, stagger)` seconds (0: all start at once).
    pub stagger: f64,
}

/// A random flow case by the recipe of `tests/data/flows/README.md`: shared links of 10 to
/// 400 Gb/s with 1 to 5 us of latency (whole nanoseconds), each flow over 2 to 6 distinct
/// random links, sizes log-uniform from 1e4 to 1e8 bytes, starts at whole nanoseconds.
pub fn generate(r: Recipe) -> serde_json::Value {
    use rand::{RngExt, SeedableRng, seq::index::sample};
    let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(r.seed);
    const GBPS: [f64; 6] = [10.0, 25.0, 50.0, 100.0, 200.0, 400.0];
    let links: Vec<serde_json::Value> = (0..r.links)
        .map(|i| {
            let bw = GBPS[rng.random_range(0..GBPS.len())] * 1e9 / 8.0;
            let latency = rng.random_range(1000..=5000u64) as f64 * 1e-9;
            serde_json::json!({"id": format!("l{i}"), "bandwidth": bw, "latency": latency, "sharing": "shared"})
        })
        .collect();
    let stagger_ns = (r.stagger * 1e9) as u64;
    let flows: Vec<serde_json::Value> = (0..r.flows)
        .map(|i| {
            let hops = rng.random_range(2..=6usize).min(r.links);
            let route: Vec<String> = sample(&mut rng, r.links, hops).iter().map(|l| format!("l{l}")).collect();
            let size = 10f64.powf(rng.random_range(4.0..8.0)).round();
            let start = if stagger_ns == 0 { 0.0 } else { rng.random_range(0..stagger_ns) as f64 * 1e-9 };
            serde_json::json!({"id": format!("f{i}"), "route": route, "size": size as u64, "start": start})
        })
        .collect();
    serde_json::json!({
        "generator": {"n": r.flows, "links": r.links, "seed": r.seed, "stagger": r.stagger},
        "links": links,
        "flows": flows,
    })
}
