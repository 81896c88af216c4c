//! Bad archives are errors that name the file (and, for decoding, the location and byte
//! offset), never panics.

use std::path::{Path, PathBuf};

use proptest::prelude::*;

fn data(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../tests/data/otf2")
        .join(name)
        .join("traces.otf2")
}

/// Reads every event of every location; the first error as text.
fn read_all(anchor: &Path) -> Result<u64, String> {
    let a = otf2::Archive::open(anchor).map_err(|e| e.to_string())?;
    let mut n = 0;
    for loc in &a.defs.locations {
        let mut r = a.events(loc.id).map_err(|e| e.to_string())?;
        while r.next_event().map_err(|e| e.to_string())?.is_some() {
            n += 1;
        }
    }
    Ok(n)
}

#[test]
fn a_truncated_event_file_names_the_file_location_and_offset() {
    let e = read_all(&data("bad-truncated")).unwrap_err();
    assert!(
        e.contains("traces/1.evt") && e.contains("(location 1)"),
        "{e}"
    );
    assert!(e.contains("byte ") && e.contains("truncated"), "{e}");
}

#[test]
fn a_garbled_event_file_names_the_file_location_and_offset() {
    let e = read_all(&data("bad-garbled")).unwrap_err();
    // The garbled type at byte 40 is skipped by its (garbled) length, as OTF2 skips unknown
    // records; decoding then fails where that length lands (otf2-print fails too).
    assert!(e.contains("traces/0.evt (location 0), byte 295"), "{e}");
}

#[test]
fn a_missing_location_file_is_named() {
    let e = read_all(&data("bad-missing")).unwrap_err();
    assert!(
        e.contains("traces/1.evt") && e.contains("No such file"),
        "{e}"
    );
}

#[test]
fn an_anchor_that_is_not_otf2_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    let p = dir.path().join("traces.otf2");
    std::fs::write(&p, b"hello").unwrap();
    let e = otf2::Archive::open(&p).unwrap_err().to_string();
    assert!(
        e.contains("traces.otf2") && e.contains("not an OTF2 anchor"),
        "{e}"
    );
}

/// Copies an archive, flips bytes in one of its files, and reads it all.
fn flipped(file: &str, flips: &[(usize, u8)]) -> Result<u64, String> {
    let src = data("pingpong");
    let src = src.parent().unwrap();
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path();
    std::fs::create_dir_all(dir.join("traces")).unwrap();
    for f in [
        "traces.otf2",
        "traces.def",
        "traces/0.def",
        "traces/0.evt",
        "traces/1.def",
        "traces/1.evt",
    ] {
        std::fs::copy(src.join(f), dir.join(f)).unwrap();
    }
    let target = dir.join(file);
    let mut bytes = std::fs::read(&target).unwrap();
    for &(at, x) in flips {
        let i = at % bytes.len();
        bytes[i] ^= x.max(1);
    }
    std::fs::write(&target, bytes).unwrap();
    read_all(&dir.join("traces.otf2"))
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(64))]
    #[test]
    fn random_byte_flips_never_panic(
        file in prop::sample::select(vec!["traces.otf2", "traces.def", "traces/0.def", "traces/0.evt"]),
        flips in prop::collection::vec((any::<usize>(), any::<u8>()), 1..4),
    ) {
        // Either an error or a (possibly different) decode; never a panic.
        let _ = flipped(file, &flips);
    }
}
