//! Task graphs as StarPU builds them: data handles, tasks with access modes and priorities,
//! dependencies from the order of accesses (sequential consistency) plus explicit ones.
//!
//! Implicit dependencies follow StarPU's rule (implicit_data_deps.c): consecutive readers of
//! a handle form a group that runs concurrently; any other access starts a new group that
//! depends on every task of the previous group (a writer after three readers waits for the
//! three; a reader after a writer waits for the writer; writers are groups of one). Scratch
//! accesses make no dependencies; consecutive redux accesses share like reads.
//! Dense arrays throughout: a 73,000-task Cholesky is a few megabytes.

use smallvec::SmallVec;

use hetsim_components::starpu::footprint;
use hetsim_components::tasks::{DagSpec, Mode, Precision, lu_codelets};

/// A piece of data.
#[derive(Debug, Clone, PartialEq)]
pub struct Handle {
    pub size: f64,
    /// Holds data in RAM from the start (see `HandleSpec::home`).
    pub home: bool,
    /// StarPU footprint of the handle (its shape).
    pub footprint: u32,
}

/// The kernel a codelet model stands for, as traces name and colour tasks:
/// `chol_model_gemm` -> `gemm`.
pub fn kernel(model: &str) -> &str {
    model.rsplit('_').next().unwrap_or(model)
}

/// One task.
#[derive(Debug, Clone, PartialEq)]
pub struct Task {
    pub codelet: u16,
    pub accesses: SmallVec<[(u32, Mode); 3]>,
    pub priority: i64,
    pub flops: f64,
    /// StarPU footprint: the key of its history performance models.
    pub footprint: u32,
    /// Sum of the sizes of the data it accesses (the regression models' size).
    pub size: f64,
    /// Label for traces: `potrf(3)`, `gemm(2,5,4)`.
    pub label: String,
}

/// A task graph with its dependencies in compressed rows.
#[derive(Debug, Clone, Default)]
pub struct Graph {
    pub codelets: Vec<String>,
    pub handles: Vec<Handle>,
    pub tasks: Vec<Task>,
    /// Successors of task t: `succ[succ_start[t]..succ_start[t + 1]]` (after [`Graph::finish`]).
    succ_start: Vec<u32>,
    succ: Vec<u32>,
    /// Dependency count of each task.
    pub npred: Vec<u32>,
    /// Edges as added (pred, succ), before compression.
    edges: Vec<(u32, u32)>,
    /// Per handle: the previous access group, the current one, and whether it shares.
    groups: Vec<HandleGroups>,
    /// `starpu_data_wont_use` hints: the handle, and how many tasks must end first.
    pub hints: Vec<(u32, u32)>,
    /// Per task: the hints waiting for it.
    pub hint_of: Vec<SmallVec<[u32; 1]>>,
}

#[derive(Debug, Clone, Default)]
struct HandleGroups {
    prev: Vec<u32>,
    cur: Vec<u32>,
    cur_mode: Option<Mode>,
}

impl Graph {
    pub fn codelet(&mut self, name: &str) -> u16 {
        match self.codelets.iter().position(|c| c == name) {
            Some(i) => i as u16,
            None => {
                self.codelets.push(name.to_string());
                (self.codelets.len() - 1) as u16
            }
        }
    }

    pub fn add_handle(&mut self, size: f64, footprint: u32) -> u32 {
        self.handles.push(Handle {
            size,
            footprint,
            home: true,
        });
        self.groups.push(HandleGroups::default());
        (self.handles.len() - 1) as u32
    }

    /// Adds a task after all the tasks added so far, with its implicit dependencies.
    pub fn add_task(
        &mut self,
        codelet: u16,
        accesses: &[(u32, Mode)],
        priority: i64,
        flops: f64,
        label: String,
    ) -> u32 {
        let t = self.tasks.len() as u32;
        let mut preds: SmallVec<[u32; 8]> = SmallVec::new();
        for &(h, mode) in accesses {
            if mode == Mode::Scratch {
                continue;
            }
            let g = &mut self.groups[h as usize];
            let shares = matches!(
                (g.cur_mode, mode),
                (Some(Mode::R), Mode::R) | (Some(Mode::Redux), Mode::Redux)
            );
            if shares {
                preds.extend(g.prev.iter().copied());
                g.cur.push(t);
            } else {
                preds.extend(g.cur.iter().copied());
                g.prev = std::mem::replace(&mut g.cur, vec![t]);
                g.cur_mode = Some(mode);
            }
        }
        preds.sort_unstable();
        preds.dedup();
        for p in preds {
            self.edges.push((p, t));
        }
        let fp = footprint::task(
            accesses
                .iter()
                .map(|&(h, _)| self.handles[h as usize].footprint),
        );
        let size = accesses
            .iter()
            .map(|&(h, _)| self.handles[h as usize].size)
            .sum();
        self.hint_of.push(SmallVec::new());
        self.tasks.push(Task {
            codelet,
            accesses: accesses.iter().copied().collect(),
            priority,
            flops,
            footprint: fp,
            size,
            label,
        });
        t
    }

    /// StarPU's `starpu_data_wont_use(h)`: once the tasks accessing `h` so far have ended,
    /// its copies are the first to evict.
    pub fn wont_use(&mut self, h: u32) {
        let group = self.groups[h as usize].cur.clone();
        if group.is_empty() {
            return;
        }
        let id = self.hints.len() as u32;
        self.hints.push((h, group.len() as u32));
        for t in group {
            self.hint_of[t as usize].push(id);
        }
    }

    /// An explicit dependency: `succ` runs after `pred`.
    pub fn add_dep(&mut self, pred: u32, succ: u32) {
        self.edges.push((pred, succ));
    }

    /// Compresses the edges; errors with a cycle's tasks when explicit dependencies make one.
    pub fn finish(&mut self) -> Result<(), String> {
        self.edges.sort_unstable();
        self.edges.dedup();
        let n = self.tasks.len();
        self.succ_start = vec![0; n + 1];
        for &(p, _) in &self.edges {
            self.succ_start[p as usize + 1] += 1;
        }
        for i in 0..n {
            self.succ_start[i + 1] += self.succ_start[i];
        }
        self.succ = self.edges.iter().map(|&(_, s)| s).collect();
        self.npred = vec![0; n];
        for &(_, s) in &self.edges {
            self.npred[s as usize] += 1;
        }
        self.edges = Vec::new();
        self.groups = Vec::new();
        match self.find_cycle() {
            None => Ok(()),
            Some(cycle) => Err(format!(
                "the task graph has a cycle: {}",
                cycle
                    .iter()
                    .chain(cycle.first())
                    .map(|&t| self.tasks[t as usize].label.as_str())
                    .collect::<Vec<_>>()
                    .join(" -> ")
            )),
        }
    }

    pub fn successors(&self, t: u32) -> &[u32] {
        &self.succ[self.succ_start[t as usize] as usize..self.succ_start[t as usize + 1] as usize]
    }

    /// Kahn's algorithm; if tasks remain, walk predecessors among them to a repeat.
    fn find_cycle(&self) -> Option<Vec<u32>> {
        let n = self.tasks.len();
        let mut left = self.npred.clone();
        let mut stack: Vec<u32> = (0..n as u32).filter(|&t| left[t as usize] == 0).collect();
        let mut done = 0;
        while let Some(t) = stack.pop() {
            done += 1;
            for &s in self.successors(t) {
                left[s as usize] -= 1;
                if left[s as usize] == 0 {
                    stack.push(s);
                }
            }
        }
        if done == n {
            return None;
        }
        // Every remaining task has a remaining predecessor: follow successors among them.
        let start = (0..n).find(|&t| left[t] > 0)? as u32;
        let mut seen = vec![u32::MAX; n];
        let mut path = Vec::new();
        let mut t = start;
        loop {
            if seen[t as usize] != u32::MAX {
                return Some(path[seen[t as usize] as usize..].to_vec());
            }
            seen[t as usize] = path.len() as u32;
            path.push(t);
            t = *self
                .successors(t)
                .iter()
                .find(|&&s| left[s as usize] > 0)
                .expect("a task left by Kahn's algorithm has a successor left");
        }
    }

    /// Total flops of the tasks.
    pub fn flops(&self) -> f64 {
        self.tasks.iter().map(|t| t.flops).sum()
    }
}

/// Whether the scheduler takes priorities (StarPU: dmdas, dmdasd, prio, ws, lws declare an
/// unbounded range; eager, dm, dmda, dmdar leave it at [0, 0]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Priorities {
    Used,
    Ignored,
}

/// Tiled Cholesky (right-looking, StarPU's cholesky_implicit) of an n x n matrix of
/// `tile` x `tile` tiles of `elem` bytes: POTRF, TRSM, SYRK, GEMM with the example's
/// bottom-level priorities (2nt-2k, 2nt-2k-m, 2nt-2k-n, 2nt-2k-m-n), flops and wont_use
/// hints.
pub fn cholesky(n: u32, tile: u32, elem: u32, prio: Priorities) -> Result<Graph, String> {
    let nt = tiles(n, tile)?;
    let mut g = Graph::default();
    let (potrf, trsm, syrk, gemm) = (
        g.codelet("chol_model_potrf"),
        g.codelet("chol_model_trsm"),
        g.codelet("chol_model_syrk"),
        g.codelet("chol_model_gemm"),
    );
    let ids = tile_handles(&mut g, nt, tile, elem, |i, j| j <= i);
    let a = |i: u32, j: u32| ids[(i * nt + j) as usize];
    let b = tile as f64;
    let p = |v: i64| if prio == Priorities::Used { v } else { 0 };
    let nt_i = nt as i64;
    for k in 0..nt {
        let ki = k as i64;
        let kk = a(k, k);
        g.add_task(
            potrf,
            &[(kk, Mode::RW)],
            p(2 * nt_i - 2 * ki),
            b * b * b / 3.0 + b * b / 2.0 + b / 6.0,
            format!("potrf({k})"),
        );
        for m in k + 1..nt {
            g.add_task(
                trsm,
                &[(kk, Mode::R), (a(m, k), Mode::RW)],
                p(2 * nt_i - 2 * ki - m as i64),
                b * b * (b + 1.0),
                format!("trsm({k},{m})"),
            );
        }
        // As StarPU's cholesky_implicit: the diagonal tile is done with after its TRSMs, a
        // panel tile after its SYRK and GEMMs.
        g.wont_use(kk);
        for nn in k + 1..nt {
            g.add_task(
                syrk,
                &[(a(nn, k), Mode::R), (a(nn, nn), Mode::RW)],
                p(2 * nt_i - 2 * ki - nn as i64),
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
                    p(2 * nt_i - 2 * ki - m as i64 - nn as i64),
                    2.0 * b * b * b,
                    format!("gemm({k},{m},{nn})"),
                );
            }
            g.wont_use(a(nn, k));
        }
    }
    g.finish()?;
    Ok(g)
}

/// Tiled LU without pivoting (StarPU's lu_implicit_example): GETRF, TRSM on the L and U
/// panels, GEMM, with the example's priorities (3nt-3k, 3nt-2k-i, 3nt-k-i-j; set under every
/// scheduler) and flops.
pub fn lu(n: u32, tile: u32, precision: Precision) -> Result<Graph, String> {
    let nt = tiles(n, tile)?;
    let elem = precision.bytes();
    let mut g = Graph::default();
    let [getrf, trsm_ll, trsm_ru, gemm] = lu_codelets(precision).map(|c| g.codelet(&c));
    let ids = tile_handles(&mut g, nt, tile, elem, |_, _| true);
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
    let ids = tile_handles(&mut g, nt, tile, elem, |_, _| true);
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
    g.finish()?;
    Ok(g)
}

/// A graph from a DAG file; errors name the task and what is wrong.
pub fn from_dag(dag: &DagSpec) -> Result<Graph, String> {
    let mut g = Graph::default();
    let mut handle_ids = std::collections::BTreeMap::new();
    for (i, h) in dag.handles.iter().enumerate() {
        if h.size.0 < 0.0 {
            return Err(format!("handles[{i}].size: expected a non-negative size"));
        }
        let fp = match h.shape {
            Some((nx, ny)) => footprint::matrix(nx, ny),
            None => footprint::vector(h.size.0 as u32),
        };
        let id = g.add_handle(h.size.0, fp);
        g.handles[id as usize].home = h.home;
        if handle_ids.insert(h.name.clone(), id).is_some() {
            return Err(format!("handles[{i}].name: `{}` is given twice", h.name));
        }
    }
    let mut task_ids = std::collections::BTreeMap::new();
    for (i, t) in dag.tasks.iter().enumerate() {
        let mut acc = Vec::with_capacity(t.accesses.len());
        for (j, (h, m)) in t.accesses.iter().enumerate() {
            let id = handle_ids
                .get(h)
                .ok_or_else(|| format!("tasks[{i}].accesses[{j}]: no handle named `{h}`"))?;
            acc.push((*id, *m));
        }
        let c = g.codelet(&t.codelet);
        let id = g.add_task(c, &acc, t.priority, t.flops, t.name.clone());
        if task_ids.insert(t.name.clone(), id).is_some() {
            return Err(format!("tasks[{i}].name: `{}` is given twice", t.name));
        }
    }
    for (i, t) in dag.tasks.iter().enumerate() {
        for (j, d) in t.deps.iter().enumerate() {
            let p = task_ids
                .get(d)
                .ok_or_else(|| format!("tasks[{i}].deps[{j}]: no task named `{d}`"))?;
            g.add_dep(*p, i as u32);
        }
    }
    g.finish()?;
    Ok(g)
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
) -> Vec<u32> {
    let fp = footprint::matrix(tile, tile);
    let size = tile as f64 * tile as f64 * elem as f64;
    let mut ids = vec![u32::MAX; (nt * nt) as usize];
    for i in 0..nt {
        for j in 0..nt {
            if keep(i, j) {
                ids[(i * nt + j) as usize] = g.add_handle(size, fp);
            }
        }
    }
    ids
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cholesky_has_starpus_task_counts_and_flops() {
        // nt = 10: POTRF nt, TRSM and SYRK nt(nt-1)/2, GEMM nt(nt-1)(nt-2)/6 (notes 6.1).
        let g = cholesky(9600, 960, 4, Priorities::Used).unwrap();
        let count = |c: &str| {
            let id = g.codelets.iter().position(|x| x == c).unwrap() as u16;
            g.tasks.iter().filter(|t| t.codelet == id).count()
        };
        assert_eq!(count("chol_model_potrf"), 10);
        assert_eq!(count("chol_model_trsm"), 45);
        assert_eq!(count("chol_model_syrk"), 45);
        assert_eq!(count("chol_model_gemm"), 120);
        // Footprints are the attila model files' keys (960 x 960 floats).
        assert_eq!(g.tasks[0].footprint, 0x617e_5fe6);
        let gemm = g
            .tasks
            .iter()
            .find(|t| t.label.starts_with("gemm"))
            .unwrap();
        assert_eq!(gemm.footprint, 0x24c8_4a50);
        assert_eq!(gemm.size, 11_059_200.0);
        // Total: N^3/3 + N^2/2 + N/6 for tiles... per-task flops sum to about N^3/3.
        let n = 9600.0f64;
        assert!((g.flops() / (n * n * n / 3.0) - 1.0).abs() < 0.06);
        // POTRF(0) starts everything; the first TRSMs depend on it only.
        assert_eq!(g.npred[0], 0);
        assert_eq!(g.tasks[0].priority, 20);
        assert_eq!(g.npred[1], 1);
    }

    #[test]
    fn cholesky_carries_the_examples_wont_use_hints() {
        // nt = 3: per step k the diagonal tile (after its nt-1-k TRSMs, or POTRF alone at the
        // last step) and each panel tile (after its SYRK and GEMMs): 3 + 2 + 1 hints.
        let g = cholesky(300, 100, 4, Priorities::Used).unwrap();
        assert_eq!(g.hints.len(), 6);
        // The first: A[0][0] once trsm(0,1) and trsm(0,2) have ended.
        assert_eq!(g.hints[0].1, 2);
        let waiting: Vec<&str> = (0..g.tasks.len())
            .filter(|&t| g.hint_of[t].contains(&0))
            .map(|t| g.tasks[t].label.as_str())
            .collect();
        assert_eq!(waiting, ["trsm(0,1)", "trsm(0,2)"]);
    }

    #[test]
    fn readers_share_and_writers_wait_for_every_reader() {
        let mut g = Graph::default();
        let c = g.codelet("k");
        let h = g.add_handle(8.0, 0);
        let w0 = g.add_task(c, &[(h, Mode::W)], 0, 0.0, "w0".into());
        let r1 = g.add_task(c, &[(h, Mode::R)], 0, 0.0, "r1".into());
        let r2 = g.add_task(c, &[(h, Mode::R)], 0, 0.0, "r2".into());
        let w3 = g.add_task(c, &[(h, Mode::RW)], 0, 0.0, "w3".into());
        let s4 = g.add_task(c, &[(h, Mode::Scratch)], 0, 0.0, "s4".into());
        g.finish().unwrap();
        assert_eq!(g.successors(w0), &[r1, r2]);
        assert_eq!(g.npred[r2 as usize], 1); // not after r1
        assert_eq!(g.npred[w3 as usize], 2); // after both readers
        assert_eq!(g.npred[s4 as usize], 0);
    }

    #[test]
    fn an_explicit_cycle_is_reported_with_its_tasks() {
        let dag: DagSpec = ron::from_str(
            r#"(handles: [(name: "x", size: 8)],
                tasks: [(name: "a", codelet: "k", deps: ["c"]),
                        (name: "b", codelet: "k", accesses: [("x", RW)], deps: ["a"]),
                        (name: "c", codelet: "k", deps: ["b"])])"#,
        )
        .unwrap();
        let e = from_dag(&dag).unwrap_err();
        assert!(e.contains("cycle") && e.contains("a -> b -> c -> a"), "{e}");
        let bad: DagSpec = ron::from_str(
            r#"(handles: [], tasks: [(name: "a", codelet: "k", accesses: [("y", R)])])"#,
        )
        .unwrap();
        assert!(
            from_dag(&bad)
                .unwrap_err()
                .contains("tasks[0].accesses[0]: no handle named `y`")
        );
    }

    #[test]
    fn lu_and_qr_counts() {
        // LU: GETRF nt, TRSM nt(nt-1), GEMM (nt-1)nt(2nt-1)/6 (notes 6.2); nt = 6.
        let g = lu(600, 100, Precision::Single).unwrap();
        assert_eq!(g.tasks.len(), 6 + 30 + 5 * 6 * 11 / 6);
        // QR flat tree: nt GEQRT, nt(nt-1)/2 ORMQR and TSQRT, sum (nt-1-k)^2 TSMQR.
        let g = qr(400, 100, 8).unwrap();
        assert_eq!(g.tasks.len(), 4 + 6 + 6 + (9 + 4 + 1));
    }
}
