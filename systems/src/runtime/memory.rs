//! Data on memory nodes: each handle's replica per node in MSI states, and StarPU's choice of
//! the copy a transfer reads from.

use super::graph::Graph;
use super::machine::Machine;

/// A replica's coherency state (MSI).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Msi {
    /// No valid data here.
    #[default]
    Invalid,
    /// Valid, and so may be other copies.
    Shared,
    /// The only valid copy (written here).
    Owner,
}

/// One handle's copy on one memory node.
#[derive(Debug, Clone, Copy, Default)]
pub struct Replica {
    pub state: Msi,
    pub allocated: bool,
    /// Tasks using or fetching it.
    pub refcnt: u32,
    /// A transfer bringing it here.
    pub incoming: Option<u32>,
    /// Being written back before it is freed.
    pub evicting: bool,
    /// Queued tasks that prefetched it (StarPU's `nb_tasks_prefetch`): other prefetches
    /// may not evict it.
    pub prefetch_pins: u32,
    pub last_use: u64,
}

impl Replica {
    pub fn valid(&self) -> bool {
        self.state != Msi::Invalid
    }
}

/// Every handle's replicas, `handle x node`.
#[derive(Debug, Clone, Default)]
pub struct Replicas {
    pub nodes: usize,
    pub all: Vec<Replica>,
}

impl Replicas {
    /// Handles with home data start valid (and owned) in RAM, node 0.
    pub fn new(graph: &Graph, nodes: usize) -> Replicas {
        let mut all = vec![Replica::default(); graph.handles.len() * nodes];
        for (h, handle) in graph.handles.iter().enumerate() {
            if handle.home {
                all[h * nodes] = Replica {
                    state: Msi::Owner,
                    allocated: true,
                    ..Default::default()
                };
            }
        }
        Replicas { nodes, all }
    }

    pub fn get(&self, h: u32, node: u32) -> &Replica {
        &self.all[h as usize * self.nodes + node as usize]
    }

    pub fn get_mut(&mut self, h: u32, node: u32) -> &mut Replica {
        &mut self.all[h as usize * self.nodes + node as usize]
    }

    /// Where to copy handle `h` from to bring it to `dst` (StarPU's source selection): the
    /// valid copy with a direct link and the smallest prediction, first in node order on
    /// ties; when no copy is direct or a prediction is unknown, RAM if valid, else a GPU.
    pub fn source_for(&self, h: u32, dst: u32, size: f64, machine: &Machine) -> Option<u32> {
        let mut best: Option<(f64, u32)> = None;
        let mut unknown = false;
        for n in 0..self.nodes as u32 {
            if n == dst || !self.get(h, n).valid() || !machine.direct[n as usize][dst as usize] {
                continue;
            }
            let p = machine.predict(n, dst, size);
            unknown |= p <= 0.0;
            if best.is_none_or(|(b, _)| p < b) {
                best = Some((p, n));
            }
        }
        match best {
            Some((_, n)) if !unknown => Some(n),
            _ => (0..self.nodes as u32).find(|&n| self.get(h, n).valid()),
        }
    }
}
