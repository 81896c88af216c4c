//! OTF2 archives replayed as MPI programs (TraceR's semantics, `systems/src/mpi/otf2.rs`),
//! on the archives of tests/data/otf2/ (written by tools/otf2-archives.py with the official
//! OTF2 writer) and TraceR's stencil4d traces in ../shared/reference/otf2/ (read in place;
//! the tests that need them say they skipped when they are not there).
//!
//! Hand-computed figures use tests/data/scenarios/otf2/simplenet-64.ron, a twin of TraceR's
//! simplenet: 1 us and 12.5 GB/s per message, messages eager, buffers in host memory.

use std::path::{Path, PathBuf};

use hetsim::schema::load::parse_scenario;
use hetsim::schema::scenario::{OutputSpec, Scenario};
use hetsim::{Error, RunOptions, simulate_report};

fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

fn archive(name: &str) -> String {
    root()
        .join("tests/data/otf2")
        .join(name)
        .join("traces.otf2")
        .display()
        .to_string()
}

fn reference() -> PathBuf {
    root().join("../shared/reference/otf2")
}

/// A scenario replaying `program` (an `Otf2(...)` value) on `ranks` ranks of `platform`.
fn scenario(platform: &str, ranks: u32, program: &str, extra: &str) -> Result<Scenario, Error> {
    let platform = root().join("tests/data/scenarios/otf2").join(platform);
    let text = format!(
        r#"Scenario(name: "otf2-test", platform: File({:?}), workload: Mpi(ranks: {ranks}, program: {program}, buffers: Host, protocol: (eager_limit: "1GiB"), {extra}))"#,
        platform.display().to_string()
    );
    let mut s = parse_scenario(&text, "test", Path::new("."), &[])
        .map_err(|e| Error::Input(e.to_string()))?;
    s.output = OutputSpec::tables_only();
    Ok(s)
}

fn summary(s: &Scenario) -> Result<serde_json::Value, Error> {
    let opts = RunOptions {
        disable: Vec::new(),
        progress: false,
        ..Default::default()
    };
    simulate_report(s, &opts).map(|r| r.summary)
}

fn host(name: &str, extra: &str) -> String {
    format!(r#"Otf2(path: {:?}{extra})"#, archive(name))
}

fn close(a: f64, b: f64) -> bool {
    (a - b).abs() <= 1e-12 + 1e-9 * b.abs()
}

#[test]
fn ten_round_trips_of_one_mib_take_twenty_messages_of_one_us_plus_size_over_bandwidth() {
    // 20 x (1 us + 1048576 B / 12.5 GB/s) = 1697.7216 us (issue 54's hand figure).
    let s = summary(&scenario("simplenet-64.ron", 2, &host("pingpong", ""), "").unwrap()).unwrap();
    let t = s["sim_time_s"].as_f64().unwrap();
    assert!(close(t, 20.0 * (1e-6 + 1048576.0 / 12.5e9)), "{t}");
    assert_eq!(s["mpi"]["messages"], 20);
    assert_eq!(s["mpi"]["compute_time_s"]["max"], 0.0);
}

#[test]
fn ten_microseconds_before_each_send_are_each_ranks_hundred_microseconds_of_compute() {
    let s = summary(&scenario("simplenet-64.ron", 2, &host("pingpong-compute", ""), "").unwrap())
        .unwrap();
    let compute = &s["mpi"]["compute_time_s"];
    assert!(
        close(compute["mean"].as_f64().unwrap(), 100e-6),
        "{compute}"
    );
    assert!(close(compute["max"].as_f64().unwrap(), 100e-6), "{compute}");
    // The compute is on the critical path: 20 messages and 20 gaps of 10 us.
    let t = s["sim_time_s"].as_f64().unwrap();
    assert!(close(t, 20.0 * (1e-6 + 1048576.0 / 12.5e9) + 200e-6), "{t}");
    // compute_scale 0.5: a trace from processors twice as fast.
    let s = summary(
        &scenario(
            "simplenet-64.ron",
            2,
            &host("pingpong-compute", ", compute_scale: 0.5"),
            "",
        )
        .unwrap(),
    )
    .unwrap();
    assert!(close(
        s["mpi"]["compute_time_s"]["max"].as_f64().unwrap(),
        50e-6
    ));
}

#[test]
fn time_with_measurement_off_is_not_compute() {
    // Rank 0: 20 us before its first send, then measurement off for 5 ms, then 30 us before
    // the second send (tools/otf2-archives.py, measurement()).
    let s =
        summary(&scenario("simplenet-64.ron", 2, &host("measurement", ""), "").unwrap()).unwrap();
    assert!(
        close(s["mpi"]["compute_time_s"]["max"].as_f64().unwrap(), 50e-6),
        "{}",
        s["mpi"]
    );
}

#[test]
fn nonblocking_requests_collectives_and_sub_communicator_messages_replay() {
    for (name, ranks, messages) in [("nonblocking", 4, 3 * 4 + 4), ("collectives", 4, -1)] {
        let s = summary(&scenario("simplenet-64.ron", ranks, &host(name, ""), "").unwrap())
            .unwrap_or_else(|e| panic!("{name}: {e}"));
        if messages >= 0 {
            assert_eq!(s["mpi"]["messages"], messages, "{name}");
        }
        assert!(s["sim_time_s"].as_f64().unwrap() > 0.0);
    }
}

#[test]
fn a_sub_communicator_keeps_its_ranks_and_tags_and_runs_its_collectives() {
    // World ranks 1, 3 and 5 form a communicator: a message on it from its rank 2 (world 5)
    // to its rank 0 (world 1), and an allreduce over it; forced recursive doubling on 3 ranks
    // (fold, one exchange, unfold): 4 messages. Then a world barrier: dissemination on 6
    // ranks, 6 x 3 messages. With the world message 0 -> 1: 1 + 1 + 4 + 18.
    let s = summary(
        &scenario(
            "simplenet-64.ron",
            6,
            &host("subcomm", ""),
            r#"collectives: (select: Tracer, force: {"allreduce": "recursive_doubling", "barrier": "dissemination"}, buffers: Host)"#,
        )
        .unwrap(),
    )
    .unwrap();
    assert_eq!(s["mpi"]["messages"], 24, "{}", s["mpi"]);
    // Bytes: 64 KiB + 16 KiB, 8 KiB in each of the allreduce's 4 messages.
    assert_eq!(
        s["mpi"]["bytes"].as_f64().unwrap(),
        (64.0 + 16.0 + 4.0 * 8.0) * 1024.0
    );
}

#[test]
fn the_rank_count_must_match_the_archive() {
    let e = summary(&scenario("simplenet-64.ron", 3, &host("pingpong", ""), "").unwrap())
        .unwrap_err()
        .to_string();
    assert!(
        e.contains("workload.Mpi.ranks: 3 ranks") && e.contains("has 2 MPI ranks"),
        "{e}"
    );
}

#[test]
fn a_collective_hetsim_does_not_replay_is_an_error_naming_the_event() {
    let e = summary(&scenario("simplenet-64.ron", 3, &host("gather", ""), "").unwrap())
        .unwrap_err()
        .to_string();
    assert!(
        e.contains("GATHER is not replayed") && e.contains("gather/traces/0.evt"),
        "{e}"
    );
}

#[test]
fn a_broken_archive_is_an_input_error_with_file_and_byte() {
    let e = summary(&scenario("simplenet-64.ron", 2, &host("bad-truncated", ""), "").unwrap())
        .unwrap_err()
        .to_string();
    assert!(
        e.contains("bad-truncated/traces/1.evt") && e.contains("byte"),
        "{e}"
    );
    let e = scenario("simplenet-64.ron", 2, r#"Otf2("nowhere/traces.otf2")"#, "")
        .map(|_| ())
        .unwrap_err()
        .to_string();
    assert!(
        e.contains("program.Otf2.path") && e.contains("no such OTF2 anchor"),
        "{e}"
    );
}

/// TraceR's stencil4d traces on the twins of its two networks, every message eager, buffers
/// in host memory, TraceR's collective algorithms. TraceR's own predictions are held back as
/// a check; the closing note of issue 54 gives hetsim's and why they may differ.
#[test]
fn stencil4d_replays_on_the_twins_of_tracers_networks() {
    let dir = reference().join("stencil4d");
    if !dir.exists() {
        eprintln!("skipped: {} is not there", dir.display());
        return;
    }
    for ranks in [32u32, 64] {
        let path = dir.join(format!("traces-{ranks}/traces.otf2"));
        let program = format!(r#"Otf2(path: {:?})"#, path.display().to_string());
        for platform in ["simplenet-64.ron", "fattree-64.ron"] {
            let s = scenario(
                platform,
                ranks,
                &program,
                "collectives: (select: Tracer, buffers: Host)",
            )
            .unwrap();
            let s = summary(&s).unwrap();
            let m = &s["mpi"];
            let t = s["sim_time_s"].as_f64().unwrap();
            // Each rank sends 8 messages per iteration (2 iterations) of 128 KiB (32 ranks) or
            // 256 KiB (64 ranks); the 3 barriers per rank add TraceR's 0-byte tree messages.
            let size = if ranks == 64 { 262144.0 } else { 131072.0 };
            let sends = 8 * 2 * ranks as u64;
            assert_eq!(
                m["bytes"].as_f64().unwrap(),
                sends as f64 * size,
                "{platform} {ranks}"
            );
            assert_eq!(
                m["paths"]["host"]["messages"].as_u64().unwrap(),
                m["messages"].as_u64().unwrap()
            );
            assert_eq!(m["paths"]["gpudirect"]["messages"].as_u64().unwrap(), 0);
            // A rank's own 16 messages leave through its one NIC.
            assert!(t > 16.0 * size / 12.5e9, "{t}");
            eprintln!(
                "stencil4d {ranks} ranks on {platform}: {:.2} us ({} messages)",
                t * 1e6,
                m["messages"]
            );
        }
    }
}

/// Runs `hetsim run` on a scenario text written to `dir/NAME.ron`; the output folder.
fn run_cli(dir: &Path, name: &str, text: &str) -> PathBuf {
    let file = dir.join(format!("{name}.ron"));
    std::fs::write(&file, text).unwrap();
    let out = dir.join(format!("out-{name}"));
    let status = std::process::Command::new(env!("CARGO_BIN_EXE_hetsim"))
        .args(["run", "-q", "--out"])
        .arg(&out)
        .arg(&file)
        .status()
        .unwrap();
    assert!(status.success(), "{name}");
    out
}

/// Every output file of two runs, equal byte for byte but for the wall-clock time.
fn same_outputs(a: &Path, b: &Path) -> usize {
    let mut names: Vec<_> = std::fs::read_dir(a)
        .unwrap()
        .map(|e| e.unwrap().file_name())
        .collect();
    names.sort();
    for n in &names {
        let (x, y) = (
            std::fs::read(a.join(n)).unwrap(),
            std::fs::read(b.join(n)).unwrap(),
        );
        let strip = |v: Vec<u8>| -> Vec<u8> {
            String::from_utf8_lossy(&v)
                .lines()
                .filter(|l| !l.contains("\"wall_s\""))
                .collect::<Vec<_>>()
                .join("\n")
                .into_bytes()
        };
        assert!(
            x == y || strip(x) == strip(y),
            "{} differs between the archive's run and its conversion's",
            n.to_string_lossy()
        );
    }
    names.len()
}

#[test]
fn a_run_on_an_archive_and_on_its_conversion_to_simgrid_ti_write_the_same_outputs() {
    let tmp = tempfile::tempdir().unwrap();
    let platform = root().join("tests/data/scenarios/otf2/simplenet-64.ron");
    let mut cases: Vec<(String, u32)> = vec![
        (archive("pingpong-compute"), 2),
        (archive("nonblocking"), 4),
        (archive("collectives"), 4),
    ];
    let stencil = reference().join("stencil4d/traces-32/traces.otf2");
    if stencil.exists() {
        cases.push((stencil.display().to_string(), 32));
    } else {
        eprintln!(
            "the stencil4d case skipped: {} is not there",
            stencil.display()
        );
    }
    for (i, (path, ranks)) in cases.iter().enumerate() {
        let dir = tmp.path().join(format!("case{i}"));
        std::fs::create_dir_all(&dir).unwrap();
        let out = std::process::Command::new(env!("CARGO_BIN_EXE_hetsim"))
            .args(["convert", path])
            .arg(dir.join("ti.txt"))
            .output()
            .unwrap();
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        let common = r#"buffers: Host, collectives: (select: Tracer, buffers: Host), protocol: (eager_limit: "1GiB")"#;
        let scenario = |program: &str| {
            format!(
                r#"Scenario(name: "conv", platform: File({:?}), workload: Mpi(ranks: {ranks}, program: {program}, {common}))"#,
                platform.display().to_string()
            )
        };
        let a = run_cli(&dir, "archive", &scenario(&format!("Otf2({path:?})")));
        let b = run_cli(
            &dir,
            "converted",
            &scenario(r#"Trace(["ti.txt"]), compute_speed: "1Gf""#),
        );
        assert!(same_outputs(&a, &b) >= 10, "{path}");
    }
}

#[test]
fn trace_stats_reads_an_archive() {
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_hetsim"))
        .args(["trace-stats", &archive("pingpong-compute")])
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(
        text.contains("point-to-point: 20 messages, 20 MiB in all"),
        "{text}"
    );
    // 10 us before each of a rank's 10 sends: 1e5 flops at 1 Gflop/s per rank.
    assert!(
        text.contains("computation per rank: 1.000e5 flops mean"),
        "{text}"
    );
    assert!(text.contains("OTF2: "), "{text}");
}

#[test]
fn a_message_on_an_undefined_communicator_names_the_file_event_and_byte() {
    use otf2::EventKind as E;
    use otf2::write::{ArchiveWriter, MpiDefinitions};
    let tmp = tempfile::tempdir().unwrap();
    let defs = MpiDefinitions {
        ranks: 2,
        resolution: 1_000_000_000,
        regions: vec!["MPI_Send".into(), "MPI_Recv".into()],
    };
    let mut w = ArchiveWriter::create(tmp.path(), defs, 1 << 20).unwrap();
    let send = |comm| E::MpiSend {
        receiver: 1,
        comm,
        tag: 0,
        length: 8,
    };
    // Rank 0's second message names communicator 7, which the definitions do not have.
    w.events(
        0,
        [
            (10, E::Enter { region: 0 }),
            (20, send(0)),
            (30, E::Leave { region: 0 }),
            (40, E::Enter { region: 0 }),
            (50, send(7)),
        ],
    )
    .unwrap();
    w.events(1, [(10, E::Enter { region: 1 })]).unwrap();
    let anchor = w.finish().unwrap();
    let program = format!("Otf2({:?})", anchor.display().to_string());
    let e = summary(&scenario("simplenet-64.ron", 2, &program, "").unwrap())
        .unwrap_err()
        .to_string();
    assert!(
        e.contains("traces/0.evt, location 0, event 5 (byte ")
            && e.contains("communicator 7 is not defined"),
        "{e}"
    );
}

/// TraceR's two-job stencil4d example (../shared/reference/otf2/stencil4d, read in place):
/// its config, job files and global map agree, 64 and 32 ranks in slots 0-63 and 64-95.
#[test]
fn tracers_two_job_example_reads_and_its_job_files_match_the_global_map() {
    use hetsim::systems::jobs::tracer;
    let dir = reference().join("stencil4d");
    let Ok(text) = std::fs::read_to_string(dir.join("tracer_config")) else {
        println!("skipped: ../shared/reference/otf2/stencil4d is not here");
        return;
    };
    let cfg = tracer::config(&text).unwrap();
    assert_eq!(cfg.jobs.len(), 2);
    let map = tracer::global_map(&std::fs::read(dir.join(&cfg.global_map)).unwrap()).unwrap();
    assert_eq!(map.len(), 96);
    let mut first = Vec::new();
    for (j, job) in cfg.jobs.iter().enumerate() {
        let slots = tracer::job_file(&std::fs::read(dir.join(&job.map)).unwrap()).unwrap();
        assert_eq!(slots.len() as u32, job.ranks);
        tracer::check_against_map(j as u32, &slots, &map).unwrap();
        assert!(dir.join(&job.trace).exists(), "{}", job.trace);
        first.push(slots[0]);
    }
    assert_eq!(first, vec![0, 64]);
}
