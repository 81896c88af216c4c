//! Synthetic rank programs with the message profiles of the four applications of the
//! TraceR-CODES GPUDirect study (LULESH, Minisweep, SW4lite, AmgX). One iteration is built per
//! rank and repeated; see [`hetsim_schema::mpi::Generator`] for the patterns.
//! Simplified: the patterns keep the sizes and neighbour structure of those codes, not their
//! exact call sequences or load imbalance.

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
/// blocks or levels).
fn counts(g: &Generator) -> (&'static str, Vec<(&'static str, u32)>) {
    let mut counts = vec![("iterations", g.iterations())];
    match g {
        Generator::Sweep { blocks, .. } => counts.push(("blocks", *blocks)),
        Generator::Solver { levels, .. } => counts.push(("levels", *levels)),
        Generator::Halo3d { .. } | Generator::Stencil { .. } => {}
    }
    (g.name(), counts)
}

/// A count of zero would run something other than what was asked, silently.
pub fn check(g: &Generator) -> Result<(), String> {
    let (name, counts) = counts(g);
    match counts.iter().find(|(_, v)| *v == 0) {
        Some((field, _)) => Err(format!(
            "program.Generator.{name}.{field}: expected at least 1, got 0"
        )),
        None => Ok(()),
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

/// The operations of one iteration of rank `r`.
fn iteration(g: &Generator, r: u32, p: u32) -> Vec<Op> {
    let mut ops = Vec::new();
    match g {
        Generator::Halo3d {
            face,
            edge,
            corner,
            compute,
            ..
        } => {
            let dims = dims_create(p, 3);
            let mut peers = Vec::new();
            for dx in -1..=1i64 {
                for dy in -1..=1i64 {
                    for dz in -1..=1i64 {
                        let nonzero = [dx, dy, dz].iter().filter(|&&v| v != 0).count();
                        let bytes = match nonzero {
                            1 => face.0,
                            2 => edge.0,
                            3 => corner.0,
                            _ => continue,
                        };
                        if let Some(n) = neighbour(r, &dims, &[dx, dy, dz]) {
                            peers.push((n, bytes));
                        }
                    }
                }
            }
            exchange(&mut ops, &peers, 0);
            ops.push(Op::ComputeFor {
                secs: compute.0.as_secs_f64(),
            });
            ops.push(Op::Coll(Coll::Allreduce {
                bytes: 8.0,
                flops: 0.0,
            }));
        }
        Generator::Sweep {
            bytes,
            blocks,
            compute,
            ..
        } => {
            let dims = dims_create(p, 2);
            let blocks = (*blocks).max(1);
            let per_block = compute.0.as_secs_f64() / (4 * blocks) as f64;
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
                            bytes: bytes.0,
                            loc: Loc::Device,
                        });
                    }
                    ops.push(Op::ComputeFor { secs: per_block });
                    for down in [down_x, down_y].into_iter().flatten() {
                        ops.push(Op::Isend {
                            dst: down,
                            tag: tag as i64,
                            bytes: bytes.0,
                            loc: Loc::Device,
                        });
                    }
                }
                ops.push(Op::Waitall);
            }
        }
        Generator::Stencil {
            large,
            small,
            small_exchanges,
            compute,
            ..
        } => {
            let dims = dims_create(p, 2);
            let n = four_neighbours(r, &dims);
            let with = |b: f64| n.iter().map(|&x| (x, b)).collect::<Vec<_>>();
            exchange(&mut ops, &with(large.0), 0);
            for _ in 0..*small_exchanges {
                exchange(&mut ops, &with(small.0), 0);
            }
            ops.push(Op::ComputeFor {
                secs: compute.0.as_secs_f64(),
            });
        }
        Generator::Solver {
            largest,
            smallest,
            levels,
            compute,
            ..
        } => {
            let dims = dims_create(p, 2);
            let n = four_neighbours(r, &dims);
            let levels = (*levels).max(1);
            // Work shrinks by 4 per coarser level (a 2-D multigrid hierarchy).
            let weights: Vec<f64> = (0..levels).map(|l| 0.25f64.powi(l as i32)).collect();
            let total: f64 = weights.iter().sum();
            for (l, w) in weights.iter().enumerate() {
                let bytes = (largest.0 * 0.25f64.powi(l as i32)).max(smallest.0);
                let peers: Vec<(u32, f64)> = n.iter().map(|&x| (x, bytes)).collect();
                exchange(&mut ops, &peers, 0);
                ops.push(Op::ComputeFor {
                    secs: compute.0.as_secs_f64() * w / total,
                });
                ops.push(Op::Coll(Coll::Allreduce {
                    bytes: 8.0,
                    flops: 0.0,
                }));
            }
        }
    }
    ops
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
                face: b,
                edge: b,
                corner: b,
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
                smallest: b,
                levels: 3,
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

    #[test]
    fn an_interior_halo_rank_has_26_neighbours_and_sends_match_receives() {
        let g = Generator::Halo3d {
            iterations: 1,
            face: hetsim_schema::units::Bytes(1e6),
            edge: hetsim_schema::units::Bytes(3e4),
            corner: hetsim_schema::units::Bytes(1e3),
            compute: hetsim_schema::units::Duration::default(),
        };
        let progs = generate(&g, 27);
        let sends = |r: usize| {
            progs[r]
                .steps
                .iter()
                .filter(|s| matches!(s.op, Op::Isend { .. }))
                .count()
        };
        assert_eq!(sends(13), 26, "the centre of 3x3x3");
        assert_eq!(sends(0), 7, "a corner");
        // Every send has its receive at the peer with the same size.
        for (r, p) in progs.iter().enumerate() {
            for s in &p.steps {
                if let Op::Isend { dst, bytes, .. } = s.op {
                    assert!(progs[dst as usize].steps.iter().any(|t| matches!(
                        t.op,
                        Op::Irecv { src, bytes: b, .. } if src == r as i64 && b == bytes
                    )));
                }
            }
        }
    }
}
