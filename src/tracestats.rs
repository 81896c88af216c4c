//! `hetsim trace-stats FILE.ti...`: what time-independent traces hold, before running them:
//! the message-size histogram, partners per rank, bytes per communication phase, the
//! collectives and the computation.

use std::fmt::Write;
use std::path::{Path, PathBuf};

use hetsim_output::headline::binary_bytes as size;
use hetsim_systems::mpi::stats::{TraceStats, bucket_range, summarise};
use hetsim_systems::mpi::ti::{parse_traces, trace_ranks};

use crate::Error;

/// Reads the traces (one file with every rank's lines, one file per rank, SMPI's index of
/// per-rank files, or an OTF2 archive's anchor file) and summarises them; OTF2 archives add
/// a line on what they hold.
pub fn stats(files: &[PathBuf]) -> Result<(TraceStats, Option<String>), Error> {
    if let [f] = files
        && f.extension().is_some_and(|e| e == "otf2")
    {
        let read = hetsim_systems::mpi::otf2::read_as_is(&f.display().to_string())
            .map_err(Error::Input)?;
        let skipped: Vec<String> = read
            .skipped
            .iter()
            .map(|(k, n)| format!("{n} of {k}"))
            .collect();
        let note = format!(
            "OTF2: {} events read; computation is the time between MPI calls, counted as flops at 1 Gflop/s; not replayed: {}",
            read.events,
            if skipped.is_empty() {
                "none".to_string()
            } else {
                skipped.join(", ")
            }
        );
        return Ok((summarise(&read.programs), Some(note)));
    }
    let read = |name: &str| {
        hetsim_schema::load::read_input(Path::new(name))
            .map(|t| (name.to_string(), t))
            .map_err(|e| format!("{name}: {e}"))
    };
    let names: Vec<String> = files.iter().map(|f| f.display().to_string()).collect();
    let texts =
        hetsim_schema::load::read_traces(&names, &read).map_err(|(_, e)| Error::Input(e))?;
    let ranks = trace_ranks(&texts).map_err(Error::Input)?;
    let programs = parse_traces(&texts, ranks).map_err(Error::Input)?;
    Ok((summarise(&programs), None))
}

/// Whether the files are Chakra execution traces (`.et`, `.et.gz`).
pub fn is_chakra(files: &[PathBuf]) -> bool {
    !files.is_empty()
        && files.iter().all(|f| {
            let name = f.to_string_lossy();
            name.ends_with(".et") || name.ends_with(".et.gz")
        })
}

/// What Chakra execution traces hold, one report per rank's file: nodes per type, compute,
/// collectives by kind and process group, the critical path of the data dependencies.
pub fn chakra_report(files: &[PathBuf]) -> Result<String, Error> {
    let mut out = String::new();
    for f in files {
        let et = chakra::EtFile::read(f).map_err(|e| Error::Input(e.to_string()))?;
        let s =
            chakra::stats::stats(&et).map_err(|e| Error::Input(format!("{}: {e}", f.display())))?;
        let ms = |us: u64| format!("{:.3} ms", us as f64 / 1e3);
        let w = &mut out;
        let version = if et.version.is_empty() {
            String::new()
        } else {
            format!(" {}", et.version)
        };
        let _ = writeln!(
            w,
            "{} (Chakra ET{version}): {} nodes",
            f.display(),
            et.nodes.len()
        );
        let types: Vec<String> = s.nodes.iter().map(|(t, n)| format!("{t} {n}")).collect();
        let _ = writeln!(w, "  nodes: {}", types.join(", "));
        let _ = writeln!(
            w,
            "  compute: {} GPU kernels, {}; {} CPU operators, {}",
            s.kernels.0,
            ms(s.kernels.1),
            s.cpu_ops.0,
            ms(s.cpu_ops.1)
        );
        for ((kind, pg), &(n, bytes, largest, us)) in &s.collectives {
            let pg = if pg.is_empty() {
                "all ranks"
            } else {
                pg.as_str()
            };
            let _ = writeln!(
                w,
                "  collective {kind:<14} ({pg}): {n} calls, {} (largest {}), {} as traced",
                size(bytes as f64),
                size(largest as f64),
                ms(us)
            );
        }
        if s.p2p.0 > 0 {
            let _ = writeln!(
                w,
                "  point-to-point: {} send/recv nodes, {}",
                s.p2p.0,
                size(s.p2p.1 as f64)
            );
        }
        let _ = writeln!(
            w,
            "  critical path through data_deps: {} over {} nodes",
            ms(s.critical_path.0),
            s.critical_path.1
        );
        if s.dangling > 0 {
            let _ = writeln!(w, "  {} dependencies name no node of the file", s.dangling);
        }
    }
    Ok(out)
}

/// The report `hetsim trace-stats` prints.
pub fn report(s: &TraceStats) -> String {
    let mut out = String::new();
    let w = &mut out;
    let _ = writeln!(w, "ranks: {}", s.ranks);
    let _ = writeln!(
        w,
        "point-to-point: {} messages, {} in all",
        s.messages,
        size(s.bytes)
    );
    if s.messages > 0 {
        let _ = writeln!(
            w,
            "  {:<22} {:>10} {:>7} {:>12}",
            "size", "messages", "share", "bytes"
        );
        for (k, &(n, bytes)) in s.buckets.iter().enumerate() {
            if n == 0 {
                continue;
            }
            let (lo, hi) = bucket_range(k);
            let range = if k == 0 {
                "0 B".to_string()
            } else {
                format!("[{}, {})", size(lo), size(hi))
            };
            let share = n as f64 / s.messages as f64;
            let bar = "#".repeat((share * 40.0).round() as usize);
            let _ = writeln!(
                w,
                "  {range:<22} {n:>10} {:>6.1}% {:>12} {bar}",
                100.0 * share,
                size(bytes)
            );
        }
    }
    let (lo, mean, hi) = s.partners;
    let _ = writeln!(
        w,
        "partners per rank (distinct destinations): min {lo}, mean {mean:.1}, max {hi}"
    );
    if !s.phase_bytes.is_empty() {
        let n = s.phase_bytes.len();
        let max = s.phase_bytes.iter().copied().fold(0.0, f64::max);
        let shown: Vec<String> = s.phase_bytes.iter().take(12).map(|&b| size(b)).collect();
        let more = if n > 12 { ", ..." } else { "" };
        let _ = writeln!(
            w,
            "communication phases (point-to-point between computations and collectives): {n}, \
             bytes of all ranks per phase: mean {}, max {}; {}{more}",
            size(s.bytes / n as f64),
            size(max),
            shown.join(", ")
        );
    }
    if s.collectives.is_empty() {
        let _ = writeln!(w, "collectives: none");
    } else {
        let _ = writeln!(
            w,
            "collectives (calls of all ranks, bytes as the lines give):"
        );
        for (name, &(n, bytes)) in &s.collectives {
            let per_rank = n as f64 / s.ranks.max(1) as f64;
            let _ = writeln!(
                w,
                "  {name:<16} {n:>8} calls ({per_rank:.0} per rank), {}",
                size(bytes)
            );
        }
    }
    let _ = writeln!(
        w,
        "computation per rank: {:.3e} flops mean, {:.3e} max; timed work and sleeps {:.3e} s mean, {:.3e} s max",
        s.flops.0, s.flops.1, s.seconds.0, s.seconds.1
    );
    out
}
