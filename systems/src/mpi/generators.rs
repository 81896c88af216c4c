//! Synthetic rank programs with the message profiles of the four applications of the
//! TraceR-CODES GPUDirect study (LULESH, Minisweep, SW4lite, AmgX). One iteration is built per
//! rank and repeated; see [`hetsim_schema::mpi::Generator`] for the patterns.
//! Simplified: the patterns keep the sizes, counts and neighbour structure of those codes and
//! the order of their exchanges, not their exact call sequences, kernel overlap or load
//! imbalance; compute is a fixed time per iteration.

use std::sync::Arc;

use hetsim_schema::mpi::Generator;

use super::program::{Coll, Loc, Op, Program, Step};

pub use hetsim_schema::mpi::dims_create;

fn coords(r: u32, dims: &[u32]) -> Vec<i64> {
    let mut c = vec![0i64; dims.len()];
    let mut rest = r;
    for i in (0..dims.len()).rev() {
        c[i] = (rest % dims[i]) as i64;
        rest /= dims[i];
    }
    c
}

fn rank_at(c: &[i64], dims: &[u32]) -> Option<u32> {
    let mut r = 0u32;
    for (i, &x) in c.iter().enumerate() {
        if x < 0 || x >= dims[i] as i64 {
            return None;
        }
        r = r * dims[i] + x as u32;
    }
    Some(r)
}

fn neighbour(r: u32, dims: &[u32], offset: &[i64]) -> Option<u32> {
    let c: Vec<i64> = coords(r, dims)
        .iter()
        .zip(offset)
        .map(|(a, b)| a + b)
        .collect();
    rank_at(&c, dims)
}

/// One of LULESH's halo exchanges: how many 8-byte fields it carries, whether they live on
/// nodes (a face of (side+1)^2) or elements (side^2), and whether it reaches the edge and
/// corner neighbours too.
struct LuleshExchange {
    fields: u32,
    nodal: bool,
    faces_only: bool,
}

impl LuleshExchange {
    /// The message to the neighbour at `offset`: the points of the shared face, edge or
    /// corner, times the fields.
    fn bytes(&self, side: u32, offset: &[i64]) -> f64 {
        let n = side as f64 + if self.nodal { 1.0 } else { 0.0 };
        let shared = offset.iter().filter(|&&o| o == 0).count() as i32;
        8.0 * self.fields as f64 * n.powi(shared)
    }
}

/// LULESH 2.0's exchanges per time step, in order (lulesh-comm: CommSBN of the forces,
/// CommSyncPosVel, CommMonoQ).
const LULESH_EXCHANGES: [LuleshExchange; 3] = [
    LuleshExchange {
        fields: 3,
        nodal: true,
        faces_only: false,
    },
    LuleshExchange {
        fields: 6,
        nodal: true,
        faces_only: false,
    },
    LuleshExchange {
        fields: 3,
        nodal: false,
        faces_only: true,
    },
];

/// The offsets of a rank's 3-D neighbours: the 6 faces, or all 26.
fn halo_offsets(faces_only: bool) -> impl Iterator<Item = [i64; 3]> {
    (0..27)
        .map(|i| [i / 9 - 1, i / 3 % 3 - 1, i % 3 - 1])
        .filter(move |o| {
            let nonzero = o.iter().filter(|&&v| v != 0).count();
            nonzero == 1 || (nonzero > 1 && !faces_only)
        })
}

/// Posts every receive, then every send, then waits: a halo exchange.
fn exchange(ops: &mut Vec<Op>, peers: &[(u32, f64)], tag: i64) {
    for &(peer, bytes) in peers {
        ops.push(Op::Irecv {
            src: peer as i64,
            tag,
            bytes,
            loc: Loc::Device,
        });
    }
    for &(peer, bytes) in peers {
        ops.push(Op::Isend {
            dst: peer,
            tag,
            bytes,
            loc: Loc::Device,
        });
    }
    ops.push(Op::Waitall);
}

/// The four neighbours of a 2-D grid.
fn four_neighbours(r: u32, dims: &[u32]) -> Vec<u32> {
    [[-1, 0], [1, 0], [0, -1], [0, 1]]
        .iter()
        .filter_map(|o| neighbour(r, dims, o))
        .collect()
}

/// The generator's name and the counts it needs at least one of (iterations first, then
/// side, blocks or levels).
fn counts(g: &Generator) -> (&'static str, Vec<(&'static str, u32)>) {
    let mut counts = vec![("iterations", g.iterations())];
    match g {
        Generator::Halo3d { side, .. } => counts.push(("side", *side)),
        Generator::Sweep { blocks, .. } => counts.push(("blocks", *blocks)),
        Generator::Solver { levels, .. } => counts.push(("levels", *levels)),
        Generator::Stencil { .. } | Generator::Alltoall { .. } | Generator::Training { .. } => {}
    }
    (g.name(), counts)
}

/// A count of zero would run something other than what was asked, silently; so would a
/// multigrid whose coarser levels grow.
pub fn check(g: &Generator) -> Result<(), String> {
    let (name, counts) = counts(g);
    if let Some((field, _)) = counts.iter().find(|(_, v)| *v == 0) {
        return Err(format!(
            "program.Generator.{name}.{field}: expected at least 1, got 0"
        ));
    }
    match g {
        Generator::Solver { coarsening, .. } if !(*coarsening >= 1.0 && coarsening.is_finite()) => {
            Err(format!(
                "program.Generator.{name}.coarsening: expected a finite factor of at least 1 (messages shrink by it per coarser level), got {coarsening}"
            ))
        }
        _ => Ok(()),
    }
}

/// One program per rank.
pub fn generate(g: &Generator, ranks: u32) -> Vec<Program> {
    let (name, counts) = counts(g);
    let iterations = counts[0].1;
    let source: Arc<str> = Arc::from(format!("generator {name}"));
    (0..ranks)
        .map(|r| Program {
            source: source.clone(),
            steps: iteration(g, r, ranks)
                .into_iter()
                .map(|op| Step { op, line: 0 })
                .collect(),
            repeat: iterations,
        })
        .collect()
}

/// The operations of one iteration of rank `r` of `p`.
fn iteration(g: &Generator, r: u32, p: u32) -> Vec<Op> {
    let mut ops = Vec::new();
    let secs = |d: &hetsim_schema::units::Duration| d.0.as_secs_f64();
    match g {
        Generator::Halo3d { side, compute, .. } => halo3d(&mut ops, r, p, *side, secs(compute)),
        Generator::Sweep {
            bytes,
            blocks,
            compute,
            ..
        } => sweep(&mut ops, r, p, bytes.0, *blocks, secs(compute)),
        Generator::Stencil {
            large,
            small,
            small_exchanges,
            compute,
            ..
        } => stencil(
            &mut ops,
            r,
            p,
            large.0,
            small.0,
            *small_exchanges,
            secs(compute),
        ),
        Generator::Solver {
            largest,
            coarsening,
            levels,
            allreduces,
            compute,
            ..
        } => solver(
            &mut ops,
            r,
            p,
            (largest.0, *coarsening, *levels, *allreduces),
            secs(compute),
        ),
        Generator::Alltoall { bytes, compute, .. } => compute_then(
            &mut ops,
            secs(compute),
            Op::Coll(Coll::Alltoall { bytes: bytes.0 }),
        ),
        Generator::Training {
            gradients, compute, ..
        } => compute_then(
            &mut ops,
            secs(compute),
            Op::Nccl {
                op: hetsim_schema::cuda::Coll::AllReduce,
                bytes: gradients.0,
                root: 0,
            },
        ),
    }
    ops
}

/// An iteration of work, then one collective (all-to-all codes, data-parallel training).
fn compute_then(ops: &mut Vec<Op>, secs: f64, collective: Op) {
    ops.push(Op::ComputeFor { secs });
    ops.push(collective);
}

/// LULESH's halo: a third of `compute` seconds before each of its three exchanges, then an
/// 8-byte allreduce.
fn halo3d(ops: &mut Vec<Op>, r: u32, p: u32, side: u32, compute: f64) {
    let dims = dims_create(p, 3);
    let third = compute / 3.0;
    for (tag, phase) in LULESH_EXCHANGES.iter().enumerate() {
        ops.push(Op::ComputeFor { secs: third });
        let peers: Vec<(u32, f64)> = halo_offsets(phase.faces_only)
            .filter_map(|o| {
                let n = neighbour(r, &dims, &o)?;
                Some((n, phase.bytes(side, &o)))
            })
            .collect();
        exchange(ops, &peers, tag as i64);
    }
    ops.push(Op::Coll(Coll::Allreduce {
        bytes: 8.0,
        flops: 0.0,
    }));
}

/// A wavefront sweep from each of the four corners, in `blocks` blocks of `bytes`.
fn sweep(ops: &mut Vec<Op>, r: u32, p: u32, bytes: f64, blocks: u32, compute: f64) {
    let dims = dims_create(p, 2);
    let blocks = blocks.max(1);
    let per_block = compute / (4 * blocks) as f64;
    for (tag, (sx, sy)) in [(1i64, 1i64), (-1, 1), (1, -1), (-1, -1)]
        .iter()
        .enumerate()
    {
        let up_x = neighbour(r, &dims, &[-sx, 0]);
        let up_y = neighbour(r, &dims, &[0, -sy]);
        let down_x = neighbour(r, &dims, &[*sx, 0]);
        let down_y = neighbour(r, &dims, &[0, *sy]);
        for _ in 0..blocks {
            for up in [up_x, up_y].into_iter().flatten() {
                ops.push(Op::Recv {
                    src: up as i64,
                    tag: tag as i64,
                    bytes,
                    loc: Loc::Device,
                });
            }
            ops.push(Op::ComputeFor { secs: per_block });
            for down in [down_x, down_y].into_iter().flatten() {
                ops.push(Op::Isend {
                    dst: down,
                    tag: tag as i64,
                    bytes,
                    loc: Loc::Device,
                });
            }
        }
        ops.push(Op::Waitall);
    }
}

/// One large exchange with the four neighbours, then `small_exchanges` small ones, then the
/// compute.
fn stencil(
    ops: &mut Vec<Op>,
    r: u32,
    p: u32,
    large: f64,
    small: f64,
    small_exchanges: u32,
    compute: f64,
) {
    let dims = dims_create(p, 2);
    let n = four_neighbours(r, &dims);
    let with = |b: f64| n.iter().map(|&x| (x, b)).collect::<Vec<_>>();
    exchange(ops, &with(large), 0);
    for _ in 0..small_exchanges {
        exchange(ops, &with(small), 0);
    }
    ops.push(Op::ComputeFor { secs: compute });
}

/// A multigrid V-cycle: an exchange and the level's share of the compute per level visited,
/// then `allreduces` 8-byte allreduces.
fn solver(
    ops: &mut Vec<Op>,
    r: u32,
    p: u32,
    (largest, coarsening, levels, allreduces): (f64, f64, u32, u32),
    compute: f64,
) {
    let dims = dims_create(p, 2);
    let n = four_neighbours(r, &dims);
    let levels = levels.max(1) as i32;
    let work: Vec<f64> = (0..levels)
        .map(|l| coarsening.powf(-1.5 * l as f64))
        .collect();
    // Down the V-cycle, then up it without the coarsest level again.
    let visits = (0..levels).chain((0..levels - 1).rev());
    let total: f64 = visits.clone().map(|l| work[l as usize]).sum();
    for l in visits {
        let bytes = largest * coarsening.powi(-l);
        let peers: Vec<(u32, f64)> = n.iter().map(|&x| (x, bytes)).collect();
        exchange(ops, &peers, l as i64);
        ops.push(Op::ComputeFor {
            secs: compute * work[l as usize] / total,
        });
    }
    for _ in 0..allreduces {
        ops.push(Op::Coll(Coll::Allreduce {
            bytes: 8.0,
            flops: 0.0,
        }));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_budgets_message_count_is_the_generated_programs() {
        let t = hetsim_schema::units::Duration(hetsim_schema::SimTime::ZERO);
        let b = hetsim_schema::units::Bytes(1.0);
        let gens = [
            Generator::Halo3d {
                iterations: 1,
                side: 4,
                compute: t,
            },
            Generator::Sweep {
                iterations: 1,
                bytes: b,
                blocks: 3,
                compute: t,
            },
            Generator::Stencil {
                iterations: 1,
                large: b,
                small: b,
                small_exchanges: 2,
                compute: t,
            },
            Generator::Solver {
                iterations: 1,
                largest: b,
                coarsening: 2.0,
                levels: 3,
                allreduces: 2,
                compute: t,
            },
        ];
        for g in &gens {
            for p in [1, 2, 5, 6, 8, 12, 27, 30, 64] {
                // What `hetsim trace-stats` would report of the generated programs.
                let stats = super::super::stats::summarise(&generate(g, p));
                let allreduces = stats.collectives.get("allreduce").map_or(0, |c| c.0);
                let (want, per_rank) = g.messages_per_iteration(p);
                assert_eq!(
                    stats.messages as f64,
                    want.round(),
                    "{} on {p} ranks",
                    g.name()
                );
                assert_eq!(allreduces, per_rank as u64 * p as u64, "{}", g.name());
            }
        }
    }

    #[test]
    fn dims_are_balanced_like_mpi_dims_create() {
        assert_eq!(dims_create(64, 3), vec![4, 4, 4]);
        assert_eq!(dims_create(12, 2), vec![4, 3]);
        assert_eq!(dims_create(7, 2), vec![7, 1]);
        assert_eq!(dims_create(4860, 3).iter().product::<u32>(), 4860);
        assert_eq!(dims_create(1, 3), vec![1, 1, 1]);
    }

    fn halo(side: u32) -> Generator {
        Generator::Halo3d {
            iterations: 1,
            side,
            compute: hetsim_schema::units::Duration(hetsim_schema::SimTime::from_nanos(3000)),
        }
    }

    fn sizes_sent(prog: &Program) -> Vec<f64> {
        prog.steps
            .iter()
            .filter_map(|s| match s.op {
                Op::Isend { bytes, .. } => Some(bytes),
                _ => None,
            })
            .collect()
    }

    fn compute_times(prog: &Program) -> Vec<f64> {
        prog.steps
            .iter()
            .filter_map(|s| match s.op {
                Op::ComputeFor { secs } => Some(secs),
                _ => None,
            })
            .collect()
    }

    #[test]
    fn an_interior_halo_rank_has_26_neighbours_and_sends_match_receives() {
        let progs = generate(&halo(144), 27);
        let sends = |r: usize| sizes_sent(&progs[r]).len();
        // Forces and positions to 26 neighbours, gradients to 6 faces.
        assert_eq!(sends(13), 26 + 26 + 6, "the centre of 3x3x3");
        assert_eq!(sends(0), 7 + 7 + 3, "a corner");
        // Every send has its receive at the peer with the same size and tag.
        for (r, p) in progs.iter().enumerate() {
            for s in &p.steps {
                if let Op::Isend {
                    dst, bytes, tag, ..
                } = s.op
                {
                    assert!(progs[dst as usize].steps.iter().any(|t| matches!(
                        t.op,
                        Op::Irecv { src, bytes: b, tag: u, .. } if src == r as i64 && b == bytes && u == tag
                    )));
                }
            }
        }
    }

    #[test]
    fn halo_messages_have_lulesh_sizes_at_144_cubed() {
        // LULESH -s 144: 145 nodes along an edge, 8-byte values. Forces (3 fields): faces
        // 145^2 * 24 = 504,600 B, edges 145 * 24 = 3,480 B, corners 24 B; positions and
        // velocities (6 fields) twice that; gradients (3 fields on 144^2 elements) 497,664 B.
        let progs = generate(&halo(144), 27);
        let prog = &progs[13];
        let mut sizes = sizes_sent(prog);
        sizes.sort_by(f64::total_cmp);
        sizes.dedup();
        assert_eq!(
            sizes,
            [
                24.0,
                48.0,
                3480.0,
                6960.0,
                497_664.0,
                504_600.0,
                1_009_200.0
            ]
        );
        // A third of the compute before each exchange, the time step's allreduce last.
        let computes = compute_times(prog);
        assert_eq!(computes.len(), 3);
        assert!(computes.iter().all(|&c| (c - 1e-6).abs() < 1e-18));
        assert!(matches!(
            prog.steps.last().map(|s| &s.op),
            Some(Op::Coll(Coll::Allreduce { .. }))
        ));
    }

    #[test]
    fn a_solver_cycle_goes_down_and_up_its_levels() {
        let g = Generator::Solver {
            iterations: 1,
            largest: hetsim_schema::units::Bytes(8000.0),
            coarsening: 2.0,
            levels: 3,
            allreduces: 2,
            compute: hetsim_schema::units::Duration(hetsim_schema::SimTime::from_nanos(1000)),
        };
        // Rank 0 of 2 x 2 has two neighbours; levels 0, 1, 2, 1, 0.
        let prog = &generate(&g, 4)[0];
        let sizes = sizes_sent(prog);
        assert_eq!(
            sizes,
            [
                8000.0, 8000.0, 4000.0, 4000.0, 2000.0, 2000.0, 4000.0, 4000.0, 8000.0, 8000.0
            ]
        );
        // Work per level 1, 2^-1.5, 2^-3, visited 2, 2 and 1 times.
        let unit = 1e-6 / (2.0 + 2.0 * 2f64.powf(-1.5) + 0.125);
        let computes = compute_times(prog);
        assert_eq!(computes.len(), 5);
        assert!((computes[2] - unit * 0.125).abs() < 1e-18);
        assert!((computes.iter().sum::<f64>() - 1e-6).abs() < 1e-18);
        let allreduces = prog
            .steps
            .iter()
            .filter(|s| matches!(s.op, Op::Coll(Coll::Allreduce { .. })))
            .count();
        assert_eq!(allreduces, 2);
    }

    #[test]
    fn a_growing_multigrid_is_refused_with_its_field() {
        let g = Generator::Solver {
            iterations: 1,
            largest: hetsim_schema::units::Bytes(8000.0),
            coarsening: 0.5,
            levels: 3,
            allreduces: 2,
            compute: hetsim_schema::units::Duration::default(),
        };
        let e = check(&g).unwrap_err();
        assert!(e.starts_with("program.Generator.Solver.coarsening:"), "{e}");
        assert!(check(&halo(0)).unwrap_err().contains("Halo3d.side"));
    }
}
