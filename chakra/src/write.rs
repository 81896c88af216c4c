//! Writing Chakra traces: a [`Trace`] of nodes built with a few helpers, encoded as the files
//! the reader takes (varint-length-prefixed messages, `GlobalMetadata` first; gzip when the
//! name ends in `.gz`). For tests, benchmarks and example traces.

use std::io::Write;
use std::path::Path;

use prost::Message;

use crate::proto::{self, AttributeProto, GlobalMetadata, Value};
use crate::{CollectiveCommType, NodeType};

/// An attribute of a node: `attr("comm_size", Value::Int64Val(8))`.
pub fn attr(name: &str, value: Value) -> AttributeProto {
    AttributeProto {
        name: name.into(),
        doc_string: String::new(),
        value: Some(value),
    }
}

/// A trace being written: the schema version and its nodes, in file order.
#[derive(Debug, Clone, Default)]
pub struct Trace {
    pub version: String,
    pub nodes: Vec<proto::Node>,
}

impl Trace {
    pub fn new(version: &str) -> Trace {
        Trace {
            version: version.into(),
            nodes: Vec::new(),
        }
    }

    /// Adds a node with the next id (from 0) and returns the id.
    pub fn node(
        &mut self,
        name: &str,
        kind: NodeType,
        deps: &[u64],
        micros: u64,
        attrs: Vec<AttributeProto>,
    ) -> u64 {
        let id = self.nodes.len() as u64;
        self.nodes.push(proto::Node {
            id,
            name: name.into(),
            r#type: kind as i32,
            data_deps: deps.to_vec(),
            duration_micros: micros,
            attr: attrs,
            ..Default::default()
        });
        id
    }

    /// A GPU kernel (`is_cpu_op` false) of `micros`.
    pub fn kernel(&mut self, name: &str, deps: &[u64], micros: u64) -> u64 {
        let a = vec![attr("is_cpu_op", Value::BoolVal(false))];
        self.node(name, NodeType::CompNode, deps, micros, a)
    }

    /// A CPU operator of `micros`.
    pub fn cpu(&mut self, name: &str, deps: &[u64], micros: u64) -> u64 {
        let a = vec![attr("is_cpu_op", Value::BoolVal(true))];
        self.node(name, NodeType::CompNode, deps, micros, a)
    }

    /// A GPU-side collective of `bytes` over process group `pg` (None: no `pg_name`).
    pub fn collective(
        &mut self,
        name: &str,
        deps: &[u64],
        kind: CollectiveCommType,
        bytes: i64,
        pg: Option<&str>,
    ) -> u64 {
        let mut a = vec![
            attr("is_cpu_op", Value::BoolVal(false)),
            attr("comm_type", Value::Int64Val(kind as i64)),
            attr("comm_size", Value::Int64Val(bytes)),
        ];
        if let Some(pg) = pg {
            a.push(attr("pg_name", Value::StringVal(pg.into())));
        }
        self.node(name, NodeType::CommCollNode, deps, 0, a)
    }

    /// A send to `peer` (`send`) or a receive from `peer`.
    pub fn p2p(
        &mut self,
        name: &str,
        deps: &[u64],
        send: bool,
        peer: i64,
        bytes: i64,
        tag: i64,
    ) -> u64 {
        let (kind, key) = if send {
            (NodeType::CommSendNode, "comm_dst")
        } else {
            (NodeType::CommRecvNode, "comm_src")
        };
        let a = vec![
            attr(key, Value::Int64Val(peer)),
            attr("comm_size", Value::Int64Val(bytes)),
            attr("comm_tag", Value::Int64Val(tag)),
        ];
        self.node(name, kind, deps, 0, a)
    }

    /// The file's bytes, uncompressed.
    pub fn encode(&self) -> Vec<u8> {
        let mut out = Vec::new();
        let meta = GlobalMetadata {
            version: self.version.clone(),
            attr: vec![],
        };
        meta.encode_length_delimited(&mut out)
            .expect("a Vec grows as needed");
        for n in &self.nodes {
            n.encode_length_delimited(&mut out)
                .expect("a Vec grows as needed");
        }
        out
    }

    /// Writes the trace, gzip-compressed when `path` ends in `.gz`.
    pub fn write(&self, path: &Path) -> std::io::Result<()> {
        let bytes = self.encode();
        if path.extension().is_some_and(|e| e == "gz") {
            let f = std::fs::File::create(path)?;
            let mut z = flate2::write::GzEncoder::new(f, flate2::Compression::default());
            z.write_all(&bytes)?;
            z.finish()?;
            Ok(())
        } else {
            std::fs::write(path, bytes)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_written_trace_reads_back_gzipped_or_not() {
        let mut t = Trace::new("0.0.4");
        let k = t.kernel("k", &[], 5);
        let c = t.collective("ar", &[k], CollectiveCommType::AllReduce, 64, Some("dp"));
        t.p2p("s", &[c], true, 1, 8, 3);
        let dir = tempfile::tempdir().unwrap();
        for name in ["t.0.et", "t.0.et.gz"] {
            let p = dir.path().join(name);
            t.write(&p).unwrap();
            let et = crate::EtFile::read(&p).unwrap();
            assert_eq!(et.version, "0.0.4");
            assert_eq!(et.nodes.len(), 3);
            assert_eq!(et.nodes[1].data_deps, vec![0]);
            assert_eq!(et.nodes[1].string("pg_name"), Some("dp"));
            assert_eq!(et.nodes[2].int("comm_dst"), Some(1));
        }
    }
}
