//! Where jobs go on a cluster (plain data in, node lists out): the policies a batch scheduler
//! or a study picks between, each rule with a unit test.
//!
//! Nodes are given to jobs whole, in the order the jobs are listed; a node belongs to one job.
//! Policies: `Contiguous` takes the lowest free nodes (first fit), `Linear` the nodes from an
//! offset on, `Random` free nodes drawn with the scenario's seed, `Spread` free nodes round
//! robin over the leaf switches (one per leaf in turn), `Nodes` an explicit list, and `Slots`
//! TraceR's job files: each rank's global slot, `ranks_per_node` slots to a node.

use rand::seq::SliceRandom;
use rand_chacha::ChaCha8Rng;
use rand_core::SeedableRng;

/// How one job's nodes are chosen.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Policy {
    Contiguous,
    Linear {
        offset: u32,
    },
    Random,
    Spread,
    Nodes(Vec<u32>),
    /// TraceR's job file: the global slot of each rank, `ranks_per_node` slots per node.
    Slots {
        slots: Vec<u32>,
        ranks_per_node: u32,
    },
}

/// A job's request: its name (for errors), how many nodes, and how they are chosen.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Request {
    pub name: String,
    pub nodes: u32,
    pub policy: Policy,
}

/// The machine as placement sees it: its nodes and how many hang under each leaf switch.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Machine {
    pub nodes: u32,
    pub per_leaf: u32,
}

/// Places every job in order; job `i`'s nodes are `result[i]`, in the job's rank order.
/// Errors name the job: a node out of range, a node another job holds, too few free nodes.
pub fn place(jobs: &[Request], machine: Machine, seed: u64) -> Result<Vec<Vec<u32>>, String> {
    let mut owner: Vec<Option<usize>> = vec![None; machine.nodes as usize];
    let mut out = Vec::with_capacity(jobs.len());
    for (j, job) in jobs.iter().enumerate() {
        let free: Vec<u32> = (0..machine.nodes)
            .filter(|&n| owner[n as usize].is_none())
            .collect();
        let nodes = choose(job, &free, machine, seed.wrapping_add(j as u64))?;
        for &n in &nodes {
            let slot = owner.get_mut(n as usize).ok_or_else(|| {
                format!(
                    "job `{}`: node {n} is not on the machine (it has {} nodes)",
                    job.name, machine.nodes
                )
            })?;
            if let Some(other) = *slot {
                return Err(format!(
                    "job `{}`: node {n} already belongs to job `{}`",
                    job.name, jobs[other].name
                ));
            }
            *slot = Some(j);
        }
        out.push(nodes);
    }
    Ok(out)
}

/// One job's nodes by its policy, from the nodes still free.
fn choose(job: &Request, free: &[u32], machine: Machine, seed: u64) -> Result<Vec<u32>, String> {
    let want = job.nodes as usize;
    let short = |what: &str| {
        format!(
            "job `{}`: needs {want} nodes, {what} {} free",
            job.name,
            free.len()
        )
    };
    match &job.policy {
        Policy::Contiguous => free
            .get(..want)
            .map(<[u32]>::to_vec)
            .ok_or_else(|| short("only")),
        Policy::Linear { offset } => Ok((*offset..offset.saturating_add(job.nodes)).collect()),
        Policy::Random => {
            if free.len() < want {
                return Err(short("only"));
            }
            let mut pool = free.to_vec();
            let mut rng = ChaCha8Rng::seed_from_u64(seed);
            let (chosen, _) = pool.partial_shuffle(&mut rng, want);
            Ok(chosen.to_vec())
        }
        Policy::Spread => spread(free, want, machine.per_leaf.max(1)).ok_or_else(|| short("only")),
        Policy::Nodes(list) => {
            if list.len() != want {
                return Err(format!(
                    "job `{}`: lists {} nodes for a job of {want}",
                    job.name,
                    list.len()
                ));
            }
            Ok(list.clone())
        }
        Policy::Slots {
            slots,
            ranks_per_node,
        } => Ok(slot_nodes(slots, *ranks_per_node)),
    }
}

/// `want` free nodes taken round robin over the leaves: the first free node of each leaf,
/// then the second of each, and so on.
fn spread(free: &[u32], want: usize, per_leaf: u32) -> Option<Vec<u32>> {
    if free.len() < want {
        return None;
    }
    let leaves = free
        .iter()
        .map(|&n| n / per_leaf)
        .max()
        .map_or(0, |l| l + 1);
    let mut by_leaf: Vec<Vec<u32>> = vec![Vec::new(); leaves as usize];
    for &n in free {
        by_leaf[(n / per_leaf) as usize].push(n);
    }
    let mut out = Vec::with_capacity(want);
    for round in 0.. {
        for leaf in &by_leaf {
            if let Some(&n) = leaf.get(round) {
                out.push(n);
                if out.len() == want {
                    return Some(out);
                }
            }
        }
    }
    unreachable!("enough free nodes were counted")
}

/// The distinct nodes of TraceR slots, in the order ranks first reach them.
pub fn slot_nodes(slots: &[u32], ranks_per_node: u32) -> Vec<u32> {
    let mut nodes: Vec<u32> = Vec::new();
    for &s in slots {
        let n = s / ranks_per_node.max(1);
        if !nodes.contains(&n) {
            nodes.push(n);
        }
    }
    nodes
}

#[cfg(test)]
mod tests {
    use super::*;

    fn job(name: &str, nodes: u32, policy: Policy) -> Request {
        Request {
            name: name.into(),
            nodes,
            policy,
        }
    }

    const M: Machine = Machine {
        nodes: 8,
        per_leaf: 4,
    };

    #[test]
    fn contiguous_jobs_take_the_lowest_free_nodes_in_turn() {
        let jobs = [
            job("a", 3, Policy::Contiguous),
            job("b", 2, Policy::Contiguous),
        ];
        assert_eq!(place(&jobs, M, 0).unwrap(), vec![vec![0, 1, 2], vec![3, 4]]);
    }

    #[test]
    fn linear_starts_at_its_offset_and_overlaps_are_errors_naming_both_jobs() {
        let jobs = [
            job("a", 2, Policy::Linear { offset: 4 }),
            job("b", 4, Policy::Contiguous),
        ];
        assert_eq!(
            place(&jobs, M, 0).unwrap(),
            vec![vec![4, 5], vec![0, 1, 2, 3]]
        );
        let clash = [
            job("a", 2, Policy::Linear { offset: 4 }),
            job("b", 2, Policy::Linear { offset: 5 }),
        ];
        let e = place(&clash, M, 0).unwrap_err();
        assert_eq!(e, "job `b`: node 5 already belongs to job `a`");
        let far = [job("a", 2, Policy::Linear { offset: 7 })];
        assert!(
            place(&far, M, 0)
                .unwrap_err()
                .contains("node 8 is not on the machine")
        );
    }

    #[test]
    fn random_draws_free_nodes_from_the_seed_the_same_way_every_time() {
        let jobs = [job("a", 2, Policy::Contiguous), job("b", 4, Policy::Random)];
        let one = place(&jobs, M, 7).unwrap();
        assert_eq!(one, place(&jobs, M, 7).unwrap(), "deterministic");
        assert_eq!(one[1].len(), 4);
        assert!(one[1].iter().all(|n| (2..8).contains(n)), "{one:?}");
        let other = place(&jobs, M, 8).unwrap();
        assert_ne!(one[1], other[1], "another seed, another draw");
        let big = [job("a", 9, Policy::Random)];
        assert_eq!(
            place(&big, M, 0).unwrap_err(),
            "job `a`: needs 9 nodes, only 8 free"
        );
    }

    #[test]
    fn spread_takes_one_node_per_leaf_in_turn() {
        // Leaves {0..3} and {4..7}; node 0 is taken, so leaf 0 starts at 1.
        let jobs = [job("a", 1, Policy::Contiguous), job("b", 4, Policy::Spread)];
        assert_eq!(place(&jobs, M, 0).unwrap()[1], vec![1, 4, 2, 5]);
    }

    #[test]
    fn explicit_lists_must_match_the_size_and_tracer_slots_map_to_nodes() {
        let jobs = [job("a", 2, Policy::Nodes(vec![6, 1]))];
        assert_eq!(place(&jobs, M, 0).unwrap(), vec![vec![6, 1]]);
        let bad = [job("a", 3, Policy::Nodes(vec![6, 1]))];
        assert!(
            place(&bad, M, 0)
                .unwrap_err()
                .contains("lists 2 nodes for a job of 3")
        );
        // Slots 0..7 at 4 ranks per node are nodes 0 and 1; slots 9 and 4 go to 2 then 1.
        assert_eq!(slot_nodes(&(0..8).collect::<Vec<_>>(), 4), vec![0, 1]);
        assert_eq!(slot_nodes(&[9, 4], 4), vec![2, 1]);
    }
}
