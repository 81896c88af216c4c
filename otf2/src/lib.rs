//! A pure-Rust, streaming reader of OTF2 trace archives, the format Score-P writes and Vampir,
//! Scalasca and TraceR read.
//!
//! An archive is an anchor file (`traces.otf2`), the global definitions (`traces.def`) and,
//! per location (an MPI rank's thread), a local definition file (`traces/N.def`: mapping
//! tables from local to global ids, clock offsets) and an event file (`traces/N.evt`).
//! Definition and event files are sequences of chunks (the anchor gives their sizes), each
//! starting with a chunk header; records are a type byte, then (except for the ten
//! "singleton" event types that hold one compressed integer) a length, then the fields.
//! Events follow the timestamp record that precedes them and the attribute list, if any.
//!
//! What is read: the anchor; global strings, clock properties, attributes, regions, location
//! groups, locations, groups and communicators; local mapping tables (applied, as the OTF2
//! library does) and clock offsets (applied with OTF2's linear interpolation); and events,
//! one location at a time, one chunk in memory at a time. The MPI records are decoded
//! ([`EventKind`]); every other record is skipped by its length and counted. Uncompressed,
//! little-endian POSIX archives (what Score-P writes on x86 and POWER little-endian) are
//! supported; SIONlib and zlib archives are refused with an error that says so.
//!
//! Anything that cannot be decoded is an [`Error`] naming the file, the location and the byte
//! offset; the reader never panics on bad input.

mod anchor;
mod buffer;
mod chunks;
mod defs;
mod events;
mod local;
pub mod write;

use std::path::{Path, PathBuf};

pub use anchor::Anchor;
pub use defs::{
    Attribute, ClockProperties, Comm, Definitions, Group, GroupType, Location, LocationGroup,
    Region,
};
pub use events::{AttributeValue, CollectiveOp, Event, EventKind, EventReader};

/// What went wrong, and where.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    #[error("{}: {source}", file.display())]
    Io {
        file: PathBuf,
        source: std::io::Error,
    },
    #[error("{}{}, byte {offset}: {what}", file.display(), location.map(|l| format!(" (location {l})")).unwrap_or_default())]
    Decode {
        file: PathBuf,
        location: Option<u64>,
        offset: u64,
        what: String,
    },
    #[error("{}: {what}", file.display())]
    Unsupported { file: PathBuf, what: String },
}

pub type Result<T> = std::result::Result<T, Error>;

/// An open archive: its anchor and global definitions; events are read per location.
#[derive(Debug, Clone)]
pub struct Archive {
    pub anchor: Anchor,
    pub defs: Definitions,
    /// The anchor file's path.
    pub path: PathBuf,
    /// The folder of local files (`traces/` next to `traces.otf2`).
    pub dir: PathBuf,
}

impl Archive {
    /// Opens the archive whose anchor file is `path` (`.../traces.otf2`).
    pub fn open(path: impl AsRef<Path>) -> Result<Archive> {
        let path = path.as_ref().to_path_buf();
        let anchor = Anchor::read(&path)?;
        let stem = path.with_extension("");
        let def_path = path.with_extension("def");
        let defs = Definitions::read(&def_path, anchor.def_chunk_size)?;
        Ok(Archive {
            anchor,
            defs,
            path,
            dir: stem,
        })
    }

    /// The event file of a location.
    pub fn event_file(&self, location: u64) -> PathBuf {
        self.dir.join(format!("{location}.evt"))
    }

    /// The local definition file of a location.
    pub fn local_def_file(&self, location: u64) -> PathBuf {
        self.dir.join(format!("{location}.def"))
    }

    /// A streaming reader of one location's events, with its mapping tables and clock
    /// offsets applied.
    pub fn events(&self, location: u64) -> Result<EventReader> {
        let local = local::LocalDefs::read(
            &self.local_def_file(location),
            location,
            self.anchor.def_chunk_size,
        )?;
        EventReader::open(
            &self.event_file(location),
            location,
            self.anchor.event_chunk_size,
            local,
        )
    }
}
