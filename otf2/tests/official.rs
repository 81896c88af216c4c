//! The reader against the official OTF2 library: every event of every location, as
//! `otf2-print -L LOCATION` (Debian's otf2-tools 3.0) prints it, must be what this crate
//! decodes: kind, location, timestamp (clock offsets applied) and fields.
//!
//! Archives: TraceR's stencil4d Score-P traces in `../shared/reference/otf2/` (public data,
//! read in place, never copied) and the archives of `tests/data/otf2/` written by
//! `tools/otf2-archives.py` with the official writer. A missing `otf2-print` or reference
//! folder is reported as a skip.

use std::path::{Path, PathBuf};
use std::process::Command;

#[path = "../examples/otf2-dump.rs"]
#[allow(dead_code)]
mod dump;

fn reference() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../shared/reference/otf2")
}

fn have_otf2_print() -> bool {
    Command::new("otf2-print").arg("--help").output().is_ok()
}

/// otf2-print's attribute text with names dropped: `Receiver: 1 ("Master thread" <1>),
/// Communicator: "MPI_COMM_WORLD" <0>` becomes `Receiver: 1, Communicator: 0`.
fn normalise(attrs: &str) -> String {
    let mut out = String::new();
    let mut in_quote = false;
    let mut depth = 0;
    for ch in attrs.chars() {
        match ch {
            '"' => in_quote = !in_quote,
            _ if in_quote => {}
            '(' => depth += 1,
            ')' => depth -= 1,
            _ if depth > 0 => {}
            '<' | '>' => {}
            c => out.push(c),
        }
    }
    let words: Vec<&str> = out.split_whitespace().collect();
    words.join(" ").replace(" ,", ",")
}

/// `("hetsim::gpu_buffer" <0>; UINT8; 1), ...` as ` | attr 0 1`, one per attribute.
fn attributes(list: &str) -> String {
    list.split(')')
        .filter(|a| a.contains(';'))
        .map(|a| {
            let parts: Vec<&str> = a.split(';').collect();
            let id = parts[0]
                .rsplit('<')
                .next()
                .unwrap()
                .trim_end_matches('>')
                .trim();
            format!(" | attr {id} {}", parts[parts.len() - 1].trim())
        })
        .collect()
}

fn official(archive: &Path, loc: u64) -> Vec<String> {
    let out = Command::new("otf2-print")
        .arg("-L")
        .arg(loc.to_string())
        .arg(archive)
        .output()
        .expect("otf2-print runs");
    assert!(
        out.status.success(),
        "otf2-print failed on {}",
        archive.display()
    );
    let text = String::from_utf8_lossy(&out.stdout);
    let mut lines = Vec::new();
    let mut started = false;
    for l in text.lines() {
        if l.starts_with("-----") {
            started = true;
            continue;
        }
        if !started || l.trim().is_empty() || l.starts_with("===") {
            continue;
        }
        if let Some(list) = l.trim().strip_prefix("ADDITIONAL ATTRIBUTES:") {
            let last = lines.last_mut().expect("attributes follow an event");
            *last = format!("{last}{}", attributes(list));
            continue;
        }
        let mut w = l.split_whitespace();
        let (kind, loc, time) = (w.next().unwrap(), w.next().unwrap(), w.next().unwrap());
        let rest: Vec<&str> = w.collect();
        let line = format!("{kind} {loc} {time} {}", normalise(&rest.join(" ")));
        lines.push(line.trim_end().to_string());
    }
    lines
}

fn ours(archive: &Path, loc: u64) -> Vec<String> {
    let a = otf2::Archive::open(archive).unwrap();
    let mut r = a.events(loc).unwrap();
    let mut lines = Vec::new();
    while let Some(e) = r.next_event().unwrap() {
        lines.push(dump::line(loc, &e));
    }
    lines
}

fn check_archive(archive: &Path) -> usize {
    let a = otf2::Archive::open(archive).unwrap();
    let mut n = 0;
    for loc in &a.defs.locations {
        let want = official(archive, loc.id);
        let got = ours(archive, loc.id);
        for (i, (w, g)) in want.iter().zip(&got).enumerate() {
            assert_eq!(g, w, "{} location {}: event {i}", archive.display(), loc.id);
        }
        assert_eq!(
            got.len(),
            want.len(),
            "{} location {}",
            archive.display(),
            loc.id
        );
        assert_eq!(
            got.len() as u64,
            loc.events,
            "the location's definition counts its events"
        );
        n += got.len();
    }
    n
}

#[test]
fn stencil4d_traces_decode_as_otf2_print_reads_them() {
    let dir = reference().join("stencil4d");
    if !dir.exists() || !have_otf2_print() {
        eprintln!(
            "skipped: needs {} and otf2-print (apt-get install otf2-tools)",
            dir.display()
        );
        return;
    }
    // 32 ranks: 4,324 events; 64 ranks: 8,644 (otf2-print's counts).
    assert_eq!(check_archive(&dir.join("traces-32/traces.otf2")), 4324);
    assert_eq!(check_archive(&dir.join("traces-64/traces.otf2")), 8644);
}

#[test]
fn own_archives_decode_as_otf2_print_reads_them() {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("../tests/data/otf2");
    if !have_otf2_print() {
        eprintln!("skipped: needs otf2-print (apt-get install otf2-tools)");
        return;
    }
    let mut checked = 0;
    for entry in std::fs::read_dir(&dir).unwrap() {
        let anchor = entry.unwrap().path().join("traces.otf2");
        if anchor.exists() && !anchor.to_string_lossy().contains("bad-") {
            check_archive(&anchor);
            checked += 1;
        }
    }
    assert!(checked >= 4, "the committed archives are there ({checked})");
}

/// A ring of sends and receives with collectives, as the crate's writer writes it.
fn written(dir: &Path, ranks: u32, rounds: u64, chunk: u64) -> PathBuf {
    use otf2::EventKind as E;
    use otf2::write::{ArchiveWriter, MpiDefinitions};
    let defs = MpiDefinitions {
        ranks,
        resolution: 1_000_000_000,
        regions: vec!["MPI_Send".into(), "MPI_Recv".into(), "MPI_Allreduce".into()],
    };
    let mut w = ArchiveWriter::create(dir, defs, chunk).unwrap();
    for r in 0..ranks {
        let mut t = 1000u64;
        let mut ev = Vec::new();
        let mut at = |k| {
            t += 37;
            ev.push((t, k));
        };
        for i in 0..rounds {
            let (right, left) = ((r + 1) % ranks, (r + ranks - 1) % ranks);
            at(E::Enter { region: 0 });
            at(E::MpiSend {
                receiver: right,
                comm: 0,
                tag: (i % 5) as u32,
                length: 4096 + i,
            });
            at(E::Leave { region: 0 });
            at(E::Enter { region: 1 });
            at(E::MpiRecv {
                sender: left,
                comm: 0,
                tag: (i % 5) as u32,
                length: 4096 + i,
            });
            at(E::Leave { region: 1 });
            if i % 100 == 0 {
                at(E::Enter { region: 2 });
                at(E::MpiCollectiveBegin);
                at(E::MpiCollectiveEnd {
                    op: otf2::CollectiveOp::Allreduce,
                    comm: 0,
                    root: u32::MAX,
                    sent: 8 * ranks as u64,
                    received: 8 * ranks as u64,
                });
                at(E::Leave { region: 2 });
            }
        }
        w.events(r, ev).unwrap();
    }
    w.finish().unwrap()
}

#[test]
fn archives_the_crate_writes_read_back_and_as_otf2_print_reads_them() {
    let tmp = tempfile::tempdir().unwrap();
    // The smallest chunks OTF2 takes: 5,000 rounds span two.
    let anchor = written(tmp.path(), 3, 5000, 256 * 1024);
    let a = otf2::Archive::open(&anchor).unwrap();
    assert_eq!(a.defs.locations.len(), 3);
    assert_eq!(a.defs.locations[0].events, 30_200);
    if have_otf2_print() {
        assert_eq!(check_archive(&anchor), 3 * 30_200);
    } else {
        eprintln!("otf2-print not there: only read back");
        let mut r = a.events(1).unwrap();
        let mut n = 0;
        while r.next_event().unwrap().is_some() {
            n += 1;
        }
        assert_eq!(n, 30_200);
    }
}
