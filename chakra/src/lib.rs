//! A reader of Chakra execution traces (ET), the workload format of ASTRA-sim, Multiverse and
//! the MLCommons tools: one file per rank (`NAME.RANK.et`, gzip-compressed or not), a stream of
//! varint-length-prefixed protobuf messages, [`proto::GlobalMetadata`] first, then
//! [`proto::Node`]s. The messages are defined in Rust ([`proto`]); no `protoc` at build time.
//!
//! [`EtFile::read`] reads a file's nodes in order; a malformed file is an [`Error`] naming the
//! file, the node's index and what was wrong. [`Node`] helpers read the attributes the
//! simulators use (`comm_type`, `comm_size`, `comm_src`, `comm_dst`, `comm_tag`, `pg_name`,
//! `is_cpu_op`, `num_ops`, `tensor_size`).

pub mod proto;
pub mod stats;
pub mod write;

use std::io::Read;
use std::path::{Path, PathBuf};

use prost::Message;

pub use proto::{CollectiveCommType, NodeType};

#[derive(Debug, thiserror::Error)]
pub enum Error {
    #[error("{}: {source}", file.display())]
    Io {
        file: PathBuf,
        source: std::io::Error,
    },
    #[error("{}, {at}: {what}", file.display())]
    Malformed {
        file: PathBuf,
        /// `metadata` or `node N` (0-based, in file order).
        at: String,
        what: String,
    },
}

/// An attribute value as the simulators use them.
#[derive(Debug, Clone, PartialEq)]
pub enum AttrValue {
    Int(i64),
    Float(f64),
    Bool(bool),
    Str(String),
    /// A list or bytes: not read by name.
    Other,
}

/// A node, with its type decoded (unknown types kept as their number).
#[derive(Debug, Clone, PartialEq)]
pub struct Node {
    pub id: u64,
    pub name: String,
    pub kind: Result<NodeType, i32>,
    pub data_deps: Vec<u64>,
    pub ctrl_deps: Vec<u64>,
    pub start_micros: u64,
    pub duration_micros: u64,
    pub attrs: Vec<(String, AttrValue)>,
}

impl Node {
    pub fn attr(&self, name: &str) -> Option<&AttrValue> {
        self.attrs.iter().find(|(n, _)| n == name).map(|(_, v)| v)
    }

    pub fn int(&self, name: &str) -> Option<i64> {
        match self.attr(name)? {
            AttrValue::Int(v) => Some(*v),
            _ => None,
        }
    }

    pub fn flag(&self, name: &str) -> Option<bool> {
        match self.attr(name)? {
            AttrValue::Bool(b) => Some(*b),
            AttrValue::Int(v) => Some(*v != 0),
            _ => None,
        }
    }

    pub fn string(&self, name: &str) -> Option<&str> {
        match self.attr(name)? {
            AttrValue::Str(s) => Some(s),
            _ => None,
        }
    }

    /// `is_cpu_op` (false when absent: a GPU kernel).
    pub fn is_cpu_op(&self) -> bool {
        self.flag("is_cpu_op").unwrap_or(false)
    }

    /// The collective's kind: Ok(None) when the node has no `comm_type`, Err for an unknown
    /// value.
    pub fn comm_type(&self) -> Result<Option<CollectiveCommType>, i64> {
        match self.int("comm_type") {
            None => Ok(None),
            Some(v) => CollectiveCommType::try_from(v as i32)
                .map(Some)
                .map_err(|_| v),
        }
    }

    /// Bytes of a communication node (`comm_size`).
    pub fn comm_size(&self) -> Option<i64> {
        self.int("comm_size")
    }
}

/// A file's metadata and nodes.
#[derive(Debug, Clone)]
pub struct EtFile {
    pub path: PathBuf,
    pub version: String,
    pub metadata: Vec<(String, AttrValue)>,
    pub nodes: Vec<Node>,
}

fn value(v: &Option<proto::Value>) -> AttrValue {
    use proto::Value as V;
    match v {
        Some(V::Int32Val(x) | V::Sint32Val(x) | V::Sfixed32Val(x)) => AttrValue::Int(*x as i64),
        Some(V::Int64Val(x) | V::Sint64Val(x) | V::Sfixed64Val(x)) => AttrValue::Int(*x),
        Some(V::Uint32Val(x) | V::Fixed32Val(x)) => AttrValue::Int(*x as i64),
        Some(V::Uint64Val(x) | V::Fixed64Val(x)) => AttrValue::Int(*x as i64),
        Some(V::DoubleVal(x)) => AttrValue::Float(*x),
        Some(V::FloatVal(x)) => AttrValue::Float(*x as f64),
        Some(V::BoolVal(b)) => AttrValue::Bool(*b),
        Some(V::StringVal(s)) => AttrValue::Str(s.clone()),
        _ => AttrValue::Other,
    }
}

fn attrs(a: &[proto::AttributeProto]) -> Vec<(String, AttrValue)> {
    a.iter()
        .map(|a| (a.name.clone(), value(&a.value)))
        .collect()
}

/// Reads one varint-length-prefixed message's bytes; None at a clean end of the stream.
fn next_message(r: &mut impl Read, buf: &mut Vec<u8>) -> Result<Option<()>, String> {
    let mut len: u64 = 0;
    for i in 0..10 {
        let mut b = [0u8; 1];
        match r.read(&mut b) {
            Ok(0) if i == 0 => return Ok(None),
            Ok(0) => return Err("the file ends inside a length prefix (truncated?)".into()),
            Ok(_) => {}
            Err(e) => return Err(e.to_string()),
        }
        len |= ((b[0] & 0x7f) as u64) << (7 * i);
        if b[0] & 0x80 == 0 {
            if len > 1 << 30 {
                return Err(format!("a message of {len} bytes: not a Chakra trace?"));
            }
            buf.resize(len as usize, 0);
            return r.read_exact(buf).map(Some).map_err(|_| {
                format!("the file ends inside a message of {len} bytes (truncated?)")
            });
        }
    }
    Err("a length prefix longer than 10 bytes: not a Chakra trace?".into())
}

impl EtFile {
    /// Reads a file, gzip-compressed or not.
    pub fn read(path: impl AsRef<Path>) -> Result<EtFile, Error> {
        let path = path.as_ref().to_path_buf();
        let io = |source| Error::Io {
            file: path.clone(),
            source,
        };
        let mut raw = std::fs::File::open(&path).map_err(io)?;
        let mut magic = [0u8; 2];
        let n = raw.read(&mut magic).map_err(io)?;
        let raw = std::fs::File::open(&path).map_err(io)?;
        let mut input: Box<dyn Read> = if n == 2 && magic == [0x1f, 0x8b] {
            Box::new(std::io::BufReader::new(flate2::read::GzDecoder::new(raw)))
        } else {
            Box::new(std::io::BufReader::new(raw))
        };
        let bad = |at: String, what: String| Error::Malformed {
            file: path.clone(),
            at,
            what,
        };
        let mut buf = Vec::new();
        next_message(&mut input, &mut buf)
            .map_err(|w| bad("metadata".into(), w))?
            .ok_or_else(|| bad("metadata".into(), "the file is empty".into()))?;
        let meta = proto::GlobalMetadata::decode(buf.as_slice())
            .map_err(|e| bad("metadata".into(), e.to_string()))?;
        let mut nodes = Vec::new();
        loop {
            let at = format!("node {}", nodes.len());
            match next_message(&mut input, &mut buf).map_err(|w| bad(at.clone(), w))? {
                None => break,
                Some(()) => {
                    let n =
                        proto::Node::decode(buf.as_slice()).map_err(|e| bad(at, e.to_string()))?;
                    nodes.push(Node {
                        id: n.id,
                        name: n.name,
                        kind: NodeType::try_from(n.r#type).map_err(|_| n.r#type),
                        data_deps: n.data_deps,
                        ctrl_deps: n.ctrl_deps,
                        start_micros: n.start_time_micros,
                        duration_micros: n.duration_micros,
                        attrs: attrs(&n.attr),
                    });
                }
            }
        }
        Ok(EtFile {
            path,
            version: meta.version,
            metadata: attrs(&meta.attr),
            nodes,
        })
    }
}
