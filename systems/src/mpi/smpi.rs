//! SimGrid's own time-independent traces, as `smpirun -trace-ti` writes them (SimGrid 3.32):
//! SMPI's datatype numbering, the collectives hetsim has no algorithm for (gather, scatter and
//! the v-variants), expanded into their linear point-to-point form, and the writer of SMPI's
//! dialect that `hetsim convert` uses.
//!
//! SMPI writes one file per rank, listed by an index file; a line is `RANK ACTION ARGS`,
//! counts in elements of a datatype given by its SMPI id (`0 irecv 16 1024 1089 0` receives
//! 1,089 doubles from rank 16 with tag 1024). Without an id the count is in the rank's
//! default datatype: bytes, or doubles after an `init` with an argument (SMPI's rule).

use super::program::{Loc, Op};

/// SMPI's predefined datatype ids (smpi_datatype.cpp) and their sizes on x86-64 / POWER
/// Linux (LP64): (id, name, bytes).
const DATATYPES: [(u32, &str, f64); 52] = [
    (0, "MPI_DOUBLE", 8.0),
    (1, "MPI_INT", 4.0),
    (2, "MPI_CHAR", 1.0),
    (3, "MPI_SHORT", 2.0),
    (4, "MPI_LONG", 8.0),
    (5, "MPI_FLOAT", 4.0),
    (6, "MPI_BYTE", 1.0),
    (7, "MPI_LONG_LONG", 8.0),
    (8, "MPI_SIGNED_CHAR", 1.0),
    (9, "MPI_UNSIGNED_CHAR", 1.0),
    (10, "MPI_UNSIGNED_SHORT", 2.0),
    (11, "MPI_UNSIGNED", 4.0),
    (12, "MPI_UNSIGNED_LONG", 8.0),
    (13, "MPI_UNSIGNED_LONG_LONG", 8.0),
    (14, "MPI_LONG_DOUBLE", 16.0),
    (15, "MPI_WCHAR", 4.0),
    (16, "MPI_C_BOOL", 1.0),
    (17, "MPI_INT8_T", 1.0),
    (18, "MPI_INT16_T", 2.0),
    (19, "MPI_INT32_T", 4.0),
    (20, "MPI_INT64_T", 8.0),
    (21, "MPI_UINT8_T", 1.0),
    (22, "MPI_UINT16_T", 2.0),
    (23, "MPI_UINT32_T", 4.0),
    (24, "MPI_UINT64_T", 8.0),
    (25, "MPI_C_FLOAT_COMPLEX", 8.0),
    (26, "MPI_C_DOUBLE_COMPLEX", 16.0),
    (27, "MPI_C_LONG_DOUBLE_COMPLEX", 32.0),
    (28, "MPI_AINT", 8.0),
    (29, "MPI_OFFSET", 8.0),
    (30, "MPI_FLOAT_INT", 8.0),
    (31, "MPI_LONG_INT", 16.0),
    (32, "MPI_DOUBLE_INT", 16.0),
    (33, "MPI_SHORT_INT", 8.0),
    (34, "MPI_2INT", 8.0),
    (35, "MPI_2FLOAT", 8.0),
    (36, "MPI_2DOUBLE", 16.0),
    (37, "MPI_2LONG", 16.0),
    (38, "MPI_REAL", 4.0),
    (39, "MPI_REAL4", 4.0),
    (40, "MPI_REAL8", 8.0),
    (41, "MPI_REAL16", 16.0),
    (42, "MPI_COMPLEX8", 8.0),
    (43, "MPI_COMPLEX16", 16.0),
    (44, "MPI_COMPLEX32", 16.0),
    (45, "MPI_INTEGER1", 4.0),
    (46, "MPI_INTEGER2", 2.0),
    (47, "MPI_INTEGER4", 4.0),
    (48, "MPI_INTEGER8", 8.0),
    (49, "MPI_INTEGER16", 16.0),
    (50, "MPI_LONG_DOUBLE_INT", 32.0),
    // SimGrid 3.32 numbers MPI_PACKED 57 (recorded with smpirun -trace-ti).
    (57, "MPI_PACKED", 1.0),
];

/// SMPI's id of MPI_BYTE, what `hetsim convert` counts in.
pub const BYTE: u32 = 6;

/// The size in bytes of SMPI datatype `id`.
pub fn datatype_size(id: &str) -> Result<f64, String> {
    let n: i64 = id
        .parse()
        .map_err(|_| format!("datatype `{id}` is not an SMPI datatype id (a number)"))?;
    DATATYPES
        .iter()
        .find(|d| d.0 as i64 == n)
        .map(|d| d.2)
        .ok_or_else(|| {
            format!("datatype id {n} is not one SimGrid 3.32 predefines (0-50, 57); derived datatypes are not replayable")
        })
}

/// Tags of the point-to-point steps of a rank's k-th expanded collective: below every user
/// tag and every collective tag of [`super::collectives::coll_tag`].
pub fn expanded_tag(k: u64) -> i64 {
    -(1i64 << 48) - k as i64
}

/// Whether a tag belongs to an expanded collective (whose buffers follow the collectives'
/// setting).
pub fn is_expanded_tag(tag: i64) -> bool {
    tag <= -(1i64 << 48)
}

/// Posts `sends` (peer, bytes) and `recvs` (peer, bytes), then waits for each: the linear
/// algorithm of gather, scatter and the v-collectives (every exchange at once).
pub fn exchange(sends: &[(u32, f64)], recvs: &[(u32, f64)], tag: i64) -> Vec<Op> {
    let mut ops = Vec::with_capacity(2 * (sends.len() + recvs.len()));
    for &(src, bytes) in recvs {
        ops.push(Op::Irecv {
            src: src as i64,
            tag,
            bytes,
            loc: Loc::Device,
        });
    }
    for &(dst, bytes) in sends {
        ops.push(Op::Isend {
            dst,
            tag,
            bytes,
            loc: Loc::Device,
        });
    }
    for &(src, _) in recvs {
        ops.push(Op::WaitFor {
            send: false,
            peer: src as i64,
            tag,
        });
    }
    for &(dst, _) in sends {
        ops.push(Op::WaitFor {
            send: true,
            peer: dst as i64,
            tag,
        });
    }
    ops
}

/// Rank `me`'s steps of a rooted linear collective: every rank but the root sends its
/// `bytes[r]` to the root (gather), or receives it from the root (scatter).
pub fn rooted(me: u32, root: u32, bytes: &[f64], to_root: bool, tag: i64) -> Vec<Op> {
    let others: Vec<(u32, f64)> = (0..bytes.len() as u32)
        .filter(|&r| r != root)
        .map(|r| (r, bytes[r as usize]))
        .collect();
    let mine = [(root, bytes[me as usize])];
    match (me == root, to_root) {
        (true, true) => exchange(&[], &others, tag),
        (true, false) => exchange(&others, &[], tag),
        (false, true) => exchange(&mine, &[], tag),
        (false, false) => exchange(&[], &mine, tag),
    }
}

/// Rank `me`'s steps of an all-to-all exchange of `send[r]` bytes to and `recv[r]` from
/// every other rank r (alltoallv; allgatherv sends the same to all).
pub fn all_to_all(me: u32, send: &[f64], recv: &[f64], tag: i64) -> Vec<Op> {
    let peers = |v: &[f64]| -> Vec<(u32, f64)> {
        (0..v.len() as u32)
            .filter(|&r| r != me)
            .map(|r| (r, v[r as usize]))
            .collect()
    };
    exchange(&peers(send), &peers(recv), tag)
}

/// A rank's program in SMPI's dialect (counts of MPI_BYTE), as `smpirun -replay` reads it.
/// Buffer locations are not part of SMPI's format and are dropped.
pub fn write_rank(rank: u32, ops: &[Op], ranks: u32) -> Result<String, String> {
    use super::program::Coll;
    use std::fmt::Write;
    let b = BYTE;
    let mut out = format!("{rank} init\n");
    for op in ops {
        let line = match *op {
            Op::Compute { flops } => format!("compute {flops}"),
            Op::Sleep { secs } => format!("sleep {secs}"),
            Op::Send {
                dst, tag, bytes, ..
            } => format!("send {dst} {tag} {bytes} {b}"),
            Op::Isend {
                dst, tag, bytes, ..
            } => format!("isend {dst} {tag} {bytes} {b}"),
            Op::Recv {
                src, tag, bytes, ..
            } => format!("recv {src} {tag} {bytes} {b}"),
            Op::Irecv {
                src, tag, bytes, ..
            } => format!("irecv {src} {tag} {bytes} {b}"),
            Op::WaitFor {
                send: true,
                peer,
                tag,
            } => format!("wait {rank} {peer} {tag}"),
            Op::WaitFor {
                send: false,
                peer,
                tag,
            } => format!("wait {peer} {rank} {tag}"),
            Op::Waitall => "waitall".to_string(),
            Op::Coll(Coll::Barrier) => "barrier".to_string(),
            Op::Coll(Coll::Bcast { bytes, root }) => format!("bcast {bytes} {root} {b}"),
            Op::Coll(Coll::Reduce { bytes, flops, root }) => {
                format!("reduce {bytes} {flops} {root} {b}")
            }
            Op::Coll(Coll::Allreduce { bytes, flops }) => format!("allreduce {bytes} {flops} {b}"),
            Op::Coll(Coll::Allgather { bytes }) => format!("allgather {bytes} {bytes} {b} {b}"),
            Op::Coll(Coll::Alltoall { bytes }) => format!("alltoall {bytes} {bytes} {b} {b}"),
            Op::Coll(Coll::ReduceScatter { bytes, flops }) => {
                // Counts per rank summing to the vector: the remainder goes to the first ranks.
                let (per, extra) = ((bytes / ranks as f64).floor(), bytes % ranks as f64);
                let counts: Vec<String> = (0..ranks)
                    .map(|r| (per + if (r as f64) < extra { 1.0 } else { 0.0 }).to_string())
                    .collect();
                format!("reducescatter {} {flops} {b}", counts.join(" "))
            }
            ref other => {
                return Err(format!(
                    "rank {rank}: `{}` has no form in SimGrid's time-independent traces",
                    other.name()
                ));
            }
        };
        let _ = writeln!(out, "{rank} {line}");
    }
    let _ = writeln!(out, "{rank} finalize");
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn smpi_ids_have_their_c_sizes() {
        // smpirun -trace-ti wrote these ids for MPI_DOUBLE, MPI_INT, MPI_CHAR, MPI_LONG,
        // MPI_FLOAT, MPI_BYTE, MPI_2INT.
        for (id, size) in [
            ("0", 8.0),
            ("1", 4.0),
            ("2", 1.0),
            ("4", 8.0),
            ("5", 4.0),
            ("6", 1.0),
            ("34", 8.0),
        ] {
            assert_eq!(datatype_size(id).unwrap(), size, "{id}");
        }
        assert!(datatype_size("-1").unwrap_err().contains("derived"));
        assert!(datatype_size("x").is_err());
    }

    #[test]
    fn a_linear_gather_sends_to_the_root_and_the_root_waits_for_everyone() {
        let t = expanded_tag(0);
        let root = rooted(1, 1, &[10.0, 20.0, 30.0], true, t);
        assert_eq!(root.len(), 4, "{root:?}");
        assert!(matches!(root[0], Op::Irecv { src: 0, bytes, .. } if bytes == 10.0));
        assert!(matches!(root[1], Op::Irecv { src: 2, bytes, .. } if bytes == 30.0));
        let leaf = rooted(2, 1, &[10.0, 20.0, 30.0], true, t);
        assert!(matches!(leaf[0], Op::Isend { dst: 1, bytes, .. } if bytes == 30.0));
        assert!(matches!(
            leaf[1],
            Op::WaitFor {
                send: true,
                peer: 1,
                ..
            }
        ));
    }

    #[test]
    fn expanded_tags_are_below_collective_tags() {
        assert!(is_expanded_tag(expanded_tag(3)));
        assert!(!is_expanded_tag(super::super::collectives::coll_tag(
            1 << 40
        )));
    }

    #[test]
    fn a_reduce_scatter_is_written_as_counts_summing_to_the_vector() {
        let ops = [Op::Coll(super::super::program::Coll::ReduceScatter {
            bytes: 10.0,
            flops: 0.0,
        })];
        let text = write_rank(0, &ops, 4).unwrap();
        assert!(text.contains("0 reducescatter 3 3 2 2 0 6"), "{text}");
    }
}
