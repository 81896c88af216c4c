//! Chunked OTF2 files read one chunk at a time: each chunk starts with a header (type 3,
//! the endianness byte, the numbers of its first and last event) and ends with an
//! end-of-chunk record (0) or, in the last chunk, end-of-file (2).

use std::fs::File;
use std::io::Read;
use std::path::{Path, PathBuf};

use crate::Error;
use crate::buffer::{Cursor, Decoded};

pub const END_OF_CHUNK: u8 = 0;
pub const END_OF_BUFFER: u8 = 1;
pub const END_OF_FILE: u8 = 2;
const CHUNK_HEADER: u8 = 3;
const LITTLE_ENDIAN: u8 = 0x42;
const BIG_ENDIAN: u8 = 0x23;
/// Type, endianness, first and last event number.
pub const HEADER_LEN: usize = 18;

/// Reads a chunked file chunk by chunk into one reused buffer.
pub struct Chunks {
    pub path: PathBuf,
    pub location: Option<u64>,
    file: File,
    chunk_size: u64,
    /// The current chunk's bytes.
    pub data: Vec<u8>,
    /// The file offset of the current chunk.
    pub base: u64,
    index: u64,
}

impl Chunks {
    pub fn open(path: &Path, location: Option<u64>, chunk_size: u64) -> Result<Chunks, Error> {
        let file = File::open(path).map_err(|source| Error::Io {
            file: path.to_path_buf(),
            source,
        })?;
        Ok(Chunks {
            path: path.to_path_buf(),
            location,
            file,
            chunk_size: chunk_size.max(HEADER_LEN as u64 + 1),
            data: Vec::new(),
            base: 0,
            index: 0,
        })
    }

    pub fn error(&self, offset_in_chunk: usize, what: impl Into<String>) -> Error {
        Error::Decode {
            file: self.path.clone(),
            location: self.location,
            offset: self.base + offset_in_chunk as u64,
            what: what.into(),
        }
    }

    /// Loads the next chunk; false at the end of the file. Returns with the header checked,
    /// the records starting at [`HEADER_LEN`].
    pub fn next(&mut self) -> Result<bool, Error> {
        self.base = self.index * self.chunk_size;
        self.data.clear();
        (&mut self.file)
            .take(self.chunk_size)
            .read_to_end(&mut self.data)
            .map_err(|source| Error::Io {
                file: self.path.clone(),
                source,
            })?;
        if self.data.is_empty() {
            return Ok(false);
        }
        self.index += 1;
        if self.data.len() < HEADER_LEN {
            return Err(self.error(0, "the file ends inside a chunk header (truncated?)"));
        }
        if self.data[0] != CHUNK_HEADER {
            return Err(self.error(
                0,
                format!(
                    "expected a chunk header (3), found record type {}",
                    self.data[0]
                ),
            ));
        }
        match self.data[1] {
            LITTLE_ENDIAN => Ok(true),
            BIG_ENDIAN => Err(Error::Unsupported {
                file: self.path.clone(),
                what: "big-endian archives are not supported".into(),
            }),
            b => Err(self.error(1, format!("unknown endianness byte {b:#04x}"))),
        }
    }

    /// Calls `record(type, cursor)` for every record of the file, chunk after chunk, up to
    /// its end-of-file record; a file that ends without one is an error (truncated), and a
    /// record `record` cannot decode is one naming its `what`, type and offset.
    pub fn each_record(
        &mut self,
        what: &str,
        mut record: impl FnMut(u8, &mut Cursor) -> Decoded<()>,
    ) -> Result<(), Error> {
        while self.next()? {
            let mut c = Cursor::at(&self.data, HEADER_LEN);
            loop {
                let at = c.pos();
                let t = c
                    .u8("a record type")
                    .map_err(|f| self.error(f.at, f.what))?;
                match t {
                    END_OF_CHUNK => break,
                    END_OF_FILE | END_OF_BUFFER => return Ok(()),
                    _ => record(t, &mut c)
                        .map_err(|f| self.error(f.at, format!("{what} {t} at {at}: {}", f.what)))?,
                }
            }
        }
        Err(self.error(
            self.data.len(),
            "the file ends without an end-of-file record (truncated?)",
        ))
    }
}
