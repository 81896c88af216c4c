//! Coherency (StarPU's coherency.c): each handle's replica per memory node in MSI states,
//! the idle tallies evictions read, StarPU's choice of the copy a transfer reads from, and
//! who owns the data after a write or a drop.

use std::collections::BTreeSet;

use super::suballoc::Slot;
use super::{Data, DataCx};
use crate::runtime::model::graph::Graph;
use crate::runtime::model::machine::Machine;

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
    /// That transfer has started (StarPU's `load_request` is set).
    pub loading: bool,
    /// Being written back before it is freed.
    pub evicting: bool,
    /// Prefetch pins (StarPU's `nb_tasks_prefetch`): other prefetches may not evict it. A
    /// push-time prefetch adds one when it finds the data here or when its request lands
    /// (unless it joined another task's request in flight); the task takes one off once its
    /// popped fetch has all its data.
    pub prefetch_pins: u32,
    pub last_use: u64,
    /// Where in the sub-allocator its buffer is (GPU buffers of at most 4 MiB).
    pub slot: Option<Slot>,
    /// StarPU's `clean` mark on a GPU buffer: set when it is allocated (whatever RAM holds:
    /// a copy from another GPU is clean too) and when a write-back to RAM is asked for; a
    /// task writing it here clears it. Tidying counts these ([`super::tidy`]).
    pub marked_clean: bool,
}

impl Replica {
    pub fn valid(&self) -> bool {
        self.state != Msi::Invalid
    }
}

/// Every handle's replicas, `handle x node`, and per GPU node how many are idle (evictable)
/// in each [`Idle`] class: an eviction that would find no victim learns it without scanning
/// the node's whole LRU (prefetches under memory pressure ask often, and hundreds of idle
/// replicas may all be pinned by queued tasks).
#[derive(Debug, Clone, Default)]
pub struct Replicas {
    pub nodes: usize,
    all: Vec<Replica>,
    /// Per node: the idle replicas of each [`Idle`] class, then the allocated buffers marked
    /// clean (index [`MARKED_CLEAN`]).
    tallies: Vec<[u32; TALLIES]>,
    /// Per node, the idle clean replicas (for a fetch, then for a prefetch) in eviction order:
    /// a fetch's direct reuse takes the first of its size without walking the busy ones.
    clean_idle: Vec<[BTreeSet<(u64, u32)>; 2]>,
}

/// Where [`Replicas`] counts a node's buffers marked clean, after the [`Idle`] classes.
const MARKED_CLEAN: usize = Idle::CLASSES;
const TALLIES: usize = Idle::CLASSES + 1;

/// Which idle replicas an eviction may take: any, or only clean ones (not the only valid
/// copy, so dropping them costs no write-back), and whether replicas pinned by queued tasks'
/// prefetches are spared (an eviction for a prefetch).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Idle {
    pub clean: bool,
    pub for_prefetch: bool,
}

impl Idle {
    const CLASSES: usize = 4;

    fn index(self) -> usize {
        usize::from(self.clean) * 2 + usize::from(self.for_prefetch)
    }

    /// Whether an eviction of this class may take `r` now: it is allocated, no task uses or
    /// fetches it, no copy is coming in or going out; if clean only, it is not the only valid
    /// copy; for a prefetch, no queued task prefetched it.
    pub(super) fn holds(self, r: &Replica) -> bool {
        r.allocated
            && r.refcnt == 0
            && r.incoming.is_none()
            && !r.evicting
            && !(self.clean && r.state == Msi::Owner)
            && !(self.for_prefetch && r.prefetch_pins > 0)
    }

    /// Bit `index()` set for each class `r` belongs to, and bit [`MARKED_CLEAN`] for an
    /// allocated buffer marked clean.
    fn tally_bits(r: &Replica) -> u8 {
        let mut bits = u8::from(r.allocated && r.marked_clean) << MARKED_CLEAN;
        for clean in [false, true] {
            for for_prefetch in [false, true] {
                let class = Idle {
                    clean,
                    for_prefetch,
                };
                if class.holds(r) {
                    bits |= 1 << class.index();
                }
            }
        }
        bits
    }
}

/// A replica borrowed for change: when dropped, its node's tallies follow the change.
pub struct ReplicaMut<'a> {
    owner: &'a mut Replicas,
    at: usize,
    node: usize,
    before: u8,
    /// Its `last_use` when borrowed: its key in the clean idle sets (a field of another name
    /// than the replica's, which the borrow derefs to).
    key_before: u64,
}

impl std::ops::Deref for ReplicaMut<'_> {
    type Target = Replica;
    fn deref(&self) -> &Replica {
        &self.owner.all[self.at]
    }
}

impl std::ops::DerefMut for ReplicaMut<'_> {
    fn deref_mut(&mut self) -> &mut Replica {
        &mut self.owner.all[self.at]
    }
}

impl Drop for ReplicaMut<'_> {
    fn drop(&mut self) {
        // RAM keeps no tallies.
        if self.node == 0 {
            return;
        }
        let r = &self.owner.all[self.at];
        let after = Idle::tally_bits(r);
        let moved = r.last_use != self.key_before;
        if after == self.before && !moved {
            return;
        }
        let h = (self.at / self.owner.nodes) as u32;
        let (old, new) = ((self.key_before, h), (r.last_use, h));
        for (for_prefetch, set) in self.owner.clean_idle[self.node].iter_mut().enumerate() {
            let bit = Idle {
                clean: true,
                for_prefetch: for_prefetch == 1,
            }
            .index();
            if self.before >> bit & 1 == 1 {
                let had = set.remove(&old);
                debug_assert!(had, "{old:?} not in node {}'s clean idle set", self.node);
            }
            if after >> bit & 1 == 1 {
                let fresh = set.insert(new);
                debug_assert!(
                    fresh,
                    "{new:?} already in node {}'s clean idle set",
                    self.node
                );
            }
        }
        let counts = &mut self.owner.tallies[self.node];
        for (i, count) in counts.iter_mut().enumerate() {
            match (self.before >> i & 1, after >> i & 1) {
                (0, 1) => *count += 1,
                (1, 0) => *count -= 1,
                _ => {}
            }
        }
    }
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
        Replicas {
            nodes,
            all,
            tallies: vec![[0; TALLIES]; nodes],
            clean_idle: vec![Default::default(); nodes],
        }
    }

    pub fn get(&self, h: u32, node: u32) -> &Replica {
        &self.all[h as usize * self.nodes + node as usize]
    }

    pub fn get_mut(&mut self, h: u32, node: u32) -> ReplicaMut<'_> {
        let at = h as usize * self.nodes + node as usize;
        let before = if node == 0 {
            0
        } else {
            Idle::tally_bits(&self.all[at])
        };
        let key_before = self.all[at].last_use;
        ReplicaMut {
            owner: self,
            at,
            node: node as usize,
            before,
            key_before,
        }
    }

    /// How many replicas on GPU node `node` are idle in `class` (none counted in RAM).
    pub fn idle(&self, node: u32, class: Idle) -> u32 {
        self.tallies[node as usize][class.index()]
    }

    /// The idle clean replicas on GPU node `node` that an eviction `for_prefetch` may take,
    /// least recently used first.
    pub fn clean_idle(&self, node: u32, for_prefetch: bool) -> &BTreeSet<(u64, u32)> {
        &self.clean_idle[node as usize][usize::from(for_prefetch)]
    }

    /// How many buffers on GPU node `node` are marked clean.
    pub fn marked_clean(&self, node: u32) -> u32 {
        self.tallies[node as usize][MARKED_CLEAN]
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

impl Data {
    /// Where to copy `h` from to bring it to `dst` ([`Replicas::source_for`]).
    pub(crate) fn source_for(&self, cx: &DataCx<'_>, h: u32, dst: u32) -> Option<u32> {
        let size = cx.model.graph.handles[h as usize].size;
        self.replicas.source_for(h, dst, size, &cx.model.machine)
    }

    /// StarPU's `_starpu_update_data_state` for a write: `h`'s copy on `node` becomes the only
    /// valid one (dirty on a GPU), the others' buffers reusable without a write-back. Only
    /// the task that will write it can ask so: every earlier access has ended. Not while
    /// another copy of `h` is moving (a write-back landing later would own it too): the
    /// task's end settles it then.
    pub(crate) fn own(&mut self, cx: &mut DataCx<'_>, h: u32, node: u32) {
        if self.copies.handle_xfers[h as usize] > 0 {
            return;
        }
        self.only_copy_on(cx, h, node);
        if node != 0 {
            self.replicas.get_mut(h, node).marked_clean = false;
            self.mem.tidy_due[node as usize] = true;
        }
    }

    /// `h`'s copy on `node` is its owner, the others are stale (a write there).
    pub(crate) fn only_copy_on(&mut self, cx: &mut DataCx<'_>, h: u32, node: u32) {
        for n in (0..cx.model.machine.nodes.len() as u32).filter(|&n| n != node) {
            self.replicas.get_mut(h, n).state = Msi::Invalid;
        }
        self.replicas.get_mut(h, node).state = Msi::Owner;
    }

    /// A copy of `h` dropped: the last valid copy left, if it is alone, owns the data.
    pub(super) fn owner_of_the_rest(&mut self, cx: &mut DataCx<'_>, h: u32) {
        let mut valid = (0..cx.model.machine.nodes.len() as u32)
            .filter(|&n| self.replicas.get(h, n).state != Msi::Invalid);
        if let (Some(last), None) = (valid.next(), valid.next()) {
            self.replicas.get_mut(h, last).state = Msi::Owner;
        }
    }

    /// Whether `h`'s copy on `node` is its only valid one (evicting it writes it back).
    pub(super) fn only_copy(&self, h: u32, node: u32) -> bool {
        self.replicas.get(h, node).state != Msi::Invalid
            && (0..self.replicas.nodes as u32)
                .all(|n| n == node || self.replicas.get(h, n).state == Msi::Invalid)
    }
}
