//! StarPU's post-mortem trace files for a task-runtime run, as `starpu_fxt_tool` writes them
//! (notes 4.1-4.3), so that tools built for StarPU (StarVZ, pmtool, `starpu_tasks_rec_complete`)
//! read hetsim's runs: `tasks.rec` and `data.rec` (GNU recutils records, times in ms) and
//! `dag.dot` (Graphviz). Job ids and submit orders are task indices + 1; every task counts as
//! submitted at time 0; handles are named by index (`0x<index>`).

use std::fmt::Write as _;

use hetsim_systems::runtime::RuntimeReport;
use hetsim_systems::runtime::graph::kernel;

/// `tasks.rec`: one record per task, in submission order.
pub fn tasks_rec(r: &RuntimeReport) -> Vec<u8> {
    let g = &r.graph;
    let mut preds: Vec<Vec<u32>> = vec![Vec::new(); g.tasks.len()];
    for t in 0..g.tasks.len() as u32 {
        for &s in g.successors(t) {
            preds[s as usize].push(t);
        }
    }
    let mut out = String::with_capacity(g.tasks.len() * 300);
    for (t, task) in g.tasks.iter().enumerate() {
        let model = &g.codelets[task.codelet as usize];
        let (start, end, worker) = r.task_times[t];
        let _ = writeln!(out, "Name: {}", kernel(model));
        let _ = writeln!(out, "Model: {model}");
        let _ = writeln!(out, "JobId: {}", t + 1);
        let _ = writeln!(out, "SubmitOrder: {}", t + 1);
        let _ = writeln!(out, "Priority: {}", task.priority);
        if !preds[t].is_empty() {
            out.push_str("DependsOn:");
            for p in &preds[t] {
                let _ = write!(out, " {}", p + 1);
            }
            out.push('\n');
        }
        let _ = writeln!(out, "WorkerId: {worker}");
        let node = r.worker_nodes.get(worker as usize).copied().unwrap_or(0);
        let _ = writeln!(out, "MemoryNode: {node}");
        let _ = writeln!(out, "SubmitTime: {:.9}", 0.0);
        let _ = writeln!(out, "StartTime: {:.9}", start * 1e3);
        let _ = writeln!(out, "EndTime: {:.9}", end * 1e3);
        let _ = writeln!(out, "Footprint: {:x}", task.footprint);
        let _ = writeln!(out, "GFlop: {:.6}", task.flops / 1e9);
        let _ = writeln!(out, "Parameters: {}", task.label);
        // Space-separated lists, one value per access.
        let list = |out: &mut String, key: &str, item: &dyn Fn(&mut String, usize)| {
            out.push_str(key);
            out.push_str(": ");
            for i in 0..task.accesses.len() {
                if i > 0 {
                    out.push(' ');
                }
                item(out, i);
            }
            out.push('\n');
        };
        let accesses = &task.accesses;
        list(&mut out, "Handles", &|out, i| {
            let _ = write!(out, "0x{:x}", accesses[i].0);
        });
        list(&mut out, "Modes", &|out, i| {
            out.push_str(accesses[i].1.letter())
        });
        list(&mut out, "Sizes", &|out, i| {
            let _ = write!(out, "{}", g.handles[accesses[i].0 as usize].size as u64);
        });
        let _ = writeln!(out, "MPIRank: 0");
        out.push('\n');
    }
    out.into_bytes()
}

/// `data.rec`: one record per data handle (home node 0 is RAM; -1: no home data).
pub fn data_rec(r: &RuntimeReport) -> Vec<u8> {
    let mut out = String::new();
    for (h, handle) in r.graph.handles.iter().enumerate() {
        let _ = writeln!(out, "Handle: 0x{h:x}");
        let _ = writeln!(out, "HomeNode: {}", if handle.home { 0 } else { -1 });
        let _ = writeln!(out, "MPIRank: 0");
        let _ = writeln!(out, "Size: {}", handle.size as u64);
        let _ = writeln!(out, "Footprint: {:x}", handle.footprint);
        out.push('\n');
    }
    out.into_bytes()
}

/// `dag.dot`: the task graph, nodes labelled and coloured by kernel.
pub fn dag_dot(r: &RuntimeReport) -> Vec<u8> {
    let g = &r.graph;
    let mut out = String::from("digraph G {\n\tcolor=white\n\tbgcolor=white\n");
    for (t, task) in g.tasks.iter().enumerate() {
        let name = kernel(&g.codelets[task.codelet as usize]);
        let colour = PALETTE[task.codelet as usize % PALETTE.len()];
        let _ = writeln!(
            out,
            "\t \"task_{}\" [ style=filled, label=\"{}\", fillcolor=\"{colour}\"]",
            t + 1,
            name
        );
    }
    for t in 0..g.tasks.len() as u32 {
        for &s in g.successors(t) {
            let _ = writeln!(out, "\t \"task_{}\"->\"task_{}\"", t + 1, s + 1);
        }
    }
    out.push_str("}\n");
    out.into_bytes()
}

const PALETTE: [&str; 8] = [
    "#4e79a7", "#f28e2b", "#e15759", "#76b7b2", "#59a14f", "#edc948", "#b07aa1", "#ff9da7",
];
