//! `hetsim convert IN.otf2 OUT.txt`: an OTF2 archive as SimGrid's time-independent trace, in
//! the layout `smpirun -trace-ti` writes (an index file listing one file per rank, in
//! `OUT.txt_files/`), read back by `smpirun -replay` and by hetsim's `Trace([...])`.
//!
//! The programs are those a run of `program: Otf2(...)` replays (TraceR's semantics), so a
//! scenario on the conversion with `compute_speed: "1Gf"` gives the same outputs, byte for
//! byte, as one on the archive (SMPI: `--cfg=smpi/host-speed:1Gf`). Counts are bytes (SMPI's
//! MPI_BYTE, id 6). What SimGrid's format cannot hold is said: buffer locations (every message
//! replays on the scenario's `buffers`), and tags of sub-communicators (their own tag space
//! is folded into the tag, which SMPI reads as a plain tag).

use std::path::Path;

use hetsim_systems::mpi::otf2;
use hetsim_systems::mpi::smpi;

use crate::Error;

/// Converts; returns the report to print. Writes nothing unless every rank converts.
pub fn convert(input: &Path, output: &Path) -> Result<String, Error> {
    if input.extension().is_none_or(|e| e != "otf2") {
        return Err(Error::Input(format!(
            "{}: expected an OTF2 anchor file (traces.otf2)",
            input.display()
        )));
    }
    let read = otf2::read_as_is(&input.display().to_string()).map_err(Error::Input)?;
    let ranks = read.programs.len() as u32;
    let texts = read
        .programs
        .iter()
        .enumerate()
        .map(|(r, p)| {
            let ops: Vec<_> = p.steps.iter().map(|s| s.op).collect();
            smpi::write_rank(r as u32, &ops, ranks)
        })
        .collect::<Result<Vec<String>, String>>()
        .map_err(|e| Error::Input(format!("{}: {e}", input.display())))?;
    let name = output
        .file_name()
        .ok_or_else(|| Error::Input(format!("{}: expected a file name", output.display())))?
        .to_string_lossy()
        .to_string();
    let dir = output.parent().unwrap_or(Path::new(""));
    let files_dir = format!("{name}_files");
    let io = |e: std::io::Error, p: &Path| Error::Input(format!("{}: {e}", p.display()));
    let rank_dir = dir.join(&files_dir);
    std::fs::create_dir_all(&rank_dir).map_err(|e| io(e, &rank_dir))?;
    let mut index = String::new();
    for (r, text) in texts.iter().enumerate() {
        let entry = format!("{files_dir}/rank-{}.txt", r + 1);
        let file = dir.join(&entry);
        std::fs::write(&file, text).map_err(|e| io(e, &file))?;
        index.push_str(&entry);
        index.push('\n');
    }
    std::fs::write(output, index).map_err(|e| io(e, output))?;
    let wide_tags = read.programs.iter().any(|p| {
        p.steps.iter().any(|s| match s.op {
            hetsim_systems::mpi::program::Op::Send { tag, .. }
            | hetsim_systems::mpi::program::Op::Isend { tag, .. } => tag > i32::MAX as i64,
            _ => false,
        })
    });
    let mut report = format!(
        "wrote {} ({ranks} ranks, {} events read) and {}\n\
         replay: hetsim with program: Trace([{:?}]), compute_speed: \"1Gf\"; \
         SimGrid with smpirun -replay {} --cfg=smpi/host-speed:1Gf\n",
        output.display(),
        read.events,
        rank_dir.display(),
        output.display().to_string(),
        output.display()
    );
    if read.host_messages > 0 {
        report.push_str(&format!(
            "note: {} messages had host buffers in the archive; SimGrid's format has no buffer location\n",
            read.host_messages
        ));
    }
    if wide_tags {
        report.push_str("note: messages on sub-communicators carry tags above 2^31 (their communicator's tag space); SMPI reads tags as int\n");
    }
    Ok(report)
}
