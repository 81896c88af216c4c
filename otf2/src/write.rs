//! A small OTF2 writer: enough to write MPI traces (the records [`crate::EventKind`] names)
//! that the official library reads, for tests, benchmarks and tools that generate traces.
//! Little-endian, uncompressed, POSIX files; events are chunked as the anchor says.

use std::io::Write;
use std::path::{Path, PathBuf};

use crate::{Error, EventKind};

const MAGIC: &str = "OTF2";
const TIMESTAMP: u8 = 5;

fn io(file: &Path) -> impl Fn(std::io::Error) -> Error + '_ {
    move |source| Error::Io {
        file: file.to_path_buf(),
        source,
    }
}

/// Compressed unsigned integer: a size byte, then the value's significant bytes.
fn u(buf: &mut Vec<u8>, v: u64) {
    if v == 0 {
        buf.push(0);
    } else if v == u64::MAX {
        buf.push(0xff);
    } else {
        let n = 8 - (v.leading_zeros() / 8) as usize;
        buf.push(n as u8);
        buf.extend_from_slice(&v.to_le_bytes()[..n]);
    }
}

/// Compressed 32-bit value (u32::MAX is OTF2's UNDEFINED, one byte).
fn u32c(buf: &mut Vec<u8>, v: u32) {
    if v == u32::MAX {
        buf.push(0xff);
    } else {
        u(buf, v as u64);
    }
}

/// A record with a length: type, length, fields.
fn record(buf: &mut Vec<u8>, t: u8, fields: &[u8]) {
    buf.push(t);
    if fields.len() < 0xff {
        buf.push(fields.len() as u8);
    } else {
        buf.push(0xff);
        buf.extend_from_slice(&(fields.len() as u64).to_le_bytes());
    }
    buf.extend_from_slice(fields);
}

fn chunk_header(buf: &mut Vec<u8>, first: u64, last: u64) {
    buf.extend_from_slice(&[3, 0x42]);
    buf.extend_from_slice(&first.to_le_bytes());
    buf.extend_from_slice(&last.to_le_bytes());
}

/// The global definitions of an MPI trace: one process and one thread per rank.
#[derive(Debug, Clone)]
pub struct MpiDefinitions {
    pub ranks: u32,
    /// Ticks per second.
    pub resolution: u64,
    /// Region names (MPI_Send ...); regions are their indices.
    pub regions: Vec<String>,
}

/// Writes an archive: `traces/N.evt` per rank as [`ArchiveWriter::events`] is called, then
/// `traces.otf2` and `traces.def` at [`ArchiveWriter::finish`].
pub struct ArchiveWriter {
    dir: PathBuf,
    chunk: u64,
    defs: MpiDefinitions,
    /// Events written per rank.
    counts: Vec<u64>,
}

impl ArchiveWriter {
    /// An archive under `dir` (created), with event chunks of `chunk` bytes (OTF2 takes 256 KiB
    /// to 16 MiB).
    pub fn create(dir: &Path, defs: MpiDefinitions, chunk: u64) -> Result<ArchiveWriter, Error> {
        std::fs::create_dir_all(dir.join("traces")).map_err(io(dir))?;
        Ok(ArchiveWriter {
            dir: dir.to_path_buf(),
            chunk: chunk.clamp(256 * 1024, 16 << 20),
            counts: vec![0; defs.ranks as usize],
            defs,
        })
    }

    /// Writes the anchor and the definitions; the archive is then complete.
    pub fn finish(self) -> Result<PathBuf, Error> {
        let records = self.definitions(&self.defs)?;
        self.anchor(&self.defs, records)?;
        Ok(self.dir.join("traces.otf2"))
    }

    fn anchor(&self, defs: &MpiDefinitions, records: u64) -> Result<(), Error> {
        let mut b = vec![3, 0x42];
        b.extend_from_slice(MAGIC.as_bytes());
        b.push(0);
        b.extend_from_slice(&[2, 2, 2, 0, 0]); // anchor format 2, trace format 2, OTF2 2.0.0
        b.extend_from_slice(&self.chunk.to_le_bytes());
        b.extend_from_slice(&(1u64 << 22).to_le_bytes());
        b.extend_from_slice(&[1, 1]); // POSIX, no compression
        b.extend_from_slice(&(defs.ranks as u64).to_le_bytes());
        b.extend_from_slice(&records.to_le_bytes());
        for s in ["", "otf2 (hetsim)", ""] {
            b.extend_from_slice(s.as_bytes());
            b.push(0);
        }
        b.extend_from_slice(&0u32.to_le_bytes()); // no properties
        b.extend_from_slice(&0u64.to_le_bytes()); // trace id
        b.push(2);
        let f = self.dir.join("traces.otf2");
        std::fs::write(&f, b).map_err(io(&f))
    }

    /// Writes the global definitions; how many records.
    fn definitions(&self, defs: &MpiDefinitions) -> Result<u64, Error> {
        let mut b = Vec::new();
        chunk_header(&mut b, 1, 0);
        let mut f = Vec::new();
        let mut records = 0u64;
        let mut rec = |b: &mut Vec<u8>, t: u8, f: &mut Vec<u8>| {
            record(b, t, f);
            f.clear();
            records += 1;
        };
        u(&mut f, defs.resolution);
        u(&mut f, 0);
        u(&mut f, 0);
        rec(&mut b, 5, &mut f);
        // Strings: 0 "", 1 "Master thread", 2 "MPI_COMM_WORLD", 3.. ranks' names, then regions.
        let mut strings = vec![
            String::new(),
            "Master thread".into(),
            "MPI_COMM_WORLD".into(),
        ];
        strings.extend((0..defs.ranks).map(|r| format!("MPI Rank {r}")));
        let region_base = strings.len() as u32;
        strings.extend(defs.regions.iter().cloned());
        for (i, s) in strings.iter().enumerate() {
            u(&mut f, i as u64);
            f.extend_from_slice(s.as_bytes());
            f.push(0);
            rec(&mut b, 10, &mut f);
        }
        for r in 0..defs.ranks {
            // Location group: self, name, type process, no system tree parent.
            u(&mut f, r as u64);
            u(&mut f, 3 + r as u64);
            f.push(1);
            u32c(&mut f, u32::MAX);
            rec(&mut b, 13, &mut f);
        }
        for r in 0..defs.ranks {
            u(&mut f, r as u64);
            u(&mut f, 1);
            f.push(1); // CPU thread
            u(&mut f, self.counts[r as usize]);
            u(&mut f, r as u64);
            rec(&mut b, 14, &mut f);
        }
        for (i, _) in defs.regions.iter().enumerate() {
            let name = region_base + i as u32;
            u(&mut f, i as u64);
            u(&mut f, name as u64);
            u(&mut f, 0);
            f.push(0);
            u(&mut f, 0);
            u(&mut f, 0);
            u(&mut f, 0);
            u(&mut f, name as u64);
            f.push(0x18); // point-to-point role
            f.push(crate::defs::PARADIGM_MPI);
            u(&mut f, 0);
            rec(&mut b, 15, &mut f);
        }
        for (id, kind) in [(0u64, 4u8), (1, 5)] {
            // Group 0: the world's locations; group 1: MPI_COMM_WORLD's ranks.
            u(&mut f, id);
            u(&mut f, 0);
            f.push(kind);
            u(&mut f, defs.ranks as u64);
            for r in 0..defs.ranks {
                u(&mut f, r as u64);
            }
            f.push(kind);
            f.push(crate::defs::PARADIGM_MPI);
            u(&mut f, 0);
            rec(&mut b, 18, &mut f);
        }
        u(&mut f, 0);
        u(&mut f, 2);
        u(&mut f, 1);
        u32c(&mut f, u32::MAX);
        rec(&mut b, 22, &mut f);
        b.push(2);
        let p = self.dir.join("traces.def");
        std::fs::write(&p, b).map_err(io(&p))?;
        Ok(records)
    }

    /// Writes rank `rank`'s events (time in ticks, kind), in time order.
    pub fn events(
        &mut self,
        rank: u32,
        events: impl IntoIterator<Item = (u64, EventKind)>,
    ) -> Result<u64, Error> {
        let path = self.dir.join("traces").join(format!("{rank}.evt"));
        let file = std::fs::File::create(&path).map_err(io(&path))?;
        let mut out = std::io::BufWriter::new(file);
        let mut chunk = Vec::with_capacity(self.chunk as usize);
        chunk_header(&mut chunk, 1, 0);
        let mut n = 0u64;
        let mut first = 1u64;
        let mut rec = Vec::new();
        for (time, kind) in events {
            rec.clear();
            rec.push(TIMESTAMP);
            rec.extend_from_slice(&time.to_le_bytes());
            encode(&mut rec, &kind);
            // Room for the record and an end-of-chunk byte.
            if chunk.len() + rec.len() + 1 > self.chunk as usize {
                chunk.push(0);
                chunk.resize(self.chunk as usize, 0);
                chunk[10..18].copy_from_slice(&n.to_le_bytes());
                chunk[2..10].copy_from_slice(&first.to_le_bytes());
                out.write_all(&chunk).map_err(io(&path))?;
                chunk.clear();
                first = n + 1;
                chunk_header(&mut chunk, first, 0);
            }
            chunk.extend_from_slice(&rec);
            n += 1;
        }
        chunk.push(2);
        chunk[2..10].copy_from_slice(&first.to_le_bytes());
        chunk[10..18].copy_from_slice(&n.to_le_bytes());
        out.write_all(&chunk).map_err(io(&path))?;
        out.flush().map_err(io(&path))?;
        if let Some(c) = self.counts.get_mut(rank as usize) {
            *c = n;
        }
        Ok(n)
    }
}

/// One event's record (after its timestamp).
fn encode(b: &mut Vec<u8>, k: &EventKind) {
    let mut f = Vec::new();
    let single = |b: &mut Vec<u8>, t: u8, v: u64| {
        b.push(t);
        u(b, v);
    };
    match *k {
        EventKind::Enter { region } => single(b, 12, region as u64),
        EventKind::Leave { region } => single(b, 13, region as u64),
        EventKind::MpiIsendComplete { request } => single(b, 16, request),
        EventKind::MpiIrecvRequest { request } => single(b, 17, request),
        EventKind::MpiRequestTest { request } => single(b, 20, request),
        EventKind::MpiRequestCancelled { request } => single(b, 21, request),
        EventKind::MeasurementOnOff { on } => record(b, 11, &[if on { 1 } else { 2 }]),
        EventKind::MpiSend {
            receiver,
            comm,
            tag,
            length,
        }
        | EventKind::MpiRecv {
            sender: receiver,
            comm,
            tag,
            length,
        } => {
            u32c(&mut f, receiver);
            u32c(&mut f, comm);
            u32c(&mut f, tag);
            u(&mut f, length);
            record(
                b,
                if matches!(k, EventKind::MpiSend { .. }) {
                    14
                } else {
                    18
                },
                &f,
            );
        }
        EventKind::MpiIsend {
            receiver,
            comm,
            tag,
            length,
            request,
        }
        | EventKind::MpiIrecv {
            sender: receiver,
            comm,
            tag,
            length,
            request,
        } => {
            u32c(&mut f, receiver);
            u32c(&mut f, comm);
            u32c(&mut f, tag);
            u(&mut f, length);
            u(&mut f, request);
            record(
                b,
                if matches!(k, EventKind::MpiIsend { .. }) {
                    15
                } else {
                    19
                },
                &f,
            );
        }
        EventKind::MpiCollectiveBegin => record(b, 22, &[]),
        EventKind::MpiCollectiveEnd {
            op,
            comm,
            root,
            sent,
            received,
        } => {
            f.push(op.code());
            u32c(&mut f, comm);
            u32c(&mut f, root);
            u(&mut f, sent);
            u(&mut f, received);
            record(b, 23, &f);
        }
        EventKind::Other(t) => record(b, t, &[]),
    }
}
