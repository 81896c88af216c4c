//! The SimGrid time-independent (TI) trace grammar rank programs are read from: hetsim's, and
//! SMPI's own as `smpirun -trace-ti` writes it (see [`super::smpi`]), one superset.
//!
//! Accepted grammar, one action per line (blank lines and lines starting with `#` skipped):
//!
//! ```text
//! RANK init | finalize                      (ignored)
//! RANK compute FLOPS                        (at the rank's GPU peak speed)
//! RANK sleep SECONDS
//! RANK send DST [TAG] BYTES [LOC]           LOC = host | device (default device)
//! RANK isend DST [TAG] BYTES [LOC]
//! RANK recv SRC [TAG] BYTES [LOC]           SRC may be -1 (any source); TAG -1 any tag
//! RANK irecv SRC [TAG] BYTES [LOC]
//! RANK wait                                 (the rank's most recent outstanding request)
//! RANK waitall                              (every outstanding request)
//! RANK sendrecv DST SBYTES SRC RBYTES [LOC]
//! RANK barrier
//! RANK bcast BYTES [ROOT]
//! RANK reduce BYTES COMP_FLOPS [ROOT]
//! RANK allreduce BYTES COMP_FLOPS
//! RANK allgather SEND_BYTES RECV_BYTES      (RECV_BYTES per rank)
//! RANK alltoall SEND_BYTES RECV_BYTES       (per destination)
//! RANK reducescatter BYTES COMP_FLOPS       (BYTES = the whole vector)
//! RANK nccl_allreduce BYTES                 NCCL over every rank's GPU; BYTES = the buffer
//! RANK nccl_bcast BYTES [ROOT]              (count x type size; the whole gathered buffer
//! RANK nccl_reduce BYTES [ROOT]              for allgather and reducescatter, what each
//! RANK nccl_allgather BYTES                  rank sends in all for alltoall)
//! RANK nccl_reducescatter BYTES
//! RANK nccl_alltoall BYTES
//! ```
//!
//! SMPI's forms are read too: counts followed by an SMPI datatype id (`send DST TAG COUNT
//! TYPE`, `bcast COUNT ROOT TYPE` ...), `init TYPE` (doubles by default), `wait SRC DST TAG`,
//! `sendRecv SCOUNT DST RCOUNT SRC [STYPE RTYPE]`, `reducescatter RCOUNTS.. FLOPS [TYPE]`,
//! `gather`, `scatter`, `gatherv`, `scatterv`, `allgatherv`, `alltoallv` (replayed as their
//! linear point-to-point exchanges), `test` (nothing).
//!
//! RANK is a number, optionally written `pN` or `rankN` as some tools do. Sizes are bytes
//! (numbers, `1e6` allowed). A trace is one file with every rank's lines, or one file per
//! rank (file i holds rank i's lines; their RANK field must say i).

use super::program::{ANY, Coll, Loc, Op, Program, Step};

/// How many ranks trace texts are for: one per file when there are several, else the
/// largest RANK field of the one file plus one.
pub fn trace_ranks(texts: &[(String, String)]) -> Result<u32, String> {
    if texts.len() > 1 {
        return Ok(texts.len() as u32);
    }
    let mut ranks = 0;
    for (label, text) in texts {
        for (n, line) in text.lines().enumerate() {
            let line = line.trim();
            if line.is_empty() || line.starts_with('#') {
                continue;
            }
            let r = rank_of(line.split_whitespace().next(), "rank", u32::MAX, false)
                .map_err(|e| format!("{label}:{}: {e}: `{line}`", n + 1))?;
            ranks = ranks.max(r as u32 + 1);
        }
    }
    if ranks == 0 {
        return Err("the trace has no action line".into());
    }
    Ok(ranks)
}

/// Reads TI trace texts into one program per rank; errors name the file and line. Buffers
/// are on the GPU where a line does not say.
pub fn parse_traces(texts: &[(String, String)], ranks: u32) -> Result<Vec<Program>, String> {
    parse_traces_with(texts, ranks, Loc::Device)
}

/// As [`parse_traces`], with buffers at `default` where a line does not say.
pub fn parse_traces_with(
    texts: &[(String, String)],
    ranks: u32,
    default: Loc,
) -> Result<Vec<Program>, String> {
    let mut programs: Vec<Program> = (0..ranks)
        .map(|r| Program {
            source: std::sync::Arc::from(if texts.len() > 1 {
                texts[r as usize % texts.len()].0.as_str()
            } else {
                texts.first().map_or("trace", |t| t.0.as_str())
            }),
            steps: Vec::new(),
            repeat: 1,
        })
        .collect();
    let per_rank = texts.len() > 1;
    if per_rank && texts.len() != ranks as usize {
        return Err(format!(
            "{} trace files for {ranks} ranks: give one file, or one per rank",
            texts.len()
        ));
    }
    let mut ctx = vec![RankCtx::default(); ranks as usize];
    for (i, (label, text)) in texts.iter().enumerate() {
        for (n, line) in text.lines().enumerate() {
            // Where the line is, formatted only for an error.
            let at = || format!("{label}:{}", n + 1);
            let line = line.trim();
            if line.is_empty() || line.starts_with('#') {
                continue;
            }
            let (rank, ops) = parse_line(line, ranks, default, &mut ctx)
                .map_err(|e| format!("{}: {e}: `{line}`", at()))?;
            if per_rank && rank != i as u32 {
                return Err(format!(
                    "{}: this is rank {i}'s file but the line is for rank {rank}",
                    at()
                ));
            }
            for op in ops {
                programs[rank as usize].steps.push(Step {
                    op,
                    line: n as u32 + 1,
                });
            }
        }
    }
    Ok(programs)
}

fn number(word: Option<&str>, what: &str) -> Result<f64, String> {
    let w = word.ok_or_else(|| format!("missing {what}"))?;
    let v: f64 = w
        .parse()
        .map_err(|_| format!("{what} `{w}` is not a number"))?;
    if !v.is_finite() || v < 0.0 {
        return Err(format!("{what} `{w}` must be a non-negative number"));
    }
    Ok(v)
}

fn rank_of(word: Option<&str>, what: &str, ranks: u32, any: bool) -> Result<i64, String> {
    let w = word.ok_or_else(|| format!("missing {what}"))?;
    let digits = w.trim_start_matches("rank").trim_start_matches('p');
    let r: i64 = digits
        .parse()
        .map_err(|_| format!("{what} `{w}` is not a rank"))?;
    if any && r == ANY {
        return Ok(ANY);
    }
    if r < 0 || r >= ranks as i64 {
        return Err(format!("{what} {r} is not a rank (0..{})", ranks - 1));
    }
    Ok(r)
}

/// Parses `[TAG] COUNT [DATATYPE] [LOC]` (what follows a peer): a count of `unit` bytes, or
/// of an SMPI datatype.
fn tag_bytes_loc(rest: &[&str], unit: f64, default: Loc) -> Result<(i64, f64, Loc), String> {
    let (loc, rest) = match rest.last() {
        Some(&"host") => (Loc::Host, &rest[..rest.len() - 1]),
        Some(&"device") => (Loc::Device, &rest[..rest.len() - 1]),
        _ => (default, rest),
    };
    let tag_of = |tag: &str| -> Result<i64, String> {
        tag.parse()
            .map_err(|_| format!("tag `{tag}` is not a number"))
    };
    match rest {
        [bytes] => Ok((0, number(Some(bytes), "size")? * unit, loc)),
        [tag, bytes] => Ok((tag_of(tag)?, number(Some(bytes), "size")? * unit, loc)),
        [tag, count, datatype] => Ok((
            tag_of(tag)?,
            number(Some(count), "count")? * super::smpi::datatype_size(datatype)?,
            loc,
        )),
        [] => Err("missing size".into()),
        _ => Err("too many fields".into()),
    }
}

/// A rank's reading state: the unit of counts without a datatype (bytes; doubles after an
/// SMPI `init` with an argument), and how many collectives it expanded so far.
#[derive(Debug, Clone, Copy)]
struct RankCtx {
    unit: f64,
    expanded: u64,
}

impl Default for RankCtx {
    fn default() -> Self {
        RankCtx {
            unit: 1.0,
            expanded: 0,
        }
    }
}

fn parse_line(
    line: &str,
    ranks: u32,
    loc: Loc,
    ctx: &mut [RankCtx],
) -> Result<(u32, Vec<Op>), String> {
    let words: Vec<&str> = line.split_whitespace().collect();
    let rank = rank_of(words.first().copied(), "rank", ranks, false)? as u32;
    let original = *words.get(1).ok_or("missing action")?;
    let action = original.to_ascii_lowercase();
    let me = &mut ctx[rank as usize];
    let f = Fields {
        action: &action,
        args: &words[2..],
        ranks,
        unit: me.unit,
        me: rank,
        loc,
    };
    let op = match f.action {
        "init" => {
            // SMPI: an `init` with an argument makes doubles the default datatype.
            if !f.args.is_empty() {
                me.unit = 8.0;
            }
            None
        }
        "finalize" | "comm_size" | "comm_split" | "comm_dup" | "test" => None,
        "compute" => {
            f.at_most(1)?;
            Some(Op::Compute {
                flops: number(f.arg(0), "flops")?,
            })
        }
        "sleep" => {
            f.at_most(1)?;
            Some(Op::Sleep {
                secs: number(f.arg(0), "seconds")?,
            })
        }
        "sendrecv" if original == "sendRecv" => Some(smpi_sendrecv(&f)?),
        "send" | "isend" | "recv" | "irecv" | "sendrecv" | "wait" | "waitall" => {
            Some(point_to_point(&f)?)
        }
        "gather" | "scatter" | "gatherv" | "scatterv" | "alltoallv" | "allgatherv"
            if expands(&f) =>
        {
            let tag = super::smpi::expanded_tag(me.expanded);
            me.expanded += 1;
            return Ok((rank, expanded(&f, tag)?));
        }
        nccl if nccl.starts_with("nccl_") => Some(nccl_call(&f, &nccl[5..])?),
        _ => Some(Op::Coll(collective(&f)?)),
    };
    Ok((rank, op.into_iter().collect()))
}

/// Whether a v-collective line is SMPI's (per-rank counts, expanded into point-to-point),
/// not hetsim's `allgatherv SEND RECV` (an allgather).
fn expands(f: &Fields) -> bool {
    let p = f.ranks as usize;
    match f.action {
        "allgatherv" => p > 1 && (f.args.len() == p + 1 || f.args.len() == p + 3),
        _ => true,
    }
}

/// SMPI's gather, scatter and v-collectives as their linear point-to-point exchange.
fn expanded(f: &Fields, tag: i64) -> Result<Vec<Op>, String> {
    use super::smpi::{all_to_all, rooted};
    let p = f.ranks as usize;
    Ok(match f.action {
        "gather" | "scatter" => {
            f.at_most(5)?;
            let (sc, rc) = (
                number(f.arg(0), "send count")?,
                number(f.arg(1), "receive count")?,
            );
            let root = f.root(2)?;
            let (st, rt) = f.types(3)?;
            let to_root = f.action == "gather";
            let each = if to_root { sc * st } else { rc * rt };
            rooted(f.me, root, &vec![each; p], to_root, tag)
        }
        "gatherv" | "scatterv" => {
            // gatherv SEND RECV_COUNTS.. ROOT [TYPES]; scatterv SEND_COUNTS.. RECV ROOT [TYPES]
            f.at_most(p + 4)?;
            let to_root = f.action == "gatherv";
            let (counts_at, mine_at) = if to_root { (1, 0) } else { (0, p) };
            let counts = f.counts(counts_at, p, "count")?;
            let mine = number(f.arg(mine_at), "count")?;
            let root = f.root(p + 1)?;
            let (st, rt) = f.types(p + 2)?;
            let (theirs, own) = if to_root { (rt, st) } else { (st, rt) };
            let mut bytes: Vec<f64> = counts.iter().map(|c| c * theirs).collect();
            bytes[f.me as usize] = mine * own;
            rooted(f.me, root, &bytes, to_root, tag)
        }
        "allgatherv" => {
            f.at_most(p + 3)?;
            let sc = number(f.arg(0), "send count")?;
            let rcs = f.counts(1, p, "receive count")?;
            let (st, rt) = f.types(p + 1)?;
            let recv: Vec<f64> = rcs.iter().map(|c| c * rt).collect();
            all_to_all(f.me, &vec![sc * st; p], &recv, tag)
        }
        _ => {
            // alltoallv SEND_SIZE SEND_COUNTS.. RECV_SIZE RECV_COUNTS.. [STYPE RTYPE]
            f.at_most(2 * p + 4)?;
            number(f.arg(0), "send buffer size")?;
            let scs = f.counts(1, p, "send count")?;
            number(f.arg(p + 1), "receive buffer size")?;
            let rcs = f.counts(p + 2, p, "receive count")?;
            let (st, rt) = f.types(2 * p + 2)?;
            let send: Vec<f64> = scs.iter().map(|c| c * st).collect();
            let recv: Vec<f64> = rcs.iter().map(|c| c * rt).collect();
            all_to_all(f.me, &send, &recv, tag)
        }
    })
}

/// SMPI's `sendRecv SEND_COUNT DST RECV_COUNT SRC [SEND_TYPE RECV_TYPE]`.
fn smpi_sendrecv(f: &Fields) -> Result<Op, String> {
    f.at_most(6)?;
    let (st, rt) = match (f.arg(4), f.arg(5)) {
        (Some(s), Some(r)) => (
            super::smpi::datatype_size(s)?,
            super::smpi::datatype_size(r)?,
        ),
        (None, None) => (f.unit, f.unit),
        _ => return Err("give both datatypes, or neither".into()),
    };
    Ok(Op::Sendrecv {
        sbytes: number(f.arg(0), "send count")? * st,
        dst: rank_of(f.arg(1), "destination", f.ranks, false)? as u32,
        rbytes: number(f.arg(2), "receive count")? * rt,
        src: rank_of(f.arg(3), "source", f.ranks, true)?,
        loc: f.loc,
    })
}

/// A line's action and the fields after it, for a program of `ranks` ranks.
struct Fields<'a> {
    action: &'a str,
    args: &'a [&'a str],
    ranks: u32,
    /// The size of a count without a datatype.
    unit: f64,
    /// The line's rank.
    me: u32,
    /// Where buffers are when the line does not say.
    loc: Loc,
}

impl Fields<'_> {
    fn arg(&self, i: usize) -> Option<&str> {
        self.args.get(i).copied()
    }

    /// A root rank in field `i`, rank 0 when it is left out.
    fn root(&self, i: usize) -> Result<u32, String> {
        match self.arg(i) {
            Some(_) => Ok(rank_of(self.arg(i), "root", self.ranks, false)? as u32),
            None => Ok(0),
        }
    }

    fn at_most(&self, n: usize) -> Result<(), String> {
        if self.args.len() > n {
            Err(format!("`{}` takes at most {n} fields", self.action))
        } else {
            Ok(())
        }
    }

    /// The tag, size and buffer location after field 0.
    fn tag_bytes_loc(&self) -> Result<(i64, f64, Loc), String> {
        tag_bytes_loc(self.args.get(1..).unwrap_or(&[]), self.unit, self.loc)
    }

    /// `n` counts from field `from` on.
    fn counts(&self, from: usize, n: usize, what: &str) -> Result<Vec<f64>, String> {
        (from..from + n)
            .map(|i| number(self.arg(i), what))
            .collect()
    }

    /// Trailing SMPI datatype ids from field `at`: the send and receive types' sizes (one id
    /// for both, or the default unit when there is none).
    fn types(&self, at: usize) -> Result<(f64, f64), String> {
        use super::smpi::datatype_size;
        match (self.arg(at), self.arg(at + 1)) {
            (None, _) => Ok((self.unit, self.unit)),
            (Some(s), Some(r)) => Ok((datatype_size(s)?, datatype_size(r)?)),
            (Some(s), None) => {
                let s = datatype_size(s)?;
                Ok((s, s))
            }
        }
    }

    /// A size: a count in field `i` times the datatype in field `t` (or the default unit).
    fn sized(&self, i: usize, t: usize, what: &str) -> Result<f64, String> {
        let unit = match self.arg(t) {
            Some(id) => super::smpi::datatype_size(id)?,
            None => self.unit,
        };
        Ok(number(self.arg(i), what)? * unit)
    }
}

/// send, isend, recv, irecv, sendrecv, wait, waitall.
fn point_to_point(f: &Fields) -> Result<Op, String> {
    let ranks = f.ranks;
    Ok(match f.action {
        "send" | "isend" => {
            let dst = rank_of(f.arg(0), "destination", ranks, false)? as u32;
            let (tag, bytes, loc) = f.tag_bytes_loc()?;
            if f.action == "send" {
                Op::Send {
                    dst,
                    tag,
                    bytes,
                    loc,
                }
            } else {
                Op::Isend {
                    dst,
                    tag,
                    bytes,
                    loc,
                }
            }
        }
        "recv" | "irecv" => {
            let src = rank_of(f.arg(0), "source", ranks, true)?;
            let (tag, bytes, loc) = f.tag_bytes_loc()?;
            if f.action == "recv" {
                Op::Recv {
                    src,
                    tag,
                    bytes,
                    loc,
                }
            } else {
                Op::Irecv {
                    src,
                    tag,
                    bytes,
                    loc,
                }
            }
        }
        "sendrecv" => sendrecv(f)?,
        "wait" if f.args.is_empty() => Op::Wait,
        "wait" => wait_for(f)?,
        _ => {
            f.at_most(1)?;
            Op::Waitall
        }
    })
}

/// SMPI's `wait SRC DST TAG`: the request between those ranks with that tag.
fn wait_for(f: &Fields) -> Result<Op, String> {
    f.at_most(3)?;
    let src = rank_of(f.arg(0), "source", f.ranks, true)?;
    let dst = rank_of(f.arg(1), "destination", f.ranks, false)?;
    let tag = f
        .arg(2)
        .ok_or("missing tag")?
        .parse::<i64>()
        .map_err(|_| "tag is not a number".to_string())?;
    let me = f.me as i64;
    match (src == me, dst == me) {
        (true, _) => Ok(Op::WaitFor {
            send: true,
            peer: dst,
            tag,
        }),
        (false, true) => Ok(Op::WaitFor {
            send: false,
            peer: src,
            tag,
        }),
        (false, false) => Err(format!(
            "rank {me} waits for a request between ranks {src} and {dst}"
        )),
    }
}

/// sendrecv: destination, send size, source, receive size, and the buffers' location.
fn sendrecv(f: &Fields) -> Result<Op, String> {
    let ranks = f.ranks;
    f.at_most(5)?;
    let loc = match f.arg(4) {
        None => f.loc,
        Some("device") => Loc::Device,
        Some("host") => Loc::Host,
        Some(w) => return Err(format!("buffer location `{w}` is not host or device")),
    };
    Ok(Op::Sendrecv {
        dst: rank_of(f.arg(0), "destination", ranks, false)? as u32,
        sbytes: number(f.arg(1), "send size")?,
        src: rank_of(f.arg(2), "source", ranks, true)?,
        rbytes: number(f.arg(3), "receive size")?,
        loc,
    })
}

/// An MPI collective, or the error of an unknown action. Counts are bytes, or elements of
/// the SMPI datatypes that end SMPI's lines.
fn collective(f: &Fields) -> Result<Coll, String> {
    let p = f.ranks as usize;
    Ok(match f.action {
        "barrier" => {
            f.at_most(0)?;
            Coll::Barrier
        }
        "bcast" => {
            // bcast COUNT [ROOT [TYPE]]
            f.at_most(3)?;
            Coll::Bcast {
                bytes: f.sized(0, 2, "size")?,
                root: f.root(1)?,
            }
        }
        "reduce" => {
            // reduce COUNT FLOPS [ROOT [TYPE]]
            f.at_most(4)?;
            Coll::Reduce {
                bytes: f.sized(0, 3, "size")?,
                flops: number(f.arg(1), "computation")?,
                root: f.root(2)?,
            }
        }
        "allreduce" => {
            // allreduce COUNT FLOPS [TYPE]
            f.at_most(3)?;
            Coll::Allreduce {
                bytes: f.sized(0, 2, "size")?,
                flops: number(f.arg(1), "computation")?,
            }
        }
        "allgather" | "allgatherv" => {
            // allgather SEND RECV [SEND_TYPE RECV_TYPE]: RECV per rank.
            f.at_most(4)?;
            f.sized(0, 2, "send size")?;
            Coll::Allgather {
                bytes: if f.arg(1).is_some() {
                    f.sized(1, 3, "receive size")?
                } else {
                    f.sized(0, 2, "receive size")?
                },
            }
        }
        "alltoall" => {
            // alltoall SEND RECV [SEND_TYPE RECV_TYPE]: SEND per destination.
            f.at_most(4)?;
            Coll::Alltoall {
                bytes: f.sized(0, 2, "send size")?,
            }
        }
        "reducescatter" | "reduce_scatter" if p > 1 && f.args.len() > 2 => smpi_reduce_scatter(f)?,
        "reducescatter" | "reduce_scatter" => {
            f.at_most(2)?;
            Coll::ReduceScatter {
                bytes: number(f.arg(0), "size")? * f.unit,
                flops: number(f.arg(1).or(Some("0")), "computation")?,
            }
        }
        other => return Err(format!("unknown action `{other}`")),
    })
}

/// SMPI's `reducescatter RECV_COUNTS.. FLOPS [TYPE]`: the vector is the counts' sum.
fn smpi_reduce_scatter(f: &Fields) -> Result<Coll, String> {
    let p = f.ranks as usize;
    f.at_most(p + 2)?;
    let unit = match f.arg(p + 1) {
        Some(t) => super::smpi::datatype_size(t)?,
        None => f.unit,
    };
    let counts = (0..p)
        .map(|i| number(f.arg(i), "receive count"))
        .collect::<Result<Vec<f64>, String>>()?;
    Ok(Coll::ReduceScatter {
        bytes: counts.iter().sum::<f64>() * unit,
        flops: number(f.arg(p), "computation")?,
    })
}

/// An NCCL collective (`nccl_<name>`): its size, and a root for broadcast and reduce.
fn nccl_call(f: &Fields, name: &str) -> Result<Op, String> {
    use hetsim_schema::cuda::Coll as N;
    let op = match name {
        "allreduce" => N::AllReduce,
        "bcast" | "broadcast" => N::Broadcast,
        "reduce" => N::Reduce,
        "allgather" => N::AllGather,
        "reducescatter" | "reduce_scatter" => N::ReduceScatter,
        "alltoall" => N::AllToAll,
        other => return Err(format!("unknown NCCL action `nccl_{other}`")),
    };
    let rooted = matches!(op, N::Broadcast | N::Reduce);
    f.at_most(if rooted { 2 } else { 1 })?;
    Ok(Op::Nccl {
        op,
        bytes: number(f.arg(0), "size")?,
        root: if rooted { f.root(1)? } else { 0 },
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn one(text: &str, ranks: u32) -> Result<Vec<Program>, String> {
        parse_traces(&[("t.txt".into(), text.into())], ranks)
    }

    #[test]
    fn the_issue_examples_parse() {
        let p = one(
            "0 init\n0 send 1 4096\n1 recv 0 4096\n0 compute 1e9\n0 allreduce 1024 1024\n1 irecv 0 7 10 host\n",
            2,
        )
        .unwrap();
        assert_eq!(
            p[0].steps[0].op,
            Op::Send {
                dst: 1,
                tag: 0,
                bytes: 4096.0,
                loc: Loc::Device
            }
        );
        assert_eq!(p[0].steps[1].op, Op::Compute { flops: 1e9 });
        assert_eq!(
            p[0].steps[2].op,
            Op::Coll(Coll::Allreduce {
                bytes: 1024.0,
                flops: 1024.0
            })
        );
        assert_eq!(
            p[1].steps[1].op,
            Op::Irecv {
                src: 0,
                tag: 7,
                bytes: 10.0,
                loc: Loc::Host
            }
        );
        assert_eq!(p[1].at(1), "t.txt:6 (irecv)");
    }

    #[test]
    fn bad_lines_are_rejected_with_their_line_number() {
        let e = one("0 send 1 4096\n0 sned 1 4096\n", 2).unwrap_err();
        assert!(e.starts_with("t.txt:2: unknown action `sned`"), "{e}");
        let e = one("0 send 5 4096\n", 2).unwrap_err();
        assert!(e.contains("t.txt:1: destination 5 is not a rank"), "{e}");
        let e = one("0 send 1 lots\n", 2).unwrap_err();
        assert!(e.contains("size `lots` is not a number"), "{e}");
        let e = one("3 compute 1\n", 2).unwrap_err();
        assert!(e.contains("rank 3 is not a rank"), "{e}");
    }

    #[test]
    fn per_rank_files_must_hold_their_rank() {
        let texts = vec![
            ("r0".to_string(), "0 send 1 8".to_string()),
            ("r1".to_string(), "0 recv 0 8".to_string()),
        ];
        let e = parse_traces(&texts, 2).unwrap_err();
        assert!(e.contains("r1:1: this is rank 1's file"), "{e}");
    }
}
