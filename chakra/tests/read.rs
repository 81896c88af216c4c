//! The reader on traces written here with the schema's messages (hand-computed figures), on
//! broken ones (errors name the file, the node and what is wrong), and on the reference
//! traces of `../shared/reference/chakra/` (the figures their README gives), read in place.

use std::io::Write;
use std::path::{Path, PathBuf};

use chakra::proto::{self, AttributeProto, GlobalMetadata, Value};
use chakra::{EtFile, NodeType};
use prost::Message;

fn attr(name: &str, value: Value) -> AttributeProto {
    AttributeProto {
        name: name.into(),
        doc_string: String::new(),
        value: Some(value),
    }
}

fn node(
    id: u64,
    kind: NodeType,
    deps: &[u64],
    micros: u64,
    attrs: Vec<AttributeProto>,
) -> proto::Node {
    proto::Node {
        id,
        name: format!("n{id}"),
        r#type: kind as i32,
        data_deps: deps.to_vec(),
        duration_micros: micros,
        attr: attrs,
        ..Default::default()
    }
}

/// A diamond: 1 -> {2 (CPU, 5 us), 3 (kernel, 30 us)} -> 4 (allreduce of 1 MiB, 7 us),
/// then 5 (kernel, 2 us): the longest path is 1 + 3 + 4 + 5 = 10 + 30 + 7 + 2 = 49 us.
fn trace() -> Vec<u8> {
    let mut out = Vec::new();
    let meta = GlobalMetadata {
        version: "0.0.4".into(),
        attr: vec![attr("schema", Value::StringVal("hetsim-test".into()))],
    };
    meta.encode_length_delimited(&mut out).unwrap();
    let nodes = [
        node(1, NodeType::CompNode, &[], 10, vec![]),
        node(
            2,
            NodeType::CompNode,
            &[1],
            5,
            vec![attr("is_cpu_op", Value::BoolVal(true))],
        ),
        node(
            3,
            NodeType::CompNode,
            &[1],
            30,
            vec![attr("is_cpu_op", Value::BoolVal(false))],
        ),
        node(
            4,
            NodeType::CommCollNode,
            &[2, 3],
            7,
            vec![
                attr("comm_type", Value::Int64Val(0)),
                attr("comm_size", Value::Int64Val(1 << 20)),
                attr("pg_name", Value::StringVal("0".into())),
            ],
        ),
        node(5, NodeType::CompNode, &[4], 2, vec![]),
    ];
    for n in nodes {
        n.encode_length_delimited(&mut out).unwrap();
    }
    out
}

fn write(dir: &Path, name: &str, bytes: &[u8]) -> PathBuf {
    let p = dir.join(name);
    std::fs::write(&p, bytes).unwrap();
    p
}

#[test]
fn a_written_trace_reads_back_with_its_figures() {
    let tmp = tempfile::tempdir().unwrap();
    let tmp = tmp.path();
    let plain = write(tmp, "t.0.et", &trace());
    let mut gz = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::fast());
    gz.write_all(&trace()).unwrap();
    let zipped = write(tmp, "t.1.et.gz", &gz.finish().unwrap());
    for p in [plain, zipped] {
        let et = EtFile::read(&p).unwrap();
        assert_eq!(et.version, "0.0.4");
        assert_eq!(et.nodes.len(), 5);
        assert_eq!(et.nodes[3].comm_size(), Some(1 << 20));
        let s = chakra::stats::stats(&et).unwrap();
        assert_eq!(s.kernels, (3, 42));
        assert_eq!(s.cpu_ops, (1, 5));
        assert_eq!(
            s.collectives[&("ALL_REDUCE".to_string(), "0".to_string())],
            (1, 1 << 20, 1 << 20, 7)
        );
        assert_eq!(s.critical_path, (49, 4));
    }
}

#[test]
fn broken_traces_name_the_file_and_the_node() {
    let tmp = tempfile::tempdir().unwrap();
    let tmp = tmp.path();
    let good = trace();
    let cut = write(tmp, "cut.0.et", &good[..good.len() - 3]);
    let e = EtFile::read(&cut).unwrap_err().to_string();
    assert!(
        e.contains("cut.0.et, node 4") && e.contains("truncated"),
        "{e}"
    );
    // A length prefix that runs past the end, then bytes that are no message.
    let mut garbled = good.clone();
    let at = garbled.len() - 20;
    garbled[at..].fill(0xff);
    let e = EtFile::read(write(tmp, "bad.0.et", &garbled))
        .unwrap_err()
        .to_string();
    assert!(e.contains("bad.0.et, node"), "{e}");
    let e = EtFile::read(write(tmp, "empty.0.et", &[]))
        .unwrap_err()
        .to_string();
    assert!(e.contains("metadata: the file is empty"), "{e}");
}

#[test]
fn the_reference_training_step_holds_what_its_readme_says() {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../shared/reference/chakra");
    let real = dir.join("real/chakra.0.et.gz");
    if !real.exists() {
        eprintln!("skipped: {} is not there", real.display());
        return;
    }
    // ../shared/reference/chakra/README.md: 3,643 COMP_NODEs (1,209 GPU kernels, 292,828 us;
    // 2,434 CPU ops, 50,941 us), 21 COMM_COLL_NODEs (5 ALL_REDUCE up to 31,502,336 B and 2
    // BROADCAST, 36,715 us; 14 CPU-side without comm_type, 1,311 us); longest path through
    // data_deps 46,140 us.
    let s = chakra::stats::stats(&EtFile::read(&real).unwrap()).unwrap();
    assert_eq!(s.nodes["COMP_NODE"], 3643);
    assert_eq!(s.nodes["COMM_COLL_NODE"], 21);
    assert_eq!(s.kernels, (1209, 292_828));
    assert_eq!(s.cpu_ops, (2434, 50_941));
    let all = &s.collectives[&("ALL_REDUCE".to_string(), String::new())];
    let bcast = &s.collectives[&("BROADCAST".to_string(), String::new())];
    assert_eq!((all.0, all.2), (5, 31_502_336));
    assert_eq!(bcast.0, 2);
    assert_eq!(all.3 + bcast.3, 36_715);
    assert_eq!(
        s.collectives[&("host op".to_string(), String::new())].3,
        1311
    );
    assert_eq!(s.critical_path.0, 46_140);
    // The custom ring allreduce: 7 ring steps of 128 KiB each way per rank.
    let ring = dir.join("astra-sim-examples/system/custom_collectives/custom_ring_allreduce_8npus_1MB/custom_allreduce.0.et");
    let s = chakra::stats::stats(&EtFile::read(&ring).unwrap()).unwrap();
    assert_eq!(s.p2p, (28, 28 * 131072));
}

proptest::proptest! {
    /// Any damage to a trace (a byte changed, the file cut short) reads as a trace or as an
    /// error naming the file; never a panic.
    #[test]
    fn damaged_traces_read_or_fail_cleanly(at in 0usize..4096, byte in 0u8..=255, cut in proptest::bool::ANY) {
        let mut bytes = trace();
        let at = at % bytes.len();
        if cut {
            bytes.truncate(at);
        } else {
            bytes[at] = byte;
        }
        let dir = tempfile::tempdir().unwrap();
        let p = write(dir.path(), "d.0.et", &bytes);
        if let Err(e) = EtFile::read(&p) {
            proptest::prop_assert!(e.to_string().contains("d.0.et"), "{}", e);
        }
    }
}
