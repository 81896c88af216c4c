//! Which algorithm a collective uses: MPICH 3.4's default thresholds (`Mpich`), TraceR's
//! choices (`Tracer`), or one forced per collective.

use hetsim_schema::mpi::Select;

use crate::mpi::program::{Coll, Loc};

/// A collective algorithm.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Algo {
    Dissemination,
    TreeBarrier,
    Binomial,
    BinaryTree,
    ScatterRdAllgather,
    ScatterRingAllgather,
    Rabenseifner,
    /// Rabenseifner's 1997 reduce as SimGrid's SMPI runs it (`rab`).
    Rab,
    RecursiveDoubling,
    Ring,
    Bruck,
    Pairwise,
    Scattered,
    RecursiveHalving,
}

impl Algo {
    pub fn name(self) -> &'static str {
        match self {
            Algo::Dissemination => "dissemination",
            Algo::TreeBarrier => "binary_tree_allreduce",
            Algo::Binomial => "binomial",
            Algo::BinaryTree => "binary_tree",
            Algo::ScatterRdAllgather => "scatter_rd_allgather",
            Algo::ScatterRingAllgather => "scatter_ring_allgather",
            Algo::Rabenseifner => "rabenseifner",
            Algo::Rab => "rab",
            Algo::RecursiveDoubling => "recursive_doubling",
            Algo::Ring => "ring",
            Algo::Bruck => "bruck",
            Algo::Pairwise => "pairwise",
            Algo::Scattered => "scattered",
            Algo::RecursiveHalving => "recursive_halving",
        }
    }

    /// The algorithms a collective can use.
    pub fn for_collective(name: &str) -> &'static [Algo] {
        use Algo::*;
        match name {
            "barrier" => &[Dissemination, TreeBarrier],
            "bcast" => &[
                Binomial,
                BinaryTree,
                ScatterRdAllgather,
                ScatterRingAllgather,
            ],
            "reduce" => &[Binomial, BinaryTree, Rabenseifner, Rab],
            "allreduce" => &[RecursiveDoubling, Rabenseifner, Ring, BinaryTree],
            "allgather" => &[Ring, RecursiveDoubling, Bruck],
            "alltoall" => &[Pairwise, Bruck, Scattered],
            "reduce_scatter" => &[RecursiveHalving, Pairwise],
            _ => &[],
        }
    }

    pub fn parse(collective: &str, name: &str) -> Result<Algo, String> {
        let algos = Algo::for_collective(collective);
        if algos.is_empty() {
            return Err(format!(
                "`{collective}` is not a collective (barrier, bcast, reduce, allreduce, allgather, alltoall, reduce_scatter)"
            ));
        }
        algos
            .iter()
            .copied()
            .find(|a| a.name() == name)
            .ok_or_else(|| {
                format!(
                    "`{name}` is not an algorithm of {collective}; expected one of {}",
                    algos
                        .iter()
                        .map(|a| a.name())
                        .collect::<Vec<_>>()
                        .join(", ")
                )
            })
    }
}

/// How collectives choose their algorithm.
#[derive(Debug, Clone, Default)]
pub struct Policy {
    pub select: Select,
    /// Forced algorithms by collective name.
    pub force: Vec<(String, Algo)>,
    /// Seconds per byte reduced.
    pub reduce_cost: f64,
    /// Where the collectives' buffers live.
    pub loc: Loc,
}

impl Policy {
    /// The collective policy of a scenario; unknown names are errors with their field.
    pub fn of(spec: &hetsim_schema::mpi::CollectiveSpec) -> Result<Policy, String> {
        let force = spec
            .force
            .iter()
            .map(|(coll, algo)| {
                Algo::parse(coll, algo)
                    .map(|a| (coll.clone(), a))
                    .map_err(|e| format!("workload.Mpi.collectives.force.{coll}: {e}"))
            })
            .collect::<Result<_, _>>()?;
        Ok(Policy {
            select: spec.select,
            force,
            reduce_cost: spec.reduce_cost.0,
            loc: Loc::from(spec.buffers),
        })
    }

    /// The algorithm for `coll` on `p` ranks.
    pub fn choose(&self, coll: &Coll, p: u32) -> Algo {
        if let Some((_, a)) = self.force.iter().find(|(n, _)| *n == coll.name()) {
            return *a;
        }
        match self.select {
            Select::Tracer => tracer(*coll, p),
            Select::Mpich => mpich(*coll, p),
        }
    }
}

/// TraceR's choice (its defaults for each collective, by size).
fn tracer(coll: Coll, p: u32) -> Algo {
    use Algo::*;
    match coll {
        Coll::Barrier => TreeBarrier,
        Coll::Bcast { .. } => BinaryTree,
        Coll::Reduce { .. } => BinaryTree,
        Coll::Allreduce { .. } => BinaryTree,
        Coll::Allgather { bytes } => {
            if bytes * p as f64 <= 163840.0 {
                Bruck
            } else {
                Ring
            }
        }
        Coll::Alltoall { bytes } => {
            if bytes <= 512.0 {
                Bruck
            } else {
                Pairwise
            }
        }
        Coll::ReduceScatter { .. } => Pairwise,
    }
}

/// MPICH's choice (its default thresholds, by size and whether `p` is a power of two).
fn mpich(coll: Coll, p: u32) -> Algo {
    let pow2 = p.is_power_of_two();
    use Algo::*;
    match coll {
        Coll::Barrier => Dissemination,
        Coll::Bcast { bytes, .. } => {
            if p < 8 || bytes <= 12288.0 {
                Binomial
            } else if pow2 && bytes <= 524288.0 {
                ScatterRdAllgather
            } else {
                ScatterRingAllgather
            }
        }
        Coll::Reduce { bytes, .. } => {
            if bytes <= 2048.0 || bytes / 8.0 < prev_pow2(p) as f64 {
                Binomial
            } else {
                Rabenseifner
            }
        }
        Coll::Allreduce { bytes, .. } => {
            if bytes <= 8.0 || bytes / 8.0 < prev_pow2(p) as f64 {
                RecursiveDoubling
            } else {
                Rabenseifner
            }
        }
        Coll::Allgather { bytes } => {
            let total = bytes * p as f64;
            if total < 524288.0 && pow2 {
                RecursiveDoubling
            } else if total < 81920.0 {
                Bruck
            } else {
                Ring
            }
        }
        Coll::Alltoall { bytes } => {
            if p >= 8 && bytes <= 256.0 {
                Bruck
            } else if bytes <= 32768.0 {
                Scattered
            } else {
                Pairwise
            }
        }
        Coll::ReduceScatter { bytes, .. } => {
            if bytes < 524288.0 && pow2 {
                RecursiveHalving
            } else {
                Pairwise
            }
        }
    }
}

/// The largest power of two not above `p` (0 for 0).
pub fn prev_pow2(p: u32) -> u32 {
    if p == 0 {
        0
    } else {
        1 << (31 - p.leading_zeros())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use hetsim_schema::mpi::Select;

    #[test]
    fn mpich_selection_follows_its_thresholds() {
        let m = Policy::default();
        let a = |bytes: f64, p: u32| m.choose(&Coll::Allreduce { bytes, flops: 0.0 }, p);
        assert_eq!(a(8.0, 16), Algo::RecursiveDoubling);
        assert_eq!(a(1e6, 16), Algo::Rabenseifner);
        let b = |bytes: f64, p: u32| m.choose(&Coll::Bcast { bytes, root: 0 }, p);
        assert_eq!(b(1e6, 4), Algo::Binomial, "fewer than 8 ranks");
        assert_eq!(b(1e5, 16), Algo::ScatterRdAllgather);
        assert_eq!(b(1e6, 16), Algo::ScatterRingAllgather);
        let t = Policy {
            select: Select::Tracer,
            ..Default::default()
        };
        assert_eq!(t.choose(&Coll::Allgather { bytes: 1e4 }, 16), Algo::Bruck);
        assert_eq!(t.choose(&Coll::Allgather { bytes: 1e5 }, 16), Algo::Ring);
        assert_eq!(t.choose(&Coll::Alltoall { bytes: 1e3 }, 16), Algo::Pairwise);
    }
}
