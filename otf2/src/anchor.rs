//! The anchor file (`traces.otf2`): format and library versions, chunk sizes, substrate,
//! compression, the numbers of locations and global definitions, and free-form properties.

use std::path::Path;

use crate::Error;
use crate::buffer::Cursor;

const MAGIC: &str = "OTF2";
const SUBSTRATE_POSIX: u8 = 1;
const SUBSTRATE_SION: u8 = 2;
const SUBSTRATE_NONE: u8 = 3;
const COMPRESSION_NONE: u8 = 1;
const COMPRESSION_ZLIB: u8 = 2;

#[derive(Debug, Clone, PartialEq)]
pub struct Anchor {
    pub anchor_format: u8,
    pub trace_format: u8,
    /// The OTF2 library version that wrote the archive (major, minor, bugfix).
    pub version: (u8, u8, u8),
    pub event_chunk_size: u64,
    pub def_chunk_size: u64,
    pub locations: u64,
    pub global_defs: u64,
    pub machine: String,
    pub creator: String,
    pub description: String,
    pub properties: Vec<(String, String)>,
}

impl Anchor {
    pub fn read(path: &Path) -> Result<Anchor, Error> {
        let bytes = std::fs::read(path).map_err(|source| Error::Io {
            file: path.to_path_buf(),
            source,
        })?;
        let err = |f: crate::buffer::Fault| Error::Decode {
            file: path.to_path_buf(),
            location: None,
            offset: f.at as u64,
            what: f.what,
        };
        let mut c = Cursor::new(&bytes);
        let header = c.u8("the anchor header").map_err(err)?;
        let endianness = c.u8("the anchor header").map_err(err)?;
        if header != 3 {
            return Err(err(crate::buffer::Fault {
                at: 0,
                what: "not an OTF2 anchor file (no header)".into(),
            }));
        }
        if endianness != 0x42 {
            return Err(Error::Unsupported {
                file: path.to_path_buf(),
                what: "big-endian archives are not supported".into(),
            });
        }
        let magic = c.string("the magic string").map_err(err)?;
        if magic != MAGIC {
            return Err(err(crate::buffer::Fault {
                at: 2,
                what: format!("not an OTF2 anchor file (magic `{magic}`)"),
            }));
        }
        let anchor_format = c.u8("the anchor format").map_err(err)?;
        let trace_format = c.u8("the trace format").map_err(err)?;
        let version = (
            c.u8("the version").map_err(err)?,
            c.u8("the version").map_err(err)?,
            c.u8("the version").map_err(err)?,
        );
        let event_chunk_size = c.u64_full("the event chunk size").map_err(err)?;
        let def_chunk_size = c.u64_full("the definition chunk size").map_err(err)?;
        let at = c.pos();
        let substrate = c.u8("the file substrate").map_err(err)?;
        match substrate {
            SUBSTRATE_POSIX => {}
            SUBSTRATE_SION | SUBSTRATE_NONE => {
                return Err(Error::Unsupported {
                    file: path.to_path_buf(),
                    what: "the archive uses the SIONlib (or no) file substrate; only POSIX files are read (set SCOREP_TRACING_USE_SION=false)".into(),
                });
            }
            s => {
                return Err(err(crate::buffer::Fault {
                    at,
                    what: format!("unknown file substrate {s}"),
                }));
            }
        }
        let at = c.pos();
        match c.u8("the compression").map_err(err)? {
            COMPRESSION_NONE => {}
            COMPRESSION_ZLIB => {
                return Err(Error::Unsupported {
                    file: path.to_path_buf(),
                    what:
                        "zlib-compressed archives are not read (set SCOREP_TRACING_COMPRESS=false)"
                            .into(),
                });
            }
            s => {
                return Err(err(crate::buffer::Fault {
                    at,
                    what: format!("unknown compression {s}"),
                }));
            }
        }
        let locations = c.u64_full("the number of locations").map_err(err)?;
        let global_defs = c.u64_full("the number of definitions").map_err(err)?;
        let machine = c.string("the machine name").map_err(err)?;
        let creator = c.string("the creator").map_err(err)?;
        let description = c.string("the description").map_err(err)?;
        let mut properties = Vec::new();
        if anchor_format > 1 {
            let n = c.u32_full("the number of properties").map_err(err)?;
            for _ in 0..n {
                let name = c.string("a property name").map_err(err)?;
                let value = c.string("a property value").map_err(err)?;
                properties.push((name, value));
            }
        }
        if event_chunk_size == 0 || def_chunk_size == 0 {
            return Err(err(crate::buffer::Fault {
                at: 0,
                what: "a chunk size is 0".into(),
            }));
        }
        Ok(Anchor {
            anchor_format,
            trace_format,
            version,
            event_chunk_size,
            def_chunk_size,
            locations,
            global_defs,
            machine,
            creator,
            description,
            properties,
        })
    }
}
