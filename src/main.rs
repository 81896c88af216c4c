//! The `hetsim` command line.

use clap::{Parser, Subcommand};
use std::path::{Path, PathBuf};
use std::process::ExitCode;

use hetsim::schema::load::load_scenario;
use hetsim::schema::scenario::Scenario;
use hetsim::{Error, RunOptions};

/// `println!` that does not panic when stdout is closed early (`hetsim ... | head -1`).
macro_rules! say {
    ($($arg:tt)*) => {{
        use std::io::Write as _;
        let _ = writeln!(std::io::stdout().lock(), $($arg)*);
    }};
}

/// `hetsim --help`: the questions first, each with its command.
const LONG_ABOUT: &str = "\
Simulate GPU clusters (networks, MPI, NCCL, task runtimes) to ask what if.

What if we used GPUDirect instead of staging through host memory?
    hetsim run scenarios/whatif/halo.ron --disable gpudirect
    hetsim study scenarios/studies/gpudirect-vs-hostcopy.ron
What if we put six GPUs per node instead of four?
    hetsim study scenarios/studies/gpus-per-node.ron
What if NCCL used a tree instead of a ring?
    hetsim nccl-tests --platform scenarios/platforms/demo-2node.ron -g 8 --algo ring --algo tree
What if StarPU scheduled with dmdas instead of dmda?
    hetsim run scenarios/whatif/cholesky.ron --set runtime.scheduler=dmdas
    hetsim study scenarios/studies/cholesky-schedulers.ron

`hetsim run` without a file answers all four on built-in scenarios in under a second.";

#[derive(Parser)]
#[command(
    name = "hetsim",
    version,
    about = "Simulate GPU clusters (networks, MPI, NCCL, task runtimes) to ask what if",
    long_about = LONG_ABOUT
)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
    /// Run a scenario and write its outputs (without a file: the built-in what-if).
    Run {
        /// A RON scenario file (none: four what-if questions answered on built-in scenarios).
        scenario: Option<PathBuf>,
        /// Output folder (default: results/<scenario name>/).
        #[arg(long)]
        out: Option<PathBuf>,
        /// Override a field, e.g. --set platform.network.taper=2 (repeatable).
        #[arg(long = "set", value_name = "PATH=VALUE")]
        set: Vec<String>,
        /// Switch a model component off, e.g. --disable contention (repeatable).
        #[arg(long, value_name = "NAME")]
        disable: Vec<String>,
        /// Print nothing on success (no progress display, no result lines).
        #[arg(long, short)]
        quiet: bool,
        /// Also run each job alone on its nodes and report its slowdown (the default when
        /// the scenario has more than one job).
        #[arg(long, conflicts_with = "no_alone")]
        alone: bool,
        /// Do not run the jobs alone (no slowdowns).
        #[arg(long)]
        no_alone: bool,
        /// Print the run's and the max-min solver's work counters on stderr.
        #[arg(long)]
        stats: bool,
    },
    /// Run a study: a grid of scenario variants in parallel; writes results.csv and plots.
    Study {
        /// A RON study file.
        study: PathBuf,
        /// Output folder (default: results/<study name>/, or .../shard-I-of-N for a shard).
        #[arg(long)]
        out: Option<PathBuf>,
        /// Runs in parallel (default: the machine's cores).
        #[arg(long, short)]
        jobs: Option<usize>,
        /// Run only slice I of N (1-based), e.g. --shard 2/8 in a job array; merge with `hetsim merge`.
        #[arg(long, value_name = "I/N")]
        shard: Option<hetsim::study::Shard>,
        /// Print nothing on success (no progress display, no result lines).
        #[arg(long, short)]
        quiet: bool,
    },
    /// Join the results of a study's shards and draw its plots.
    Merge {
        /// Shard output folders (each with study.json and results.csv).
        #[arg(required = true)]
        dirs: Vec<PathBuf>,
        /// Output folder (default: results/<study name>/).
        #[arg(long)]
        out: Option<PathBuf>,
    },
    /// Point-to-point latency and bandwidth between two GPUs (OSU-style tables, CSV, plots).
    P2p {
        /// A platform file (scenarios/platforms/lassen.ron) or a shipped platform's name (lassen).
        #[arg(long)]
        platform: PathBuf,
        /// The sending GPU, e.g. node[0].gpu[0].
        #[arg(long)]
        from: String,
        /// The receiving GPU, e.g. node[1].gpu[0].
        #[arg(long)]
        to: String,
        /// Paths of device buffers to measure (repeatable; default both).
        #[arg(long, value_enum)]
        mode: Vec<hetsim::p2p::Mode>,
        /// Smallest size: 1, 64K, 16M, 1G (binary, as OSU writes them; also 64KiB), 64KB (decimal).
        #[arg(short = 'b', default_value = "1")]
        begin: String,
        /// Largest size.
        #[arg(short = 'e', default_value = "4M")]
        end: String,
        /// Size factor between steps.
        #[arg(short = 'f', default_value_t = 2.0)]
        factor: f64,
        /// Output folder for p2p.csv and the plots (default: results/p2p/).
        #[arg(long)]
        out: Option<PathBuf>,
    },
    /// NVIDIA nccl-tests on a simulated platform: the nccl-tests table, CSV and a busbw plot.
    #[command(name = "nccl-tests")]
    NcclTests {
        /// The collective, as nccl-tests' binary names it.
        #[arg(long, short = 'o', value_enum, default_value = "all_reduce")]
        op: hetsim::nccltests::OpArg,
        /// Smallest size: 8, 64K, 16M, 1G (binary, as nccl-tests writes them; also 64KiB), 64KB (decimal).
        #[arg(short = 'b', default_value = "8")]
        begin: String,
        /// Largest size.
        #[arg(short = 'e', default_value = "128M")]
        end: String,
        /// Size factor between steps.
        #[arg(short = 'f', default_value_t = 2.0)]
        factor: f64,
        /// GPUs in the communicator: the platform's first ones, node by node.
        #[arg(short = 'g', default_value_t = 8)]
        gpus: u32,
        /// A platform file (scenarios/platforms/dgx-a100.ron) or a shipped platform's name (dgx-a100).
        #[arg(long)]
        platform: PathBuf,
        /// Override a platform field, e.g. --set platform.nodes=128 (repeatable).
        #[arg(long = "set", value_name = "PATH=VALUE")]
        set: Vec<String>,
        /// Force the algorithm (NCCL_ALGO; repeatable: one line per choice).
        #[arg(long, value_enum)]
        algo: Vec<hetsim::nccltests::AlgoArg>,
        /// Force the protocol (NCCL_PROTO; repeatable).
        #[arg(long, value_enum)]
        proto: Vec<hetsim::nccltests::ProtoArg>,
        /// Channels (NCCL_MIN_NCHANNELS = NCCL_MAX_NCHANNELS); default as NCCL's search.
        #[arg(long)]
        channels: Option<u32>,
        /// Timed iterations per size.
        #[arg(short = 'n', default_value_t = 20)]
        iters: u32,
        /// Warm-up iterations per size.
        #[arg(short = 'w', default_value_t = 1)]
        warmup: u32,
        /// Output folder for nccl_tests.csv and the plot (default: results/nccl-tests/).
        #[arg(long)]
        out: Option<PathBuf>,
    },
    /// Check a scenario without running it: the file, its includes, the overrides and
    /// switches, the platform and the workload's endpoints.
    Validate {
        /// A RON scenario file, e.g. scenarios/demo.ron.
        scenario: PathBuf,
        /// Override a field as `hetsim run` would, e.g. --set platform.nodes=4 (repeatable).
        #[arg(long = "set", value_name = "PATH=VALUE")]
        set: Vec<String>,
        /// Switch a model component off as `hetsim run` would (repeatable; see `hetsim systems`).
        #[arg(long, value_name = "NAME")]
        disable: Vec<String>,
    },
    /// What traces hold, before running them: message sizes, partners, bytes per phase,
    /// collectives, computation.
    #[command(name = "trace-stats")]
    TraceStats {
        /// One time-independent trace with every rank's lines, one file per rank (rank
        /// order), SMPI's index file, an OTF2 archive's anchor file (traces.otf2), or Chakra
        /// execution traces (NAME.RANK.et, gzip-compressed or not).
        #[arg(required = true)]
        files: Vec<PathBuf>,
    },
    /// Turn an OTF2 archive into SimGrid's time-independent trace: an index file and one
    /// file per rank, which `smpirun -replay` and hetsim's `Trace([...])` both read.
    Convert {
        /// The archive's anchor file (traces.otf2).
        input: PathBuf,
        /// The index file to write (e.g. out/app.txt); rank files go to out/app.txt_files/.
        output: PathBuf,
    },
    /// List the switches (model components that --disable can turn off) and the models.
    Systems {
        /// Also print each model's long form (what it models in detail, what it leaves out).
        #[arg(long)]
        long: bool,
    },
    /// Solve a flow case (JSON) and print each flow's completion time in seconds.
    Flows {
        /// A flow case (JSON, SI units): links {id, bandwidth, latency, sharing} and flows
        /// {id, route: [link ids], size, start}, as `hetsim flowgen` writes them.
        case: PathBuf,
        /// Switch a model component off, e.g. --disable contention (repeatable).
        #[arg(long, value_name = "NAME")]
        disable: Vec<String>,
        /// Print the run's and the max-min solver's work counters on stderr.
        #[arg(long)]
        stats: bool,
    },
    /// Print a random flow case (JSON) made like the reference performance inputs.
    Flowgen {
        /// How many flows.
        #[arg(long, default_value_t = 10_000)]
        flows: usize,
        /// How many links the flows' routes are drawn from.
        #[arg(long, default_value_t = 2_000)]
        links: usize,
        /// Seed of the random draws (same seed, same case).
        #[arg(long, default_value_t = 1)]
        seed: u64,
        /// Spread starts over this many seconds (0: all at once).
        #[arg(long, default_value_t = 0.0)]
        stagger: f64,
    },
}

/// mimalloc instead of the system allocator: the run loop allocates and frees small blocks at
/// every step (ECS commands, messages, records), and glibc's malloc spent about 15 % of a
/// staggered flow case allocating, freeing and consolidating. Results do not depend on the
/// allocator (`tools/outputs.sh compare`: identical); small runs reserve more memory up front.
/// Only the CLI uses it: the library leaves the choice to its programs (the benches keep the
/// system allocator, and `tests/budget_bytes.rs` counts bytes with its own).
/// It asks for no transparent huge pages (the crate's `no_thp` feature, `Cargo.toml`): where
/// the kernel gives them only on request (the usual `madvise` setting), a run right after
/// another large program otherwise waits while the kernel compacts memory to find each one,
/// and peaks are a sixth to a half higher (ARCHITECTURE.md has the figures).
#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

fn main() -> ExitCode {
    let cli = Cli::parse();
    // An interrupt leaves the output folders as they were: no half-published run, no litter.
    if let Err(e) = ctrlc::set_handler(|| hetsim::output::staged::interrupt()) {
        eprintln!(
            "warning: cannot catch interrupts ({e}); an interrupted run may leave a staging folder behind"
        );
    }
    let result = match cli.command {
        Command::Run {
            scenario,
            out,
            set,
            disable,
            quiet,
            alone,
            no_alone,
            stats,
        } => {
            let alone = (alone || no_alone).then_some(alone);
            run(scenario.as_deref(), out, &set, disable, quiet, alone, stats)
        }
        Command::Validate {
            scenario,
            set,
            disable,
        } => validate(&scenario, &set, disable),
        Command::TraceStats { files } if hetsim::tracestats::is_chakra(&files) => {
            hetsim::tracestats::chakra_report(&files).map(|r| print!("{r}"))
        }
        Command::TraceStats { files } => hetsim::tracestats::stats(&files).map(|(s, note)| {
            print!("{}", hetsim::tracestats::report(&s));
            if let Some(note) = note {
                println!("{note}");
            }
        }),
        Command::Convert { input, output } => hetsim::convert::convert(&input, &output).map(|r| {
            print!("{r}");
        }),
        Command::Study {
            study,
            out,
            jobs,
            shard,
            quiet,
        } => run_study(&study, out, jobs, shard, quiet),
        Command::Merge { dirs, out } => merge(&dirs, out),
        Command::P2p {
            platform,
            from,
            to,
            mode,
            begin,
            end,
            factor,
            out,
        } => p2p(platform, from, to, mode, (&begin, &end, factor), out),
        Command::NcclTests {
            op,
            begin,
            end,
            factor,
            gpus,
            platform,
            set,
            algo,
            proto,
            channels,
            iters,
            warmup,
            out,
        } => (|| {
            let size = |flag: &str, t: &str| {
                hetsim::p2p::parse_size(t).map_err(|e| Error::Input(format!("{flag}: {e}")))
            };
            let sizes = hetsim::p2p::sizes(size("-b", &begin)?, size("-e", &end)?, factor)
                .map_err(Error::Input)?;
            nccl_tests(
                hetsim::nccltests::Options {
                    op: op.into(),
                    sizes,
                    gpus,
                    platform,
                    set,
                    algos: algo.into_iter().map(Into::into).collect(),
                    protos: proto.into_iter().map(Into::into).collect(),
                    channels,
                    iters,
                    warmup,
                },
                out,
            )
        })(),
        Command::Systems { long } => {
            systems(long);
            Ok(())
        }
        Command::Flows {
            case,
            disable,
            stats,
        } => flows(&case, disable, stats),
        Command::Flowgen {
            flows,
            links,
            seed,
            stagger,
        } => {
            if links < 2 || !(stagger.is_finite() && stagger >= 0.0) {
                Err(Error::Input(
                    "flowgen: expected --links of at least 2 and a non-negative --stagger".into(),
                ))
            } else {
                let case = hetsim::flowcase::generate(hetsim::flowcase::Recipe {
                    flows,
                    links,
                    seed,
                    stagger,
                });
                say!("{case}");
                Ok(())
            }
        }
    };
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("error: {e}");
            ExitCode::from(e.exit_code() as u8)
        }
    }
}

fn load(file: &Path, set: &[String]) -> Result<Scenario, Error> {
    load_scenario(file, set).map_err(|e| Error::Input(e.to_string()))
}

fn run(
    file: Option<&Path>,
    out: Option<PathBuf>,
    set: &[String],
    disable: Vec<String>,
    quiet: bool,
    alone: Option<bool>,
    stats: bool,
) -> Result<(), Error> {
    let Some(file) = file else {
        return whatif(out, set, &disable, quiet);
    };
    let scenario = load(file, set)?;
    let opts = RunOptions {
        disable,
        progress: !quiet,
        alone,
        only_job: None,
    };
    // Model input errors found while building name the scenario file, as loader errors do.
    let (report, work) = hetsim::simulate_with_work(&scenario, &opts).map_err(|e| match e {
        Error::Input(msg) if !msg.starts_with(&file.display().to_string()) => {
            Error::Input(format!("{}: {msg}", file.display()))
        }
        e => e,
    })?;
    if stats {
        print_work(&work);
    }
    let dir = out
        .or_else(|| scenario.output.dir.clone().map(PathBuf::from))
        .unwrap_or_else(|| Path::new("results").join(&scenario.name));
    let written =
        hetsim::output::write(&dir, &report, &scenario.output).map_err(|e| write_error(&dir, e))?;
    if !quiet {
        for line in hetsim::output::headline::lines(&report) {
            say!("{line}");
        }
        if !set.is_empty() {
            let changed = hetsim::changed_links(&load(file, &[])?, &scenario);
            if let Some(note) = hetsim::output::headline::set_note(&report, &changed) {
                say!("{note}");
            }
        }
        print_written(&written);
    }
    Ok(())
}

/// `hetsim run` without a file: the four what-if questions, answered first.
fn whatif(
    out: Option<PathBuf>,
    set: &[String],
    disable: &[String],
    quiet: bool,
) -> Result<(), Error> {
    use hetsim::whatif;
    if let Some(first) = set.first() {
        return Err(Error::Input(format!(
            "--set {first}: the built-in what-if runs three scenario files; change one of them: \
             hetsim run scenarios/whatif/halo.ron --set ... (also allreduce.ron, cholesky.ron)"
        )));
    }
    let started = std::time::Instant::now();
    let answers = whatif::run(disable)?;
    let wall = started.elapsed().as_secs_f64();
    let dir = out.unwrap_or_else(|| Path::new("results").join("whatif"));
    let written = hetsim::output::staged::write_all(&dir, |st| {
        st.json("summary.json", &whatif::summary(&answers, disable))?;
        st.bytes("whatif.csv", whatif::csv(&answers))?;
        st.figure("comparison", &whatif::chart(&answers, disable))?;
        Ok(())
    })
    .map_err(|e| write_error(&dir, e))?;
    if quiet {
        return Ok(());
    }
    for a in &answers {
        say!("{}", whatif::sentence(a));
    }
    if !disable.is_empty() {
        say!("(every run with {} switched off)", disable.join(", "));
    }
    let runs: usize = answers.iter().map(|a| 2 + a.aside.is_some() as usize).sum();
    say!(
        "whatif: {runs} runs simulated in {wall:.2} s wall. Ask your own question: copy a scenario and change it"
    );
    let mut files: Vec<&str> = whatif::QUESTIONS.iter().map(|q| q.file).collect();
    files.dedup();
    for f in files {
        say!("  hetsim run {f}");
    }
    say!("or sweep it:");
    for q in &whatif::QUESTIONS {
        say!("  {}", q.further);
    }
    print_written(&written);
    Ok(())
}

fn run_study(
    file: &Path,
    out: Option<PathBuf>,
    jobs: Option<usize>,
    shard: Option<hetsim::study::Shard>,
    quiet: bool,
) -> Result<(), Error> {
    use hetsim::study;
    let spec = study::load_study(file)?;
    let runs = study::plan(&spec)?.len();
    let jobs = jobs
        .unwrap_or_else(|| std::thread::available_parallelism().map_or(1, std::num::NonZero::get));
    let opts = study::StudyOptions {
        jobs,
        shard,
        progress: !quiet,
    };
    let started = std::time::Instant::now();
    let table = study::run_study(&spec, file, &opts)?;
    let wall = started.elapsed().as_secs_f64();
    let dir = out.unwrap_or_else(|| {
        let root = Path::new("results").join(&spec.name);
        match shard {
            Some(s) => root.join(format!("shard-{}-of-{}", s.index, s.count)),
            None => root,
        }
    });
    let json = study::study_json(&spec, runs, shard);
    let written = hetsim::output::study::write(&dir, &json, &spec, &table, shard.is_none())
        .map_err(|e| write_error(&dir, e))?;
    let failed = table.rows.iter().filter(|r| r.error.is_some()).count();
    // Quiet stays quiet only when every run succeeded: failed runs are always said.
    if quiet && failed == 0 {
        return Ok(());
    }
    say!(
        "{}: {} runs{} ({failed} failed) in {wall:.2} s wall with {jobs} jobs",
        spec.name,
        table.rows.len(),
        shard.map_or(String::new(), |s| format!(
            " of {runs} (shard {}/{})",
            s.index, s.count
        )),
    );
    print_written(&written);
    // The table is written (the runs that worked are worth keeping), but the study did not
    // all run: the last word and the exit code say so.
    if failed > 0 {
        return Err(Error::Run(format!(
            "{failed} of {} runs failed; each one's error is in {}",
            table.rows.len(),
            dir.join("results.csv").display()
        )));
    }
    Ok(())
}

/// A failed publication into `dir`: bad input when the folder's own state refuses it (a link
/// where the lock goes, a folder where a file goes), a run failure otherwise (a full disk).
fn write_error(dir: &Path, e: std::io::Error) -> Error {
    let message = format!("cannot write outputs to {}: {e}", dir.display());
    match e.kind() {
        std::io::ErrorKind::InvalidInput => Error::Input(message),
        _ => Error::Run(message),
    }
}

fn merge(dirs: &[PathBuf], out: Option<PathBuf>) -> Result<(), Error> {
    if let Some(out) = &out {
        hetsim::study::check_merge_out(out, dirs)?;
    }
    let (spec, runs, table, missing) = hetsim::study::merge(dirs)?;
    if !missing.is_empty() {
        eprintln!(
            "warning: {} of {runs} runs are in no shard (first: {:?})",
            missing.len(),
            &missing[..missing.len().min(10)]
        );
    }
    let dir = out.unwrap_or_else(|| Path::new("results").join(&spec.name));
    let json = hetsim::study::study_json(&spec, runs, None);
    let written = hetsim::output::study::write(&dir, &json, &spec, &table, true)
        .map_err(|e| write_error(&dir, e))?;
    say!(
        "{}: merged {} runs of {runs} from {} folders",
        spec.name,
        table.rows.len(),
        dirs.len()
    );
    print_written(&written);
    Ok(())
}

fn p2p(
    platform: PathBuf,
    from: String,
    to: String,
    modes: Vec<hetsim::p2p::Mode>,
    (begin, end, factor): (&str, &str, f64),
    out: Option<PathBuf>,
) -> Result<(), Error> {
    use hetsim::p2p;
    let size =
        |flag: &str, t: &str| p2p::parse_size(t).map_err(|e| Error::Input(format!("{flag}: {e}")));
    let sizes = p2p::sizes(size("-b", begin)?, size("-e", end)?, factor).map_err(Error::Input)?;
    let modes = if modes.is_empty() {
        vec![p2p::Mode::Gpudirect, p2p::Mode::Hostcopy]
    } else {
        modes
    };
    let opts = p2p::P2pOptions {
        platform,
        from,
        to,
        modes,
        sizes,
    };
    let rows = p2p::run(&opts)?;
    say!("{}", p2p::table(&rows, &opts).trim_end());
    let dir = out.unwrap_or_else(|| Path::new("results").join("p2p"));
    let written = hetsim::output::staged::write_all(&dir, |st| {
        st.bytes("p2p.csv", p2p::csv(&rows))?;
        for (stem, chart) in p2p::charts(&rows, &opts) {
            st.figure(stem, &chart)?;
        }
        Ok(())
    })
    .map_err(|e| write_error(&dir, e))?;
    print_written(&written);
    Ok(())
}

fn nccl_tests(opts: hetsim::nccltests::Options, out: Option<PathBuf>) -> Result<(), Error> {
    use hetsim::nccltests;
    let rows = nccltests::run(&opts)?;
    say!("{}", nccltests::table(&rows, &opts).trim_end());
    let dir = out.unwrap_or_else(|| Path::new("results").join("nccl-tests"));
    let written = hetsim::output::staged::write_all(&dir, |st| {
        st.bytes("nccl_tests.csv", nccltests::csv(&rows, &opts))?;
        st.figure("nccl_busbw", &nccltests::chart(&rows, &opts))?;
        Ok(())
    })
    .map_err(|e| write_error(&dir, e))?;
    print_written(&written);
    Ok(())
}

fn print_written(written: &[PathBuf]) {
    say!("wrote:");
    for p in written {
        say!("  {}", p.display());
    }
}

fn validate(file: &Path, set: &[String], disable: Vec<String>) -> Result<(), Error> {
    let scenario = load(file, set)?;
    // Building the platform and routing the workload finds unknown endpoints and bad figures;
    // building with the switches finds unknown switch names.
    let opts = RunOptions {
        disable,
        progress: false,
        ..Default::default()
    };
    let mut app = hetsim::build_app(&scenario, &opts)?;
    let world = app.world_mut();
    world.run_schedule(hetsim::engine::SimStartup);
    let errors = std::mem::take(&mut world.resource_mut::<hetsim::engine::SimErrors>().0);
    if !errors.is_empty() {
        return Err(Error::Input(format!(
            "{}: {}",
            file.display(),
            errors.join("\n")
        )));
    }
    say!("{}: valid scenario `{}`", file.display(), scenario.name);
    Ok(())
}

/// Width of `hetsim systems`' lines.
const SYSTEMS_WIDTH: usize = 100;

/// Prints `text` after `label` padded to `indent` columns, wrapped under itself.
fn say_wrapped(label: &str, indent: usize, text: &str) {
    let first = format!("{label:<indent$}");
    let rest = " ".repeat(indent);
    let options = textwrap::Options::new(SYSTEMS_WIDTH)
        .initial_indent(&first)
        .subsequent_indent(&rest)
        .word_splitter(textwrap::WordSplitter::NoHyphenation);
    say!("{}", textwrap::fill(text, options));
}

/// The switches and the models. A model's text is a short paragraph, then (after a blank
/// line) its long form, printed with `--long`.
fn systems(long: bool) {
    say!("{:<22} {:<8} description", "switch", "default");
    for s in hetsim::switches() {
        let on = if s.default { "on" } else { "off" };
        say_wrapped(&format!("{:<22} {on}", s.name), 32, s.doc);
    }
    say!("\nmodel            what it computes, and what it leaves out");
    let mut with_long = Vec::new();
    for m in hetsim::models() {
        let (short, rest) = m.doc.split_once("\n\n").unwrap_or((m.doc, ""));
        say_wrapped(m.name, 17, short.trim());
        if !rest.trim().is_empty() {
            with_long.push(m.name);
            if long {
                for paragraph in rest.split("\n\n") {
                    say_wrapped("", 17, paragraph.trim());
                }
            }
        }
    }
    if !long && !with_long.is_empty() {
        say!(
            "\nThe long form of {}: hetsim systems --long (or systems/src/<model>/summary.txt)",
            with_long.join(", ")
        );
    }
}

/// The run loop's and the max-min solver's work counters, on stderr.
fn print_work(work: &hetsim::Work) {
    let (r, solver) = (&work.run, &work.solver);
    eprintln!(
        "run: {} events, {} steps, {:.3} s of run loop",
        r.events, r.steps, r.wall_s
    );
    eprintln!("solver: {solver:?}");
    let [b1, b2, b3] = hetsim::systems::network::maxmin::CHANGE_SIZE_BOUNDS;
    let [tiny, small, medium, large] = solver.changed_by_size;
    eprintln!(
        "rate changes of flows already running, by relative size: <{b1:e} {tiny}, {b1:e}..{b2:e} {small}, {b2:e}..{b3:e} {medium}, >={b3:e} {large}; {} with the same bottleneck",
        solver.same_bottleneck
    );
}

fn flows(case: &Path, disable: Vec<String>, stats: bool) -> Result<(), Error> {
    let label = case.display().to_string();
    let text = hetsim::schema::load::read_input(case)
        .map_err(|e| Error::Input(format!("{label}: {e}")))?;
    let result = hetsim::flowcase::solve(
        &text,
        &label,
        &RunOptions {
            disable,
            progress: false,
            ..Default::default()
        },
    )?;
    if stats {
        print_work(&result.work);
    }
    /// The printed answer: completion times by flow id (keys sorted, as the map keeps them).
    #[derive(serde::Serialize)]
    struct Ends<'a> {
        flows: &'a std::collections::BTreeMap<String, f64>,
    }
    let out = Ends {
        flows: &result.ends,
    };
    say!(
        "{}",
        serde_json::to_string_pretty(&out).expect("JSON of numbers")
    );
    Ok(())
}
