//! What rank programs hold, before running them (`hetsim trace-stats`): the point-to-point
//! message sizes, who talks to whom, the bytes of each communication phase, the collectives
//! and the computation. Plain programs in, a [`TraceStats`] out; one pass through the program
//! counts for its `repeat` passes.

use std::collections::{BTreeMap, BTreeSet};

use super::program::{Op, Program};

/// The summary of a job's programs.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct TraceStats {
    pub ranks: u32,
    /// Point-to-point sends (send, isend, each half of a sendrecv) and their bytes.
    pub messages: u64,
    pub bytes: f64,
    /// Sends by size class: `buckets[k]` counts sizes in [2^(k-1), 2^k) bytes (`buckets[0]`:
    /// empty messages), with their bytes.
    pub buckets: Vec<(u64, f64)>,
    /// Distinct peers each rank sends to (min, mean, max over ranks).
    pub partners: (u32, f64, u32),
    /// Bytes sent by all ranks in each communication phase: the point-to-point operations
    /// between two computations or collectives, numbered in program order.
    pub phase_bytes: Vec<f64>,
    /// Collectives (MPI and NCCL) by name: calls of all ranks and their bytes.
    pub collectives: BTreeMap<String, (u64, f64)>,
    /// Flops (compute lines) and seconds (generators' kernels, sleeps) per rank: mean, max.
    pub flops: (f64, f64),
    pub seconds: (f64, f64),
}

impl TraceStats {
    /// Shares of the sends whose size classes lie within `lo..hi` bytes (powers of two, the
    /// class edges): by count, and by bytes.
    pub fn shares_within(&self, lo: f64, hi: f64) -> (f64, f64) {
        let (mut n, mut bytes) = (0u64, 0.0);
        for (k, &(count, b)) in self.buckets.iter().enumerate() {
            let (a, z) = bucket_range(k);
            if a >= lo && z <= hi {
                n += count;
                bytes += b;
            }
        }
        let share = |part: f64, all: f64| if all == 0.0 { 0.0 } else { part / all };
        (
            share(n as f64, self.messages as f64),
            share(bytes, self.bytes),
        )
    }
}

/// The sizes of size class `k`: [2^(k-1), 2^k) bytes, class 0 holding empty messages.
pub fn bucket_range(k: usize) -> (f64, f64) {
    if k == 0 {
        (0.0, 1.0)
    } else {
        (2f64.powi(k as i32 - 1), 2f64.powi(k as i32))
    }
}

fn bucket_of(bytes: f64) -> usize {
    if bytes < 1.0 {
        0
    } else {
        bytes.log2().floor() as usize + 1
    }
}

/// Summarises the programs of a job, one per rank.
pub fn summarise(programs: &[Program]) -> TraceStats {
    let mut s = TraceStats {
        ranks: programs.len() as u32,
        ..Default::default()
    };
    let mut partner_counts = Vec::with_capacity(programs.len());
    let (mut flops, mut secs) = (Vec::new(), Vec::new());
    for program in programs {
        let times = program.repeat as f64;
        let (partners, f, t) = s.count(program);
        partner_counts.push(partners);
        flops.push(f * times);
        secs.push(t * times);
    }
    let mean_max = |v: &[f64]| {
        let max = v.iter().copied().fold(0.0, f64::max);
        let mean = if v.is_empty() {
            0.0
        } else {
            v.iter().sum::<f64>() / v.len() as f64
        };
        (mean, max)
    };
    s.flops = mean_max(&flops);
    s.seconds = mean_max(&secs);
    let n = partner_counts.len().max(1) as f64;
    s.partners = (
        partner_counts.iter().copied().min().unwrap_or(0),
        partner_counts.iter().sum::<u32>() as f64 / n,
        partner_counts.iter().copied().max().unwrap_or(0),
    );
    s
}

impl TraceStats {
    /// Counts one rank's program, its steps `repeat` times: its sends by size class and by
    /// phase (a phase ends at the first computation or collective after communication), its
    /// collectives. Returns its partners, and its flops and seconds of computation per pass.
    fn count(&mut self, program: &Program) -> (u32, f64, f64) {
        let repeat = program.repeat as u64;
        let mut peers = BTreeSet::new();
        let (mut f, mut t) = (0.0, 0.0);
        let mut phase = 0usize;
        let mut in_phase = false;
        for step in &program.steps {
            let boundary = match step.op {
                Op::Send { dst, bytes, .. }
                | Op::Isend { dst, bytes, .. }
                | Op::Sendrecv {
                    dst, sbytes: bytes, ..
                } => {
                    peers.insert(dst);
                    self.count_send(bytes, repeat, phase);
                    in_phase = true;
                    false
                }
                Op::Recv { .. }
                | Op::Irecv { .. }
                | Op::Wait
                | Op::Waitall
                | Op::WaitFor { .. } => {
                    in_phase = true;
                    false
                }
                Op::Compute { flops } => {
                    f += flops;
                    true
                }
                Op::ComputeFor { secs } | Op::Sleep { secs } => {
                    t += secs;
                    true
                }
                Op::Coll(c) => {
                    self.count_collective(c.name().to_string(), c.bytes(), repeat);
                    true
                }
                Op::Nccl { op, bytes, .. } => {
                    self.count_collective(format!("nccl_{}", op.name()), bytes, repeat);
                    true
                }
            };
            if boundary && in_phase {
                phase += 1;
                in_phase = false;
            }
        }
        (peers.len() as u32, f, t)
    }

    /// A send of `bytes`, `repeat` times, in `phase`.
    fn count_send(&mut self, bytes: f64, repeat: u64, phase: usize) {
        let times = repeat as f64;
        self.messages += repeat;
        self.bytes += bytes * times;
        let k = bucket_of(bytes);
        if self.buckets.len() <= k {
            self.buckets.resize(k + 1, (0, 0.0));
        }
        self.buckets[k].0 += repeat;
        self.buckets[k].1 += bytes * times;
        if self.phase_bytes.len() <= phase {
            self.phase_bytes.resize(phase + 1, 0.0);
        }
        self.phase_bytes[phase] += bytes * times;
    }

    /// A collective of `bytes`, `repeat` times.
    fn count_collective(&mut self, name: String, bytes: f64, repeat: u64) {
        let e = self.collectives.entry(name).or_default();
        e.0 += repeat;
        e.1 += bytes * repeat as f64;
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::mpi::ti::parse_traces;

    #[test]
    fn a_trace_is_summarised_by_size_partner_phase_and_collective() {
        let text = "0 isend 1 1000\n0 isend 2 3000\n0 waitall\n0 compute 5e9\n0 send 1 8\n\
                    0 allreduce 64 0\n1 recv 0 1000\n1 recv 0 8\n1 allreduce 64 0\n\
                    2 recv 0 3000\n2 allreduce 64 0\n";
        let programs = parse_traces(&[("t.ti".into(), text.into())], 3).unwrap();
        let s = summarise(&programs);
        assert_eq!((s.ranks, s.messages, s.bytes), (3, 3, 4008.0));
        // 8 B in [8, 16), 1000 B in [512, 1024), 3000 B in [2048, 4096).
        assert_eq!(s.buckets[4], (1, 8.0));
        assert_eq!(s.buckets[10], (1, 1000.0));
        assert_eq!(s.buckets[12], (1, 3000.0));
        assert_eq!(s.partners, (0, 2.0 / 3.0, 2));
        // Phase 0: the two isends; the compute closes it; phase 1: the 8 B send.
        assert_eq!(s.phase_bytes, [4000.0, 8.0]);
        assert_eq!(s.collectives["allreduce"], (3, 192.0));
        assert_eq!(s.flops, (5e9 / 3.0, 5e9));
        assert!((s.shares_within(512.0, 4096.0).0 - 2.0 / 3.0).abs() < 1e-12);
    }
}
