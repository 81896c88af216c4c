//! Building an MPI job from its scenario section: rank placement, programs (traces or
//! generators), collective policy and protocol settings, each checked with its field path.

use std::collections::HashMap;
use std::collections::HashSet;

use hetsim_schema::mpi::{Buffers, MpiSpec, Placement, ProgramSpec};

use super::collectives;
use super::generators;
use super::message::RankEnds;
use super::program::{self, Loc};
use super::protocol::{Messages, Switches};
use super::rank::{Job, RankRt};
use crate::platform::Endpoint;

/// Where a job runs: the platform's shape (nodes, GPUs per node), the platform nodes the job
/// holds (its node `i` is `nodes[i]`; `None`: the whole machine as numbered), and what its
/// rank rows begin with (`halo/` for a job named `halo`, empty for the scenario's workload).
#[derive(Debug, Clone, Copy)]
pub struct On<'a> {
    pub shape: (u32, u32),
    pub nodes: Option<&'a [u32]>,
    pub prefix: &'a str,
}

impl On<'_> {
    /// The name of rank `r` on platform node `node`: its timeline row, its entity's name and
    /// its row in flows.
    pub fn rank_row(&self, node: u32, r: usize) -> String {
        format!("{}{}", self.prefix, super::message::rank_row(node, r))
    }
}

/// The job of `cfg` on the nodes `on` gives it; `speeds` gives each GPU's flop/s by
/// (node, gpu).
pub fn build(
    cfg: &MpiSpec,
    on: On,
    speeds: &HashMap<(u32, u32), f64>,
    switches: Switches,
) -> Result<Job, String> {
    if cfg.ranks == 0 {
        return Err("workload.Mpi.ranks: expected at least one rank".into());
    }
    let (nodes, gpus) = on.shape;
    let local_nodes = on.nodes.map_or(nodes, |n| n.len() as u32);
    let placed: Vec<(u32, u32)> = place(cfg, local_nodes, gpus)?
        .into_iter()
        .map(|(node, gpu)| (on.nodes.map_or(node, |n| n[node as usize]), gpu))
        .collect();
    let programs = programs_of(cfg)?;
    // The speed of a program's `compute` flops: the scenario's, OTF2's conversion rate, or
    // the rank's GPU.
    let compute_speed = cfg.compute_speed.map(|s| s.0).or(match cfg.program {
        ProgramSpec::Otf2(_) => Some(super::otf2::FLOPS_PER_SECOND),
        _ => None,
    });
    check_collectives_agree(&programs).map_err(|e| format!("workload.Mpi.program: {e}"))?;
    let ranks: Vec<RankRt> = placed
        .iter()
        .zip(programs)
        .map(|(&(node, gpu), program)| {
            let speed =
                compute_speed.unwrap_or_else(|| speeds.get(&(node, gpu)).copied().unwrap_or(1e12));
            check_compute_times(&program, speed)?;
            Ok(RankRt::new(program, node, gpu, speed))
        })
        .collect::<Result<_, String>>()?;
    let policy = collectives::Policy::of(&cfg.collectives)?;
    if cfg.protocol.copy_queues == 0 {
        return Err("workload.Mpi.protocol.copy_queues: expected at least 1".into());
    }
    if cfg.protocol.eager_credits == 0 {
        return Err("workload.Mpi.protocol.eager_credits: expected at least 1".into());
    }
    let ends = ranks
        .iter()
        .map(|r| RankEnds {
            node: r.node,
            gpu: r.gpu,
            host: Endpoint::Host { node: r.node },
        })
        .collect();
    let rows = ranks
        .iter()
        .enumerate()
        .map(|(i, r)| on.rank_row(r.node, i))
        .collect();
    let msgs = Messages::new(cfg.protocol.clone(), ends, rows, nodes as usize, switches);
    Ok(Job::new(ranks, msgs, policy, cfg.protocol.call_overhead.0))
}

/// Every rank's program, checked: the requests they wait for exist, expanded collectives
/// keep their buffers where the collectives' setting says.
fn programs_of(cfg: &MpiSpec) -> Result<Vec<program::Program>, String> {
    let mut programs = match &cfg.program {
        ProgramSpec::TraceText(texts) => {
            super::ti::parse_traces_with(texts, cfg.ranks, Loc::from(cfg.buffers))
                .map_err(|e| format!("workload.Mpi.program: {e}"))?
        }
        ProgramSpec::Generator(g) => {
            generators::check(g).map_err(|e| format!("workload.Mpi.{e}"))?;
            generators::generate(g, cfg.ranks)
        }
        ProgramSpec::Otf2(spec) => {
            let read = super::otf2::read(spec, cfg.buffers, &cfg.collectives)
                .map_err(|e| format!("workload.Mpi.program.Otf2: {e}"))?;
            if read.programs.len() != cfg.ranks as usize {
                return Err(format!(
                    "workload.Mpi.ranks: {} ranks, but the archive `{}` has {} MPI ranks",
                    cfg.ranks,
                    spec.path,
                    read.programs.len()
                ));
            }
            read.programs
        }
        ProgramSpec::Trace(_) => {
            return Err("workload.Mpi.program: trace files were not read by the loader".into());
        }
    };
    for p in &mut programs {
        program::check_waits(p).map_err(|e| format!("workload.Mpi.program: {e}"))?;
        expanded_buffers(p, cfg.collectives.buffers);
    }
    Ok(programs)
}

/// Collectives expanded into point-to-point steps when read (SMPI's gather, scatter and
/// v-collectives) keep their buffers where the collectives' setting says.
fn expanded_buffers(p: &mut program::Program, buffers: Buffers) {
    let at = Loc::from(buffers);
    for s in &mut p.steps {
        match &mut s.op {
            program::Op::Isend { tag, loc, .. } | program::Op::Irecv { tag, loc, .. }
                if super::smpi::is_expanded_tag(*tag) =>
            {
                *loc = at;
            }
            _ => {}
        }
    }
}

/// Every compute step's time at its GPU's speed is within simulated time: `compute 1e40` in
/// a trace is an input error at its line, not the end of time.
fn check_compute_times(program: &program::Program, speed: f64) -> Result<(), String> {
    let max = hetsim_schema::SimTime::MAX.as_secs_f64();
    for (i, step) in program.steps.iter().enumerate() {
        let secs = match step.op {
            program::Op::Compute { flops } => flops / speed,
            program::Op::ComputeFor { secs } | program::Op::Sleep { secs } => secs,
            _ => continue,
        };
        if secs.is_nan() || secs >= max {
            return Err(format!(
                "workload.Mpi.program: {}: takes {secs:e} s, beyond the {max:.3e} s hetsim simulates",
                program.at(i)
            ));
        }
    }
    Ok(())
}

/// (node, gpu) of each rank.
fn place(cfg: &MpiSpec, nodes: u32, gpus: u32) -> Result<Vec<(u32, u32)>, String> {
    let per_node = cfg.gpus_per_node.unwrap_or(gpus);
    if per_node == 0 || per_node > gpus {
        return Err(format!(
            "workload.Mpi.gpus_per_node: expected 1 to {gpus} (the GPUs of a node), got {per_node}"
        ));
    }
    let n = cfg.ranks;
    let used_nodes = n.div_ceil(per_node);
    if used_nodes > nodes && !matches!(cfg.placement, Placement::Explicit(_)) {
        return Err(format!(
            "workload.Mpi.ranks: {n} ranks at {per_node} per node need {used_nodes} nodes; the platform has {nodes}"
        ));
    }
    match &cfg.placement {
        Placement::Linear => Ok((0..n).map(|r| (r / per_node, r % per_node)).collect()),
        Placement::RoundRobin => Ok((0..n).map(|r| (r % used_nodes, r / used_nodes)).collect()),
        Placement::Explicit(names) => {
            if names.len() != n as usize {
                return Err(format!(
                    "workload.Mpi.placement: {} GPUs listed for {n} ranks",
                    names.len()
                ));
            }
            let mut seen = HashSet::new();
            names
                .iter()
                .enumerate()
                .map(|(i, name)| {
                    let bad = || {
                        format!(
                            "workload.Mpi.placement[{i}]: expected node[N].gpu[G] on the platform, got `{name}`"
                        )
                    };
                    let (node, gpu) = parse_gpu(name).ok_or_else(bad)?;
                    if node >= nodes || gpu >= gpus {
                        return Err(bad());
                    }
                    if !seen.insert((node, gpu)) {
                        return Err(format!(
                            "workload.Mpi.placement[{i}]: `{name}` already holds a rank (a rank owns its GPU)"
                        ));
                    }
                    Ok((node, gpu))
                })
                .collect()
        }
    }
}

fn parse_gpu(name: &str) -> Option<(u32, u32)> {
    let rest = name.strip_prefix("node[")?;
    let (node, rest) = rest.split_once("].gpu[")?;
    let gpu = rest.strip_suffix(']')?;
    Some((node.parse().ok()?, gpu.parse().ok()?))
}

/// What every rank must agree on in its k-th collective: MPI's kind, root and (where counts
/// must match: barrier, bcast, reduce, allreduce) size; NCCL's operation, size and root.
#[derive(Debug, Clone, PartialEq)]
struct Agreement {
    what: String,
    /// The step, `file:line` or the generator, for the message.
    at: String,
}

/// Each rank's collectives, in program order (one pass).
fn agreements(p: &program::Program) -> Vec<Agreement> {
    use program::{Coll, Op};
    p.steps
        .iter()
        .enumerate()
        .filter_map(|(i, s)| {
            let what = match s.op {
                Op::Coll(c) => match c {
                    Coll::Bcast { bytes, root } => format!("bcast of {bytes} B from root {root}"),
                    Coll::Reduce { bytes, root, .. } => {
                        format!("reduce of {bytes} B to root {root}")
                    }
                    Coll::Allreduce { bytes, .. } => format!("allreduce of {bytes} B"),
                    Coll::Barrier => "barrier".into(),
                    other => other.name().to_string(),
                },
                Op::Nccl { op, bytes, root } => {
                    format!("nccl {} of {bytes} B (root {root})", op.name())
                }
                _ => return None,
            };
            Some(Agreement { what, at: p.at(i) })
        })
        .collect()
}

/// Every rank calls the same collectives in the same order: MPI and NCCL would hang or fail
/// on ranks that disagree (a different root, size or kind, or a call one rank never makes),
/// and a simulation of them would be a number of nothing.
fn check_collectives_agree(programs: &[program::Program]) -> Result<(), String> {
    let Some(first) = programs.first().map(agreements) else {
        return Ok(());
    };
    for (r, p) in programs.iter().enumerate().skip(1) {
        let mine = agreements(p);
        for k in 0..first.len().max(mine.len()) {
            let (a, b) = (first.get(k), mine.get(k));
            if a.map(|a| &a.what) == b.map(|b| &b.what) {
                continue;
            }
            let said = |x: Option<&Agreement>| {
                x.map_or("makes no such call".to_string(), |x| {
                    format!("calls {} ({})", x.what, x.at)
                })
            };
            return Err(format!(
                "ranks 0 and {r} disagree on their collective call #{}: rank 0 {}, rank {r} {}; MPI and NCCL would hang or fail",
                k + 1,
                said(a),
                said(b)
            ));
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn spec(ranks: u32, per_node: u32, placement: Placement) -> MpiSpec {
        let text = format!(
            "(ranks: {ranks}, gpus_per_node: {per_node}, program: Generator(Halo3d(iterations: 1, compute: \"1ms\")))"
        );
        let mut s: MpiSpec = hetsim_schema::load::from_ron(&text, "test", "").unwrap();
        s.placement = placement;
        s
    }

    #[test]
    fn ranks_are_placed_linearly_or_round_robin() {
        let lin = place(&spec(6, 4, Placement::Linear), 2, 4).unwrap();
        assert_eq!(lin, [(0, 0), (0, 1), (0, 2), (0, 3), (1, 0), (1, 1)]);
        let rr = place(&spec(6, 4, Placement::RoundRobin), 2, 4).unwrap();
        assert_eq!(rr, [(0, 0), (1, 0), (0, 1), (1, 1), (0, 2), (1, 2)]);
        let e = place(&spec(9, 4, Placement::Linear), 2, 4).unwrap_err();
        assert!(
            e.contains("9 ranks at 4 per node need 3 nodes; the platform has 2"),
            "{e}"
        );
    }

    #[test]
    fn an_explicit_placement_names_distinct_gpus_of_the_platform() {
        let names = |v: &[&str]| Placement::Explicit(v.iter().map(|s| s.to_string()).collect());
        let ok = place(
            &spec(2, 4, names(&["node[1].gpu[3]", "node[0].gpu[0]"])),
            2,
            4,
        );
        assert_eq!(ok.unwrap(), [(1, 3), (0, 0)]);
        let e = place(
            &spec(2, 4, names(&["node[1].gpu[3]", "node[1].gpu[3]"])),
            2,
            4,
        );
        assert!(
            e.unwrap_err()
                .contains("placement[1]: `node[1].gpu[3]` already holds a rank")
        );
        let e = place(&spec(1, 4, names(&["node[2].gpu[0]"])), 2, 4);
        assert!(
            e.unwrap_err()
                .contains("placement[0]: expected node[N].gpu[G] on the platform")
        );
    }
}
