//! The tiled factorisations StarPU's examples run, as task graphs: Cholesky
//! (cholesky_implicit), LU (lu_implicit, no pivoting) and QR, with the examples' priorities
//! (capped into the scheduler's range by `setup.rs`, as StarPU caps them), flops and hints.
//! Cholesky's POTRF and LU's GETRF have synchronous CUDA implementations, as the examples
//! have when built for SimGrid (without cuSOLVER they lack STARPU_CUDA_ASYNC).

use hetsim_schema::starpu::footprint;
use hetsim_schema::tasks::{Mode, Precision, lu_codelets};

use super::graph::Graph;

/// Tiled Cholesky (right-looking, StarPU's cholesky_implicit) of an n x n matrix of
/// `tile` x `tile` tiles of `elem` bytes: POTRF, TRSM, SYRK, GEMM with the example's
/// bottom-level priorities (2nt-2k, 2nt-2k-m, 2nt-2k-n, 2nt-2k-m-n), flops and wont_use
/// hints.
pub fn cholesky(n: u32, tile: u32, elem: u32) -> Result<Graph, String> {
    let nt = tiles(n, tile)?;
    let mut g = Graph::default();
    let (potrf, trsm, syrk, gemm) = (
        g.codelet("chol_model_potrf"),
        g.codelet("chol_model_trsm"),
        g.codelet("chol_model_syrk"),
        g.codelet("chol_model_gemm"),
    );
    // Built for SimGrid (no cuSOLVER), the example's POTRF has no STARPU_CUDA_ASYNC.
    g.set_cuda_sync(potrf);
    // Tile (i, j) is StarPU's sub-data (i, j) of the partitioned matrix.
    let ids = tile_handles(&mut g, nt, tile, elem, |i, j| j <= i, |i, j| i * nt + j);
    let a = |i: u32, j: u32| ids[(i * nt + j) as usize];
    let b = tile as f64;
    let nt_i = nt as i64;
    for k in 0..nt {
        let ki = k as i64;
        let kk = a(k, k);
        g.add_task(
            potrf,
            &[(kk, Mode::RW)],
            2 * nt_i - 2 * ki,
            b * b * b / 3.0 + b * b / 2.0 + b / 6.0,
            format!("potrf({k})"),
        );
        for m in k + 1..nt {
            g.add_task(
                trsm,
                &[(kk, Mode::R), (a(m, k), Mode::RW)],
                2 * nt_i - 2 * ki - m as i64,
                b * b * (b + 1.0),
                format!("trsm({k},{m})"),
            );
        }
        // As StarPU's cholesky_implicit: the diagonal tile is done with after its TRSMs, a
        // panel tile after its SYRK and GEMMs.
        g.wont_use(kk);
        cholesky_update(&mut g, (syrk, gemm), a, k, nt, b);
    }
    g.finish()?;
    Ok(g)
}

/// Cholesky's trailing update after panel `k`: each SYRK on a diagonal tile, then the GEMMs
/// below it, each panel tile done with (wont_use) after them.
fn cholesky_update(
    g: &mut Graph,
    (syrk, gemm): (u16, u16),
    a: impl Fn(u32, u32) -> u32,
    k: u32,
    nt: u32,
    b: f64,
) {
    let (nt_i, ki) = (nt as i64, k as i64);
    for nn in k + 1..nt {
        g.add_task(
            syrk,
            &[(a(nn, k), Mode::R), (a(nn, nn), Mode::RW)],
            2 * nt_i - 2 * ki - nn as i64,
            b * b * (b + 1.0),
            format!("syrk({k},{nn})"),
        );
        for m in nn + 1..nt {
            g.add_task(
                gemm,
                &[
                    (a(m, k), Mode::R),
                    (a(nn, k), Mode::R),
                    (a(m, nn), Mode::RW),
                ],
                2 * nt_i - 2 * ki - m as i64 - nn as i64,
                2.0 * b * b * b,
                format!("gemm({k},{m},{nn})"),
            );
        }
        g.wont_use(a(nn, k));
    }
}

/// Tiled LU without pivoting (StarPU's lu_implicit_example): GETRF, TRSM on the L and U
/// panels, GEMM, with the example's priorities (3nt-3k, 3nt-2k-i, 3nt-k-i-j), flops and
/// wont_use hints.
pub fn lu(n: u32, tile: u32, precision: Precision) -> Result<Graph, String> {
    let nt = tiles(n, tile)?;
    let elem = precision.bytes();
    let mut g = Graph::default();
    let [getrf, trsm_ll, trsm_ru, gemm] = lu_codelets(precision).map(|c| g.codelet(&c));
    // Built for SimGrid (no cuSOLVER), the example's GETRF has no STARPU_CUDA_ASYNC.
    g.set_cuda_sync(getrf);
    // Tile (i, j) is lu_implicit's sub-data (j, i): its kernels index the transpose.
    let ids = tile_handles(&mut g, nt, tile, elem, |_, _| true, |i, j| j * nt + i);
    let a = |i: u32, j: u32| ids[(i * nt + j) as usize];
    let b = tile as f64;
    let nt_i = nt as i64;
    for k in 0..nt {
        let ki = k as i64;
        g.add_task(
            getrf,
            &[(a(k, k), Mode::RW)],
            3 * nt_i - 3 * ki,
            2.0 * b * b * b / 3.0,
            format!("getrf({k})"),
        );
        for i in k + 1..nt {
            let pr = 3 * nt_i - 2 * ki - i as i64;
            g.add_task(
                trsm_ll,
                &[(a(k, k), Mode::R), (a(i, k), Mode::RW)],
                pr,
                b * b * b,
                format!("trsm_l({k},{i})"),
            );
            g.add_task(
                trsm_ru,
                &[(a(k, k), Mode::R), (a(k, i), Mode::RW)],
                pr,
                b * b * b,
                format!("trsm_u({k},{i})"),
            );
        }
        // As StarPU's lu_implicit: the diagonal tile is done with after its TRSMs, the
        // step's panel tiles after its GEMMs.
        g.wont_use(a(k, k));
        for i in k + 1..nt {
            for j in k + 1..nt {
                g.add_task(
                    gemm,
                    &[(a(i, k), Mode::R), (a(k, j), Mode::R), (a(i, j), Mode::RW)],
                    3 * nt_i - ki - i as i64 - j as i64,
                    2.0 * b * b * b,
                    format!("gemm({k},{i},{j})"),
                );
            }
        }
        for i in k + 1..nt {
            g.wont_use(a(i, k));
            g.wont_use(a(k, i));
        }
    }
    g.finish()?;
    Ok(g)
}

/// Tiled QR (Householder, flat tree as in PLASMA/Chameleon): GEQRT on the diagonal, ORMQR
/// across the row, TSQRT down the column, TSMQR on the trailing tiles; each tile has a T
/// factor handle. Priorities: 3nt-3k for the panel, less for the updates.
pub fn qr(n: u32, tile: u32, elem: u32) -> Result<Graph, String> {
    let nt = tiles(n, tile)?;
    let mut g = Graph::default();
    let (geqrt, ormqr, tsqrt, tsmqr) = (
        g.codelet("qr_model_geqrt"),
        g.codelet("qr_model_ormqr"),
        g.codelet("qr_model_tsqrt"),
        g.codelet("qr_model_tsmqr"),
    );
    let ids = tile_handles(&mut g, nt, tile, elem, |_, _| true, |i, j| i * nt + j);
    let a = |i: u32, j: u32| ids[(i * nt + j) as usize];
    // T factors: ib x tile, with ib = tile / 4 (a common inner blocking).
    let ib = (tile / 4).max(1);
    let tfp = footprint::matrix(ib, tile);
    let t: Vec<u32> = (0..nt * nt)
        .map(|_| g.add_handle((ib * tile * elem) as f64, tfp))
        .collect();
    let tt = |i: u32, j: u32| t[(i * nt + j) as usize];
    let b = tile as f64;
    let nt_i = nt as i64;
    for k in 0..nt {
        let ki = k as i64;
        g.add_task(
            geqrt,
            &[(a(k, k), Mode::RW), (tt(k, k), Mode::W)],
            3 * nt_i - 3 * ki,
            4.0 * b * b * b / 3.0,
            format!("geqrt({k})"),
        );
        for j in k + 1..nt {
            g.add_task(
                ormqr,
                &[(a(k, k), Mode::R), (tt(k, k), Mode::R), (a(k, j), Mode::RW)],
                3 * nt_i - 2 * ki - j as i64,
                2.0 * b * b * b,
                format!("ormqr({k},{j})"),
            );
        }
        qr_column(&mut g, (tsqrt, tsmqr), a, tt, k, nt, b);
    }
    g.finish()?;
    Ok(g)
}

/// QR's column below panel `k`: each TSQRT, then the TSMQRs across its row.
fn qr_column(
    g: &mut Graph,
    (tsqrt, tsmqr): (u16, u16),
    a: impl Fn(u32, u32) -> u32,
    tt: impl Fn(u32, u32) -> u32,
    k: u32,
    nt: u32,
    b: f64,
) {
    let (nt_i, ki) = (nt as i64, k as i64);
    for m in k + 1..nt {
        g.add_task(
            tsqrt,
            &[
                (a(k, k), Mode::RW),
                (a(m, k), Mode::RW),
                (tt(m, k), Mode::W),
            ],
            3 * nt_i - 2 * ki - m as i64,
            2.0 * b * b * b,
            format!("tsqrt({k},{m})"),
        );
        for j in k + 1..nt {
            g.add_task(
                tsmqr,
                &[
                    (a(k, j), Mode::RW),
                    (a(m, j), Mode::RW),
                    (a(m, k), Mode::R),
                    (tt(m, k), Mode::R),
                ],
                3 * nt_i - ki - m as i64 - j as i64,
                4.0 * b * b * b,
                format!("tsmqr({k},{m},{j})"),
            );
        }
    }
}

fn tiles(n: u32, tile: u32) -> Result<u32, String> {
    if tile == 0 || n == 0 || !n.is_multiple_of(tile) {
        return Err(format!(
            "expected a matrix size that is a positive multiple of the tile size, got n = {n}, tile = {tile}"
        ));
    }
    Ok(n / tile)
}

/// One handle per stored tile (those `keep(i, j)` selects), at `i * nt + j`.
fn tile_handles(
    g: &mut Graph,
    nt: u32,
    tile: u32,
    elem: u32,
    keep: impl Fn(u32, u32) -> bool,
    path: impl Fn(u32, u32) -> u32,
) -> Vec<u32> {
    let fp = footprint::matrix(tile, tile);
    let size = tile as f64 * tile as f64 * elem as f64;
    let mut ids = vec![u32::MAX; (nt * nt) as usize];
    let root = g.handles.len() as u32;
    for i in 0..nt {
        for j in 0..nt {
            if keep(i, j) {
                let h = g.add_handle(size, fp);
                g.handles[h as usize].order = (root, path(i, j));
                ids[(i * nt + j) as usize] = h;
            }
        }
    }
    ids
}
