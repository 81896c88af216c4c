//! hetsim: a discrete-event simulator of GPU clusters.
//!
//! This crate is the thin facade over the workspace: it assembles a bevy `App` from a
//! [`Scenario`] (engine, platform, network and workload plugins), runs it, and reports.
//! The CLI (`src/main.rs`) is a client of these functions.

pub mod convert;
pub mod embedded;
pub mod flowcase;
pub mod nccltests;
pub mod p2p;
pub mod study;
pub mod tracestats;
pub mod whatif;

use bevy_app::App;

pub use hetsim_components as components;
pub use hetsim_engine as engine;
pub use hetsim_output as output;
pub use hetsim_schema as schema;
pub use hetsim_systems as systems;

use hetsim_engine::{
    EnginePlugin, ModelDocs, ModelInfo, Recorder, RunError, RunLimits, RunStats, SwitchInfo,
    Switches,
};
use hetsim_schema::pace;
use hetsim_schema::scenario::{Scenario, Workload};
use hetsim_systems::chakra::{ChakraConfig, ChakraPlugin};
use hetsim_systems::cuda::{CudaConfig, CudaJob, CudaPlugin};
use hetsim_systems::mpi::{MpiConfig, MpiJob, MpiPlugin};
use hetsim_systems::nccl::NcclPlugin;
use hetsim_systems::network::{Network, NetworkPlugin};
use hetsim_systems::platform::{PlatformConfig, PlatformPlugin};
use hetsim_systems::runtime::{RuntimeConfig, RuntimePlugin};
use hetsim_systems::workload::{FlowsPlugin, FlowsWorkload};

/// Why a run did not produce results.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum Error {
    /// The scenario or the command line is wrong (exit code 2).
    #[error("{0}")]
    Input(String),
    /// A computed time passed simulated time's range (exit code 2: only input drives time
    /// that far): the engine's `message`, and the inputs that set the pace (`pace`).
    #[error("{message}\n{}", pace::describe(.pace))]
    OutOfRange {
        message: String,
        pace: Vec<pace::Extreme>,
    },
    /// The simulation could not finish (exit code 1).
    #[error("{0}")]
    Run(String),
}

impl Error {
    /// A run that stopped because a computed time passed simulated time's range becomes bad
    /// input blamed on `cause` (a benchmark's size flag: the size it chose drove the time);
    /// any other error stays as it is.
    pub fn blame_time_overflow_on(self, cause: impl FnOnce() -> String) -> Error {
        match self {
            Error::OutOfRange { message, .. } => Error::Input(format!("{}: {message}", cause())),
            e => e,
        }
    }

    /// The same error with `context` before its message (`what-if `gpudirect` (GPUDirect)`).
    pub fn within(self, context: &str) -> Error {
        match self {
            Error::Input(m) => Error::Input(format!("{context}: {m}")),
            Error::OutOfRange { message, pace } => Error::OutOfRange {
                message: format!("{context}: {message}"),
                pace,
            },
            Error::Run(m) => Error::Run(format!("{context}: {m}")),
        }
    }

    pub fn exit_code(&self) -> i32 {
        match self {
            Error::Input(_) | Error::OutOfRange { .. } => 2,
            Error::Run(_) => 1,
        }
    }
}

/// How to run, beyond what the scenario says.
#[derive(Debug, Clone, Default)]
pub struct RunOptions {
    /// Switches to turn off (`--disable NAME`), after the scenario's own `switches`.
    pub disable: Vec<String>,
    /// Show a progress display on stderr (only drawn when stderr is a terminal).
    pub progress: bool,
    /// Also run each job alone on its nodes and report its slowdown (`None`: when the
    /// scenario has more than one job).
    pub alone: Option<bool>,
    /// Run only this one of the scenario's `jobs`, on the nodes it has among all of them.
    pub only_job: Option<usize>,
}

/// The app with every plugin, before any scenario-specific resource.
fn plugins(seed: u64, limits: RunLimits, progress: bool) -> App {
    let mut app = App::empty();
    app.add_plugins(EnginePlugin {
        seed,
        limits,
        progress,
    })
    .add_plugins((
        PlatformPlugin,
        NetworkPlugin,
        FlowsPlugin,
        MpiPlugin,
        CudaPlugin,
        ChakraPlugin,
        NcclPlugin,
        RuntimePlugin,
    ));
    app
}

/// Every switch with its default and its one-line description.
pub fn switches() -> Vec<SwitchInfo> {
    plugins(0, RunLimits::default(), false)
        .world()
        .resource::<Switches>()
        .iter()
        .cloned()
        .collect()
}

/// Every model with what it computes and what it simplifies.
pub fn models() -> Vec<ModelInfo> {
    plugins(0, RunLimits::default(), false)
        .world()
        .resource::<ModelDocs>()
        .0
        .clone()
}

/// Assembles the app for a scenario; errors are input errors.
pub fn build_app(scenario: &Scenario, opts: &RunOptions) -> Result<App, Error> {
    let limits = RunLimits {
        max_time: scenario.limits.max_time.map(|d| d.0),
        max_events: scenario.limits.max_events,
    };
    let mut app = plugins(scenario.seed, limits, opts.progress);
    let world = app.world_mut();
    let mut switches = world.resource_mut::<Switches>();
    for (name, &on) in &scenario.switches {
        switches
            .set(name, on)
            .map_err(|e| Error::Input(format!("switches.{name}: {e}")))?;
    }
    for name in &opts.disable {
        switches
            .set(name, false)
            .map_err(|e| Error::Input(format!("--disable {name}: {e}")))?;
    }
    let record = switches.is_on("record") && scenario.output.needs_recording();
    hetsim_schema::budget::check_outputs(scenario, record)
        .map_err(|(field, why)| Error::Input(format!("{field}: {why}")))?;
    world.resource_mut::<Recorder>().set_on(record);
    world
        .resource_mut::<Network>()
        .set_quantum(scenario.network_model.quantum.0);
    world.insert_resource(PlatformConfig(scenario.platform.clone()));
    if !scenario.jobs.is_empty() {
        insert_jobs(world, scenario, opts.only_job)?;
        app.finish();
        app.cleanup();
        return Ok(app);
    }
    if scenario.workload.is_none() {
        return Err(Error::Input(
            "workload.Mix: expected at least one workload (or `jobs`, each with its own)".into(),
        ));
    }
    let mut kinds = std::collections::BTreeMap::new();
    for (path, part) in scenario.workload.parts() {
        // One model instance per kind: a second MPI job would need a second communicator world.
        let kind = if part.is_task_graph() {
            "task graph"
        } else {
            part.kind()
        };
        if let Some(first) = kinds.insert(kind, path.clone()) {
            return Err(Error::Input(format!(
                "{path}: a second {kind} workload (the first is {first}); a mix holds at most one of each kind"
            )));
        }
        match part {
            Workload::Flows(flows) => {
                world.insert_resource(FlowsWorkload(flows.clone(), Vec::new()))
            }
            Workload::Mpi(spec) => {
                world.insert_resource(MpiConfig(vec![MpiJob::whole(spec.clone(), "workload.Mpi")]))
            }
            Workload::Cuda(spec) => world.insert_resource(CudaConfig(vec![CudaJob::whole(
                spec.clone(),
                "workload.Cuda",
            )])),
            Workload::Chakra(spec) => world.insert_resource(ChakraConfig(spec.clone())),
            Workload::Mix(_) => {
                return Err(Error::Input(format!(
                    "{path}: expected Flows, Mpi, Cuda, Chakra, Cholesky, Lu, Qr or Dag (a mix does not nest)"
                )));
            }
            graph => world.insert_resource(RuntimeConfig {
                workload: graph.clone(),
                runtime: scenario.runtime.clone(),
                log: scenario.output.runtime_log,
            }),
        }
    }
    // Each model plugin adds its step systems now, if the scenario has work for it.
    app.finish();
    app.cleanup();
    Ok(app)
}

/// A scenario's jobs, placed and handed to their models.
fn insert_jobs(
    world: &mut bevy_ecs::world::World,
    scenario: &Scenario,
    only: Option<usize>,
) -> Result<(), Error> {
    use hetsim_systems::jobs::compile;
    if !scenario.workload.is_none() {
        return Err(Error::Input(
            "workload: a scenario with jobs gives each job its workload; move this one into a job"
                .into(),
        ));
    }
    let read = |f: &str| std::fs::read(f).map_err(|e| e.to_string());
    let mut done = compile::shape(&scenario.platform)
        .and_then(|shape| compile::compile(&scenario.jobs, shape, scenario.seed, &read))
        .map_err(Error::Input)?;
    if let Some(i) = only {
        done = done.only(i);
    }
    if !done.mpi.is_empty() {
        world.insert_resource(MpiConfig(done.mpi));
    }
    if !done.cuda.is_empty() {
        world.insert_resource(CudaConfig(done.cuda));
    }
    if !done.flows.is_empty() {
        let (paths, flows) = done.flows.into_iter().unzip();
        world.insert_resource(FlowsWorkload(flows, paths));
    }
    world.insert_resource(compile::JobsPlaced(done.placed));
    Ok(())
}

/// Runs a scenario to the end.
pub fn simulate(scenario: &Scenario, opts: &RunOptions) -> Result<(App, RunStats), Error> {
    let mut app = build_app(scenario, opts)?;
    match hetsim_engine::run(&mut app) {
        Ok(stats) => Ok((app, stats)),
        Err(RunError::Input(e)) => Err(Error::Input(e)),
        Err(e @ RunError::OutOfRange { .. }) => Err(Error::OutOfRange {
            message: e.to_string(),
            pace: pace::extremes(scenario),
        }),
        Err(e) => Err(Error::Run(e.to_string())),
    }
}

/// Runs a scenario and collects its report.
pub fn simulate_report(
    scenario: &Scenario,
    opts: &RunOptions,
) -> Result<hetsim_output::Report, Error> {
    simulate_with_work(scenario, opts).map(|(report, _)| report)
}

/// What a run cost: the run loop's counters and the max-min solver's (`hetsim run --stats`,
/// `hetsim flows --stats`).
#[derive(Debug, Clone, Copy)]
pub struct Work {
    pub run: RunStats,
    pub solver: hetsim_systems::network::maxmin::SolveStats,
}

impl Work {
    /// The cost of the finished run `app` whose loop counted `run`.
    pub(crate) fn of(app: &App, run: RunStats) -> Work {
        Work {
            run,
            solver: app
                .world()
                .resource::<hetsim_systems::network::Network>()
                .solver_stats(),
        }
    }
}

/// Runs a scenario and collects its report and what the run cost (the jobs' reruns alone,
/// if any, are not counted).
pub fn simulate_with_work(
    scenario: &Scenario,
    opts: &RunOptions,
) -> Result<(hetsim_output::Report, Work), Error> {
    let (mut app, stats) = simulate(scenario, opts)?;
    let work = Work::of(&app, stats);
    let mut report = hetsim_output::report(app.world_mut(), &scenario.name, scenario.seed, &stats);
    drop(app);
    // The one model setting that trades exactness for speed is stated beside the switches.
    report.summary["network_model"] = serde_json::json!({
        "quantum_s": scenario.network_model.quantum.0.as_secs_f64(),
    });
    let jobs = scenario.jobs.len();
    if opts.only_job.is_none() && opts.alone.unwrap_or(jobs > 1) && jobs > 0 {
        add_alone_times(scenario, opts, &mut report.summary)?;
    }
    Ok((report, work))
}

/// Runs each job alone on the nodes it had beside the others and adds to its row of the
/// `jobs` section its time alone (`alone_s`) and the ratio of its time beside the others to
/// it (`slowdown`).
fn add_alone_times(
    scenario: &Scenario,
    opts: &RunOptions,
    summary: &mut serde_json::Value,
) -> Result<(), Error> {
    use rayon::prelude::*;
    let mut alone = scenario.clone();
    alone.output = hetsim_schema::scenario::OutputSpec::tables_only();
    let times = (0..scenario.jobs.len())
        .into_par_iter()
        .map(|i| {
            let opts = RunOptions {
                disable: opts.disable.clone(),
                progress: false,
                alone: Some(false),
                only_job: Some(i),
            };
            let name = &scenario.jobs[i].name;
            let report = simulate_report(&alone, &opts)
                .map_err(|e| e.within(&format!("job `{name}` alone")))?;
            Ok(report.summary["jobs"][0]["sim_time_s"]
                .as_f64()
                .unwrap_or(f64::NAN))
        })
        .collect::<Result<Vec<f64>, Error>>()?;
    for (row, alone_s) in summary["jobs"]
        .as_array_mut()
        .into_iter()
        .flatten()
        .zip(times)
    {
        let shared = row["sim_time_s"].as_f64().unwrap_or(f64::NAN);
        row["alone_s"] = serde_json::json!(alone_s);
        row["slowdown"] = serde_json::json!(if alone_s > 0.0 { shared / alone_s } else { 1.0 });
    }
    Ok(())
}

/// The links whose bandwidth or latency differ between two scenarios' platforms, by name, in
/// platform order: what a `--set` changed in the machine. Empty when either platform does not
/// build (the run reports that error itself).
pub fn changed_links(before: &Scenario, after: &Scenario) -> Vec<String> {
    use hetsim_systems::platform::build::topology;
    let (Ok(a), Ok(b)) = (topology(&before.platform), topology(&after.platform)) else {
        return Vec::new();
    };
    let old: std::collections::HashMap<&str, (f64, hetsim_engine::SimTime)> = a
        .links
        .iter()
        .map(|l| (l.name.as_str(), (l.bandwidth, l.latency)))
        .collect();
    b.links
        .iter()
        .filter(|l| old.get(l.name.as_str()) != Some(&(l.bandwidth, l.latency)))
        .map(|l| l.name.clone())
        .collect()
}

/// A benchmark's `--platform`: a platform file (`File("lassen.ron")`, read from its folder,
/// which is returned), or when no such file exists, a shipped platform's name
/// (`--platform lassen`: `Named("lassen")`).
pub fn platform_arg(path: &std::path::Path) -> Result<(String, std::path::PathBuf), Error> {
    let text = path.to_string_lossy();
    if !path.exists() && hetsim_schema::shipped::platform(&text).is_some() {
        return Ok((format!("Named({text:?})"), std::path::PathBuf::from(".")));
    }
    let file = path
        .file_name()
        .ok_or_else(|| Error::Input(format!("--platform {}: not a file", path.display())))?;
    let dir = path.parent().unwrap_or(std::path::Path::new("."));
    Ok((
        format!("File({:?})", file.to_string_lossy()),
        dir.to_path_buf(),
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_time_overflow_is_blamed_on_its_cause_and_other_errors_stay() {
        let overflow = Error::OutOfRange {
            message: "simulated time out of range".into(),
            pace: vec![],
        };
        assert_eq!(overflow.exit_code(), 2);
        let e = overflow.blame_time_overflow_on(|| "-e: 1e30 B".into());
        assert_eq!(
            e,
            Error::Input("-e: 1e30 B: simulated time out of range".into())
        );
        let stuck = Error::Run("the simulation cannot progress".into());
        assert_eq!(stuck.clone().blame_time_overflow_on(|| "-e".into()), stuck);
    }
}
