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

use hetsim_schema::starpu::footprint;
use hetsim_schema::tasks::{DagSpec, Mode};

/// A piece of data.
#[derive(Debug, Clone, PartialEq)]
pub struct Handle {
    pub size: f64,
    /// Holds data in RAM from the start (see `HandleSpec::home`).
    pub home: bool,
    /// StarPU footprint of the handle (its shape).
    pub footprint: u32,
    /// Where StarPU's total order of handles (`_starpu_compar_handles`, by which a popped
    /// task fetches its buffers) puts it: `(root, path)`. Tiles of one partitioned matrix
    /// share the root and sort by their sub-data indices; a handle registered alone is its
    /// own root (StarPU sorts those by address, taken here as registration order).
    pub order: (u32, u32),
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
    /// Per codelet: its CUDA implementation is synchronous (StarPU's codelet without
    /// `STARPU_CUDA_ASYNC`): the GPU's driver runs it itself, blocked until it ends.
    pub cuda_sync: Vec<bool>,
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
    /// Caps every task's priority into `[lo, hi]`, as StarPU does at submission.
    pub fn cap_priorities(&mut self, lo: i64, hi: i64) {
        for t in &mut self.tasks {
            t.priority = t.priority.clamp(lo, hi);
        }
    }

    pub fn codelet(&mut self, name: &str) -> u16 {
        match self.codelets.iter().position(|c| c == name) {
            Some(i) => i as u16,
            None => {
                self.codelets.push(name.to_string());
                self.cuda_sync.push(false);
                (self.codelets.len() - 1) as u16
            }
        }
    }

    /// Codelet `c`'s CUDA implementation is synchronous.
    pub fn set_cuda_sync(&mut self, c: u16) {
        self.cuda_sync[c as usize] = true;
    }

    /// Whether task `t`'s CUDA kernel is synchronous.
    pub fn cuda_sync_task(&self, t: u32) -> bool {
        self.cuda_sync[self.tasks[t as usize].codelet as usize]
    }

    pub fn add_handle(&mut self, size: f64, footprint: u32) -> u32 {
        let id = self.handles.len() as u32;
        self.handles.push(Handle {
            size,
            footprint,
            home: true,
            order: (id, 0),
        });
        self.groups.push(HandleGroups::default());
        id
    }

    /// The accesses of task `t` in the order a popped task fetches them (StarPU's ordered
    /// buffers): by root; within one partitioned matrix, written buffers first, then those
    /// read, then by sub-data path.
    pub fn fetch_order(&self, t: u32) -> SmallVec<[(u32, Mode); 3]> {
        let mut acc = self.tasks[t as usize].accesses.clone();
        acc.sort_by_key(|&(h, m)| {
            let (root, path) = self.handles[h as usize].order;
            (root, !m.writes(), !m.reads(), path)
        });
        acc
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

    /// StarPU's `starpu_data_wont_use(h)`: its copies become the first to evict, and a dirty
    /// one is written back home. StarPU does it in the callback of a read acquire with
    /// sequential consistency, so like any read it waits for the last writer only: readers
    /// submitted before the hint may still be running (or not yet started) when it fires.
    pub fn wont_use(&mut self, h: u32) {
        let g = &self.groups[h as usize];
        let group = match g.cur_mode {
            Some(Mode::R) => g.prev.clone(),
            _ => g.cur.clone(),
        };
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
        if !(t.flops.is_finite() && t.flops >= 0.0) {
            return Err(format!(
                "tasks[{i}].flops: expected a finite count of zero or more, got {}",
                t.flops
            ));
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::runtime::model::tiled::{cholesky, lu, qr};
    use hetsim_schema::tasks::Precision;

    #[test]
    fn a_task_fetches_in_starpus_handle_order() {
        // StarPU 1.4.10's _starpu_compar_handles: tiles of one partitioned matrix, written
        // first, then by sub-data path. Cholesky gemm(0,2,1) reads A[2][0] and A[1][0] and
        // writes A[2][1]: StarPU's log (mirage, 8 tiles) requests A[2][1] first, then
        // A[1][0] before A[2][0] (path (1,0) < (2,0)).
        let nt = 4;
        let g = cholesky(960 * nt, 960, 4).unwrap();
        let task = |l: &str| g.tasks.iter().position(|t| t.label == l).unwrap() as u32;
        // Tiles j <= i are registered in (i, j) order: A00 A10 A11 A20 A21 ...
        let a = |i: u32, j: u32| i * (i + 1) / 2 + j;
        let order = |l: &str| g.fetch_order(task(l)).to_vec();
        assert_eq!(
            order("gemm(0,2,1)"),
            vec![(a(2, 1), Mode::RW), (a(1, 0), Mode::R), (a(2, 0), Mode::R)]
        );
        assert_eq!(
            order("trsm(0,1)"),
            vec![(a(1, 0), Mode::RW), (a(0, 0), Mode::R)]
        );
        // lu_implicit's tile (i, j) is its sub-data (j, i): gemm(0,1,2) reads (1,0) and (0,2)
        // and writes (1,2), which StarPU sorts as paths (0,1), (2,0) -> (2,1) first, then
        // (0,1), then (2,0): hetsim's (1,2), (1,0), (0,2).
        let g = lu(960 * nt, 960, Precision::Single).unwrap();
        let t = g
            .tasks
            .iter()
            .position(|t| t.label == "gemm(0,1,2)")
            .unwrap() as u32;
        let tile = |i: u32, j: u32| i * nt + j;
        assert_eq!(
            g.fetch_order(t).to_vec(),
            vec![
                (tile(1, 2), Mode::RW),
                (tile(1, 0), Mode::R),
                (tile(0, 2), Mode::R)
            ]
        );
        // Handles registered alone sort by registration, whatever the mode.
        let mut g = Graph::default();
        let c = g.codelet("k");
        let (x, y) = (g.add_handle(8.0, 0), g.add_handle(8.0, 0));
        let t = g.add_task(c, &[(y, Mode::R), (x, Mode::RW)], 0, 1.0, "t".into());
        assert_eq!(g.fetch_order(t).to_vec(), vec![(x, Mode::RW), (y, Mode::R)]);
        let t = g.add_task(c, &[(y, Mode::RW), (x, Mode::R)], 0, 1.0, "u".into());
        assert_eq!(g.fetch_order(t).to_vec(), vec![(x, Mode::R), (y, Mode::RW)]);
    }

    #[test]
    fn cholesky_has_starpus_task_counts_and_flops() {
        // nt = 10: POTRF nt, TRSM and SYRK nt(nt-1)/2, GEMM nt(nt-1)(nt-2)/6 (notes 6.1).
        let g = cholesky(9600, 960, 4).unwrap();
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

    /// The tasks whose end fires hint `id`.
    fn hint_waits_for(g: &Graph, id: u32) -> Vec<&str> {
        (0..g.tasks.len())
            .filter(|&t| g.hint_of[t].contains(&id))
            .map(|t| g.tasks[t].label.as_str())
            .collect()
    }

    #[test]
    fn cholesky_carries_the_examples_wont_use_hints() {
        // nt = 3: per step k the diagonal tile (after its nt-1-k TRSMs, or POTRF alone at the
        // last step) and each panel tile (after its SYRK and GEMMs): 3 + 2 + 1 hints.
        let g = cholesky(300, 100, 4).unwrap();
        assert_eq!(g.hints.len(), 6);
        // Each hint is a read acquire: it waits for the tile's last writer, not for the
        // readers submitted before it. The first, A[0][0], fires when potrf(0) ends (while
        // trsm(0,1) and trsm(0,2) read it); the one on A[1][0] when trsm(0,1) ends, before
        // syrk(0,1) and gemm(0,2,1) read it. StarPU-SimGrid 1.4.10's log of attila ws at 48
        // tiles shows the same: each tile's write-back home starts before its readers run.
        let waiting = |id: u32| hint_waits_for(&g, id);
        assert_eq!(g.hints[0].1, 1);
        assert_eq!(waiting(0), ["potrf(0)"]);
        assert_eq!(waiting(1), ["trsm(0,1)"]);
    }

    #[test]
    fn lu_carries_the_examples_wont_use_hints() {
        // lu_implicit (StarPU 1.4.10, xlu_implicit.c): per step k, the diagonal tile after
        // its TRSMs, then both panel tiles of each i > k after the step's GEMMs. nt = 3:
        // 1 + 4, 1 + 2, 1 hints. Each fires when the tile's last writer ends.
        let g = lu(300, 100, Precision::Single).unwrap();
        assert_eq!(g.hints.len(), 9);
        let waiting = |id: u32| hint_waits_for(&g, id);
        assert_eq!(waiting(0), ["getrf(0)"]);
        assert_eq!(waiting(1), ["trsm_l(0,1)"]);
        assert_eq!(waiting(2), ["trsm_u(0,1)"]);
        assert_eq!(waiting(5), ["getrf(1)"]);
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
