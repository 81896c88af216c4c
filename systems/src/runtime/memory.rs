//! Data on memory nodes: each handle's replica per node in MSI states, StarPU's choice of the
//! copy a transfer reads from, allocation (StarPU's sub-allocator, cudaMalloc
//! and cudaFree costs a node's driver owes), the LRU eviction order with write-back, and
//! push-time prefetch with its pins.

use std::collections::BTreeSet;

use super::core::Runtime;
use super::data::lru::Lru;
use super::data::suballoc::{CHUNK, Driver, Slot, SubAllocator};
use super::model::graph::Graph;
use super::model::machine::Machine;
use super::model::{CUDA_FREE, CUDA_MALLOC, MIB, PINNED_PER_MIB};
use super::transfers::Level;

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
    /// task writing it here clears it. Tidying counts these ([`super::data::tidy`]).
    pub marked_clean: bool,
}

impl Replica {
    pub fn valid(&self) -> bool {
        self.state != Msi::Invalid
    }
}

/// Memory nodes' allocation state, the eviction order, and push-time prefetch bookkeeping.
#[derive(Debug, Clone, Default)]
pub struct Memory {
    /// Bytes allocated per node, counted as StarPU counts them against its limit
    /// (sub-allocated buffers by their 32 MiB chunks), and the most ever.
    pub used: Vec<f64>,
    pub peak: Vec<f64>,
    /// Allocated GPU replicas per node by last use: the eviction order.
    pub lru: Vec<Lru>,
    /// Each node's sub-allocator (StarPU's 32 MiB chunks for buffers of at most 4 MiB).
    pub sub: Vec<SubAllocator>,
    /// Allocation costs (cudaMalloc, cudaFree, pinned RAM) each node's driver still owes:
    /// paid by the next copy into the node or the next task started there.
    pub debt: Vec<f64>,
    /// When the last cudaMalloc or cudaFree charged ends, in seconds: StarPU-SimGrid sleeps
    /// for them under one mutex shared by every GPU (`cuda_alloc_mutex`), so the next one,
    /// on any GPU, starts after it.
    pub cuda_alloc_free_s: f64,
    /// Tasks waiting for memory on each node.
    pub mem_wait: Vec<Vec<u32>>,
    /// Tasks whose push-time prefetch pinned their inputs, until their fetch has them all.
    pub prefetched: Vec<bool>,
    /// Nodes where memory was freed, or prefetch pins dropped, this step: their requests
    /// waiting for memory try again.
    pub freed: Vec<bool>,
    /// A prefetch into the node found no memory: no prefetch into it starts, from any node,
    /// until memory frees up there or a copy its driver handles ends (StarPU's progress
    /// stops the node's prefetch lists, and goes through them again at its next wake-up).
    pub prefetch_stuck: Vec<bool>,
    /// Eviction write-backs in flight per node, which its driver waits for.
    pub writebacks: Vec<u32>,
    /// Per node, the bytes an eviction still has to free once its write-back in flight is
    /// done, and whether a prefetch evicts (StarPU writes victims back one at a time).
    pub reclaim_left: Vec<(f64, bool)>,
    /// Tasks popped and not ended that write each handle (StarPU: the handle's mode is W
    /// and some node holds references): tidying leaves its buffers alone.
    pub writing: Vec<u32>,
    /// The node of the pushed, unfinished task that writes each handle: a copy of the handle
    /// landing there is its only valid one (StarPU's request carries the task's mode, and
    /// its end updates the replicas' states with it).
    pub writer_node: Vec<Option<u32>>,
    /// GPU nodes whose buffers, or their clean marks, changed since they were last tidied.
    pub tidy_due: Vec<bool>,
    /// StarPU's `mc_dirty_head` per node: where tidying resumes in the eviction order (a
    /// buffer pushed back dirty sets it when unset; removing it moves it to the next one).
    pub dirty_head: Vec<Option<(u64, u32)>>,
}

impl Memory {
    /// Nothing allocated on `nodes` memory nodes, for `tasks` tasks and `handles` handles.
    pub fn new(nodes: usize, tasks: usize, handles: usize) -> Memory {
        Memory {
            used: vec![0.0; nodes],
            peak: vec![0.0; nodes],
            lru: vec![Lru::new(handles); nodes],
            sub: vec![SubAllocator::default(); nodes],
            debt: vec![0.0; nodes],
            cuda_alloc_free_s: 0.0,
            mem_wait: vec![Vec::new(); nodes],
            prefetched: vec![false; tasks],
            freed: vec![false; nodes],
            prefetch_stuck: vec![false; nodes],
            writebacks: vec![0; nodes],
            reclaim_left: vec![(0.0, false); nodes],
            writing: vec![0; handles],
            writer_node: vec![None; handles],
            tidy_due: vec![false; nodes],
            dirty_head: vec![None; nodes],
        }
    }

    /// Whether node `n` is writing eviction victims back (StarPU's `_starpu_is_reclaiming`):
    /// its driver waits for them and nothing else is allocated there meanwhile.
    pub fn reclaiming(&self, n: usize) -> bool {
        self.writebacks[n] > 0
    }

    /// StarPU's MC_LIST_PUSH_BACK: a buffer goes last in node `n`'s eviction order; a dirty
    /// one becomes the dirty head if there is none.
    fn push_back(&mut self, n: usize, key: (u64, u32), clean: bool) {
        self.lru[n].insert(key);
        if !clean && self.dirty_head[n].is_none() {
            self.dirty_head[n] = Some(key);
        }
    }

    /// StarPU's MC_LIST_ERASE: a buffer leaves node `n`'s eviction order; if it was the
    /// dirty head, the next buffer is.
    fn erase(&mut self, n: usize, key: (u64, u32)) {
        if self.dirty_head[n] == Some(key) {
            self.dirty_head[n] = self.lru[n].after(key);
        }
        self.lru[n].remove(key);
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
    fn holds(self, r: &Replica) -> bool {
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

/// Whether an allocation may evict replicas, and which.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Evict {
    No,
    /// A task's fetch: any idle replica.
    ForFetch,
    /// A push-time prefetch: idle replicas no other queued task prefetched.
    ForPrefetch,
}

impl Evict {
    /// What a request of this level may evict when it allocates its destination.
    pub fn for_level(level: Level) -> Evict {
        match level {
            Level::Fetch => Evict::ForFetch,
            Level::Prefetch => Evict::ForPrefetch,
            Level::Idle => Evict::No,
        }
    }
}

impl Runtime {
    /// dm* prefetch at push: request the task's inputs on `w`'s node. Each is pinned against
    /// other prefetches' evictions once it is there, until the popped task's fetch has all its
    /// data; buffers are allocated only when the requests start (StarPU allocates as it
    /// handles a request).
    pub(crate) fn prefetch(&mut self, t: u32, w: usize) {
        if !self.model.flags.prefetch {
            return;
        }
        let node = self.model.machine.workers[w].node;
        self.data.mem.prefetched[t as usize] = true;
        let prio = self.priority(t);
        let acc = self.model.graph.tasks[t as usize].accesses.clone();
        for (h, mode) in acc {
            if !mode.reads() {
                continue;
            }
            if mode.writes() {
                self.data.mem.writer_node[h as usize] = Some(node);
            }
            let r = *self.data.replicas.get(h, node);
            if r.valid() {
                // StarPU: a request finding the data there pins them and marks its chunk
                // recently used; for a write, that copy is the only valid one from now on.
                self.data.replicas.get_mut(h, node).prefetch_pins += 1;
                if mode.writes() {
                    self.own(h, node);
                }
                self.touch(h, node);
            } else if let Some(l) = r.incoming {
                // Requested for another task: this one's request joins a direct copy (a relay
                // through RAM gets the pin now, as `carry_pins` gives it).
                let loader = &self.data.copies.xfers[l as usize];
                if loader.dst == node {
                    self.join(h, loader.src, node, prio, t);
                } else {
                    self.carry_pins(h, node, 1);
                }
            } else {
                self.request(h, node, Level::Prefetch, prio, None);
                if let Some(l) = self.data.replicas.get(h, node).incoming {
                    self.data.copies.xfers[l as usize].task = Some(t);
                }
                self.carry_pins(h, node, 1);
            }
        }
    }

    /// StarPU's `_starpu_update_data_state` for a write: `h`'s copy on `node` becomes the only
    /// valid one (dirty on a GPU), the others' buffers reusable without a write-back. Only
    /// the task that will write it can ask so: every earlier access has ended. Not while
    /// another copy of `h` is moving (a write-back landing later would own it too): the
    /// task's end settles it then.
    pub(crate) fn own(&mut self, h: u32, node: u32) {
        if self.data.copies.handle_xfers[h as usize] > 0 {
            return;
        }
        self.only_copy_on(h, node);
        if node != 0 {
            self.data.replicas.get_mut(h, node).marked_clean = false;
            self.data.mem.tidy_due[node as usize] = true;
        }
    }

    /// `h`'s copy on `node` is its owner, the others are stale (a write there).
    pub(crate) fn only_copy_on(&mut self, h: u32, node: u32) {
        for n in (0..self.model.machine.nodes.len() as u32).filter(|&n| n != node) {
            self.data.replicas.get_mut(h, n).state = Msi::Invalid;
        }
        self.data.replicas.get_mut(h, node).state = Msi::Owner;
    }

    /// The task leaves its worker's queue: its prefetch pins go.
    pub(crate) fn unpin_prefetch(&mut self, t: u32, node: u32) {
        if std::mem::take(&mut self.data.mem.prefetched[t as usize]) {
            let acc = self.model.graph.tasks[t as usize].accesses.clone();
            for (h, mode) in acc {
                // StarPU's decrement, which may take another task's pin when this one's
                // was lost or has not landed yet.
                if mode.reads() && self.data.replicas.get(h, node).prefetch_pins > 0 {
                    self.data.replicas.get_mut(h, node).prefetch_pins -= 1;
                }
            }
            self.data.mem.freed[node as usize] = true;
        }
    }

    /// Allocates `h` on `node` as StarPU does ([`Runtime::place`] on a GPU). False: not
    /// now. In RAM only handles without home data get here, in pinned memory.
    pub(crate) fn allocate(&mut self, h: u32, node: u32, evict: Evict) -> bool {
        if self.data.replicas.get(h, node).allocated {
            return true;
        }
        let size = self.model.graph.handles[h as usize].size;
        let n = node as usize;
        // StarPU's driver writes an eviction's victim back synchronously and meanwhile
        // allocates nothing more there (`_starpu_is_reclaiming`: every request into the node
        // waits). Else prefetches chain write-backs, and the driver, which waits for them
        // all, stalls: mirage dmda, 3 GPUs + 8 CPUs, 512 MB, 64 tiles, GPU 0 ran no task for
        // 210 ms (63 write-backs); StarPU's longest such gap there is 30 ms, hetsim's now 22.
        if self.data.mem.reclaiming(n) {
            return false;
        }
        if node == 0 {
            if self.model.flags.overheads && self.model.machine.nodes.len() > 1 {
                self.data.mem.debt[0] += PINNED_PER_MIB * size / MIB;
            }
        } else {
            let Some(slot) = self.place(n, size, evict) else {
                return false;
            };
            self.data.replicas.get_mut(h, node).slot = slot;
        }
        let tick = self.data.tick;
        let mut r = self.data.replicas.get_mut(h, node);
        r.allocated = true;
        r.last_use = tick;
        // A new GPU buffer is clean whatever RAM holds (StarPU's _starpu_memchunk_init): only
        // a task writing it here dirties it.
        r.marked_clean = node != 0;
        drop(r);
        if node != 0 {
            self.data.mem.push_back(n, (tick, h), true);
            self.data.mem.tidy_due[n] = true;
        }
        true
    }

    /// A buffer of `size` bytes on GPU node `n` as StarPU's `_starpu_allocate_interface`: a
    /// new one if memory allows; else, as `evict` allows, a clean idle buffer of that size
    /// taken over, or LRU replicas evicted for twice the size and another try, three tries
    /// in all; while victims are written back, wait. `None`: no buffer now; `Some(slot)`: its
    /// place in the sub-allocator, if any. (StarPU's memchunk cache, tried first, only holds
    /// unregistered data's buffers: empty here.)
    fn place(&mut self, n: usize, size: f64, evict: Evict) -> Option<Option<Slot>> {
        let node = n as u32;
        let prefetch = evict == Evict::ForPrefetch;
        for _ in 0..3 {
            if let Some(slot) = self.malloc(n, size) {
                return Some(slot);
            }
            if evict == Evict::No {
                return None;
            }
            if !prefetch {
                self.log('V', |rt| format!("{node} {}", rt.eviction_order(node)));
            }
            if let Some(v) = self.clean_victim(node, size, prefetch) {
                return Some(self.take_over(v, node, prefetch));
            }
            self.evict(node, 2.0 * size, prefetch);
            if self.data.mem.reclaiming(n) {
                return None;
            }
        }
        None
    }

    /// A new GPU buffer on node `n` if memory allows: from the sub-allocator when small
    /// enough (a cudaMalloc only for a new chunk, which counts 32 MiB), else a cudaMalloc
    /// of its own. `None`: out of memory.
    fn malloc(&mut self, n: usize, size: f64) -> Option<Option<Slot>> {
        let cap = self.model.machine.nodes[n].capacity;
        let fits = |bytes: f64| !self.model.flags.mem_limit || self.data.mem.used[n] + bytes <= cap;
        let (slot, driver) = if SubAllocator::serves(size) {
            let may_grow = fits(CHUNK);
            let (slot, driver) = self.data.mem.sub[n].alloc(size, may_grow)?;
            (Some(slot), driver)
        } else if fits(size) {
            (None, Driver::CudaMalloc)
        } else {
            return None;
        };
        if driver == Driver::CudaMalloc {
            self.data.mem.used[n] += if slot.is_some() { CHUNK } else { size };
            self.data.mem.peak[n] = self.data.mem.peak[n].max(self.data.mem.used[n]);
            if self.model.flags.overheads {
                self.charge_cuda_alloc(n, CUDA_MALLOC);
            }
        }
        Some(slot)
    }

    /// A buffer goes back to node `n`'s allocator: a sub-allocated one to its chunk (a chunk
    /// given back no longer counts), another with a cudaFree.
    fn give_back(&mut self, n: usize, size: f64, slot: Option<Slot>) {
        let driver = match slot {
            Some(slot) => self.data.mem.sub[n].free(slot, size),
            None => Driver::CudaFree,
        };
        if driver == Driver::CudaFree {
            self.data.mem.used[n] -= if slot.is_some() { CHUNK } else { size };
            if self.model.flags.overheads {
                self.charge_cuda_alloc(n, CUDA_FREE);
            }
        }
    }

    /// Charges node `n`'s driver a cudaMalloc or cudaFree of `cost` seconds, after the ones
    /// it already owes and after the last one on any GPU (they share StarPU-SimGrid's mutex).
    fn charge_cuda_alloc(&mut self, n: usize, cost: f64) {
        let now = self.out.now.as_secs_f64();
        let start = (now + self.data.mem.debt[n]).max(self.data.mem.cuda_alloc_free_s);
        self.data.mem.cuda_alloc_free_s = start + cost;
        self.data.mem.debt[n] = self.data.mem.cuda_alloc_free_s - now;
    }

    /// A `wont_use` hint came due: `h`'s GPU copies go to the front of the eviction order,
    /// and a dirty one is written back to RAM when its link is idle (an IDLEFETCH request),
    /// so that evicting it later costs nothing.
    pub(crate) fn evict_first(&mut self, h: u32) {
        for node in 1..self.model.machine.nodes.len() as u32 {
            let mut r = self.data.replicas.get_mut(h, node);
            if r.allocated {
                let old = r.last_use;
                r.last_use = 0;
                // Dirty: valid here while RAM (the home) is not.
                let dirty = r.state != Msi::Invalid && !r.evicting;
                // StarPU marks it clean now: the caller schedules the write-back.
                r.marked_clean = true;
                drop(r);
                self.data.mem.erase(node as usize, (old, h));
                self.data.mem.lru[node as usize].insert((0, h));
                if dirty && self.data.replicas.get(h, 0).state == Msi::Invalid {
                    self.allocate(h, 0, Evict::No);
                    self.request(h, 0, Level::Idle, 0, None);
                }
            }
        }
    }

    /// Marks a use of `h` on `node` (moves it to the back of the eviction order).
    pub(crate) fn touch(&mut self, h: u32, node: u32) {
        let tick = self.data.tick;
        let mut r = self.data.replicas.get_mut(h, node);
        let old = r.last_use;
        r.last_use = tick;
        let (allocated, clean) = (r.allocated, r.marked_clean);
        drop(r);
        if node != 0 && allocated {
            self.data.mem.erase(node as usize, (old, h));
            self.data.mem.push_back(node as usize, (tick, h), clean);
        }
    }

    /// `node`'s first 400 buffers in eviction order, one letter each, for the log's V line
    /// (as the oracle's reuse-log.patch writes it at a fetch's direct reuse): `R` in use or
    /// moving, `O` the only valid copy (dirty), `P` pinned by a queued task's prefetch, `I`
    /// none of these (what a prefetch may take over).
    fn eviction_order(&self, node: u32) -> String {
        let code = |r: &Replica| match r {
            r if r.refcnt > 0 || r.incoming.is_some() || r.evicting => 'R',
            r if r.state == Msi::Owner => 'O',
            r if r.prefetch_pins > 0 => 'P',
            _ => 'I',
        };
        self.data.mem.lru[node as usize]
            .iter()
            .take(400)
            .map(|(_, h)| code(self.data.replicas.get(h, node)))
            .collect()
    }

    /// StarPU's direct reuse (try_to_reuse_potentially_in_use_mc): the least recently used
    /// evictable replica of the same size that is not the only valid copy.
    fn clean_victim(&self, node: u32, size: f64, for_prefetch: bool) -> Option<u32> {
        let idle = self.data.replicas.clean_idle(node, for_prefetch);
        debug_assert_eq!(
            idle.iter().copied().collect::<Vec<_>>(),
            self.data.mem.lru[node as usize]
                .iter()
                .filter(|&(_, h)| Idle {
                    clean: true,
                    for_prefetch
                }
                .holds(self.data.replicas.get(h, node)))
                .collect::<Vec<_>>(),
            "clean idle replicas on {node}"
        );
        idle.iter()
            .map(|&(_, h)| h)
            .find(|&h| self.model.graph.handles[h as usize].size == size)
    }

    /// Frees at least `need` bytes on `node` by evicting idle replicas, least recently used
    /// first (shared ones dropped, owners written back to RAM). For a prefetch, replicas
    /// other queued tasks prefetched are kept.
    pub(crate) fn evict(&mut self, node: u32, need: f64, for_prefetch: bool) {
        let class = Idle {
            clean: false,
            for_prefetch,
        };
        let idle = self.data.replicas.idle(node, class) as usize;
        debug_assert_eq!(
            idle as u32,
            self.idle_recount(node, class),
            "idle count on {node}"
        );
        // Victims in LRU order until `need` bytes are freed or every idle replica is taken;
        // the first one that must be written back ends the pass, which goes on when that
        // write-back is done (StarPU's transfer_subtree_to_node waits for each in turn).
        let mut victims = Vec::new();
        let mut counted = 0.0;
        for (_, h) in self.data.mem.lru[node as usize].iter() {
            if counted >= need || victims.len() == idle {
                break;
            }
            if class.holds(self.data.replicas.get(h, node)) {
                victims.push(h);
                counted += self.model.graph.handles[h as usize].size;
                if self.only_copy(h, node) {
                    break;
                }
            }
        }
        for h in victims {
            self.throw(h, node, for_prefetch);
        }
        if self.data.mem.reclaiming(node as usize) {
            self.data.mem.reclaim_left[node as usize] = (need - counted, for_prefetch);
        }
    }

    /// Whether `h`'s copy on `node` is its only valid one (evicting it writes it back).
    fn only_copy(&self, h: u32, node: u32) -> bool {
        self.data.replicas.get(h, node).state != Msi::Invalid
            && (0..self.model.machine.nodes.len() as u32)
                .all(|n| n == node || self.data.replicas.get(h, n).state == Msi::Invalid)
    }

    /// The replicas of `class` on `node`, counted the long way: what `Replicas::idle` keeps.
    fn idle_recount(&self, node: u32, class: Idle) -> u32 {
        let lru = &self.data.mem.lru[node as usize];
        lru.iter()
            .filter(|&(_, h)| class.holds(self.data.replicas.get(h, node)))
            .count() as u32
    }

    /// Evicts replica `h` from `node`: the only valid copy is written back to RAM first and
    /// freed when that is done; another is dropped now. (`for_prefetch`: a prefetch evicts
    /// it.)
    fn throw(&mut self, h: u32, node: u32, for_prefetch: bool) {
        self.log_eviction(h, node, "free", for_prefetch);
        if self.only_copy(h, node) {
            // Copies to GPUs without peer access may ride on the write-back (`request`).
            self.data.replicas.get_mut(h, node).evicting = true;
            self.out.report.writebacks += 1;
            self.data.mem.writebacks[node as usize] += 1;
            self.log('b', |rt| {
                format!("{node} {} 1 {}", rt.handle_name(h), u8::from(for_prefetch))
            });
            self.allocate(h, 0, Evict::No);
            self.new_xfer(h, node, 0, true, Level::Fetch, 0);
        } else {
            self.free(h, node);
            self.owner_of_the_rest(h);
        }
        self.out.report.evictions += 1;
    }

    /// StarPU's direct reuse: clean replica `h` on `node` (not the only valid copy) is
    /// dropped and its buffer changes hands, with no write-back and no free. Its place in the
    /// sub-allocator, if any.
    fn take_over(&mut self, h: u32, node: u32, for_prefetch: bool) -> Option<Slot> {
        self.log_eviction(h, node, "reuse", for_prefetch);
        debug_assert!(!self.only_copy(h, node), "taking over the only valid copy");
        let (_, slot) = self.unallocate(h, node);
        self.owner_of_the_rest(h);
        self.out.report.evictions += 1;
        slot
    }

    /// The log's line for an eviction: how the buffer goes (`reuse` or `free`), whether a
    /// prefetch evicts it, and the replica's prefetch pins.
    fn log_eviction(&mut self, h: u32, node: u32, how: &str, for_prefetch: bool) {
        let pins = self.data.replicas.get(h, node).prefetch_pins;
        self.log('E', |rt| {
            let level = if for_prefetch { 1 } else { 0 };
            format!("{node} {} {how} {level} {pins}", rt.handle_name(h))
        });
    }

    /// A copy of `h` dropped: the last valid copy left, if it is alone, owns the data.
    fn owner_of_the_rest(&mut self, h: u32) {
        let mut valid = (0..self.model.machine.nodes.len() as u32)
            .filter(|&n| self.data.replicas.get(h, n).state != Msi::Invalid);
        if let (Some(last), None) = (valid.next(), valid.next()) {
            self.data.replicas.get_mut(h, last).state = Msi::Owner;
        }
    }

    /// Frees `h`'s buffer on `node`, evicted: a sub-allocated one goes back to its chunk,
    /// another with a cudaFree (StarPU frees an evicted buffer; its memchunk cache only
    /// takes unregistered data's).
    pub(crate) fn free(&mut self, h: u32, node: u32) {
        let (size, slot) = self.unallocate(h, node);
        self.give_back(node as usize, size, slot);
    }

    /// `h`'s buffer on `node` leaves it: its size and place, for the caller to free or
    /// hand over. Tasks waiting for memory there try again.
    fn unallocate(&mut self, h: u32, node: u32) -> (f64, Option<Slot>) {
        let size = self.model.graph.handles[h as usize].size;
        let mut r = self.data.replicas.get_mut(h, node);
        let last = r.last_use;
        r.allocated = false;
        r.state = Msi::Invalid;
        r.evicting = false;
        let slot = r.slot.take();
        drop(r);
        self.data.mem.erase(node as usize, (last, h));
        self.data.mem.freed[node as usize] = true;
        self.data.mem.tidy_due[node as usize] = true;
        let waiting = std::mem::take(&mut self.data.mem.mem_wait[node as usize]);
        for t in waiting {
            let w = self.tasks.worker_of[t as usize];
            self.pacing.wake(w);
        }
        (size, slot)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::runtime::setup::{
        TEST_FLAGS, a_and_b_written_on_the_gpu, four_handles, test_runtime,
    };

    /// The copy writing `h` back to RAM.
    fn write_back_of(rt: &Runtime, h: u32) -> u32 {
        rt.data.replicas.get(h, 0).incoming.expect("a write-back")
    }

    #[test]
    fn the_least_recently_used_idle_replica_goes_first() {
        let mut rt = four_handles();
        assert!(rt.allocate(0, 1, Evict::ForFetch));
        rt.data.tick += 1;
        assert!(rt.allocate(1, 1, Evict::ForFetch));
        // a was used after b: b is now the least recently used.
        rt.data.tick += 1;
        rt.touch(0, 1);
        // No room for c without eviction, and none allowed.
        assert!(!rt.allocate(2, 1, Evict::No));
        assert!(rt.allocate(2, 1, Evict::ForFetch));
        assert!(rt.data.replicas.get(0, 1).allocated && !rt.data.replicas.get(1, 1).allocated);
        // b had its valid copy in RAM: dropped, no write-back; its buffer was reused by c
        // (same size, no cudaMalloc: memory use unchanged).
        assert_eq!((rt.out.report.evictions, rt.out.report.writebacks), (1, 0));
        assert_eq!(rt.data.mem.used[1], 2e9);
    }

    #[test]
    fn a_new_buffer_is_marked_clean_whatever_ram_holds() {
        // StarPU's _starpu_memchunk_init marks every new chunk clean; only a task writing it
        // dirties it. So a copy of b, whose only valid data are on another GPU (RAM lacks
        // them), counts as clean for tidying, as a copy of a RAM-backed a does.
        let mut rt = four_handles();
        rt.data.replicas.get_mut(1, 0).state = Msi::Invalid;
        assert!(rt.allocate(0, 1, Evict::ForFetch));
        assert!(rt.allocate(1, 1, Evict::ForFetch));
        assert!(rt.data.replicas.get(0, 1).marked_clean && rt.data.replicas.get(1, 1).marked_clean);
        assert_eq!(rt.data.replicas.marked_clean(1), 2);
        // No dirty buffer on the node: tidying has nowhere to start.
        assert_eq!(rt.data.mem.dirty_head[1], None);
    }

    #[test]
    fn a_replica_in_use_is_never_evicted_and_a_dirty_one_is_written_back() {
        let mut rt = four_handles();
        assert!(rt.allocate(0, 1, Evict::ForFetch));
        rt.data.tick += 1;
        assert!(rt.allocate(1, 1, Evict::ForFetch));
        // a is in use by a task; b was written on the GPU (the only valid copy).
        rt.data.replicas.get_mut(0, 1).refcnt = 1;
        *rt.data.replicas.get_mut(1, 1) = Replica {
            state: Msi::Owner,
            ..*rt.data.replicas.get(1, 1)
        };
        rt.data.replicas.get_mut(1, 0).state = Msi::Invalid;
        // c needs room: b is the only idle replica; it is written back to RAM first (a copy
        // GPU -> RAM starts) and freed when it lands, so c waits.
        assert!(!rt.allocate(2, 1, Evict::ForFetch));
        assert_eq!((rt.out.report.evictions, rt.out.report.writebacks), (1, 1));
        assert!(rt.data.replicas.get(1, 1).evicting);
        let x = rt.data.replicas.get(1, 0).incoming.expect("a write-back");
        let xf = &rt.data.copies.xfers[x as usize];
        assert!(xf.writeback && (xf.src, xf.dst) == (1, 0));
        assert_eq!(rt.out.flows.len(), 1);
        // The write-back lands: RAM owns b again, the GPU copy goes, c fits.
        rt.xfer_done(x);
        assert_eq!(rt.data.replicas.get(1, 0).state, Msi::Owner);
        assert!(!rt.data.replicas.get(1, 1).allocated);
        assert!(rt.allocate(2, 1, Evict::ForFetch));
    }

    #[test]
    fn victims_are_written_back_one_at_a_time_and_nothing_is_allocated_meanwhile() {
        // a and b were written on the GPU (RAM's copies are stale). c needs room: StarPU
        // reclaims twice the size asked, writing each victim back in turn and waiting for it
        // (transfer_subtree_to_node): a first, b once a's is done. Meanwhile its driver,
        // reclaiming, allocates nothing on the node (copy_driver.c, `_starpu_is_reclaiming`):
        // d waits too, even once a's buffer is free.
        let mut rt = a_and_b_written_on_the_gpu();
        assert!(!rt.allocate(2, 1, Evict::ForFetch));
        assert_eq!(
            (rt.out.report.writebacks, rt.data.mem.writebacks[1]),
            (1, 1)
        );
        assert!(
            rt.data.replicas.get(1, 0).incoming.is_none(),
            "b's turn comes after a's"
        );
        let xa = write_back_of(&rt, 0);
        rt.xfer_done(xa);
        assert_eq!(rt.data.mem.used[1], 1e9, "only b's buffer left");
        assert_eq!(
            (rt.out.report.writebacks, rt.data.mem.writebacks[1]),
            (2, 1)
        );
        assert!(
            !rt.allocate(3, 1, Evict::ForFetch),
            "b is being written back"
        );
        let xb = write_back_of(&rt, 1);
        rt.xfer_done(xb);
        assert!(rt.allocate(3, 1, Evict::ForFetch) && rt.allocate(2, 1, Evict::ForFetch));
        assert_eq!((rt.out.report.evictions, rt.data.mem.used[1]), (2, 2e9));
    }

    #[test]
    fn requests_held_back_while_a_node_reclaimed_start_when_it_is_done() {
        // c's prefetch evicts a (written on the GPU) and waits for its write-back. A task
        // takes a meanwhile, so the write-back frees nothing when it lands: the eviction goes
        // on to b, and c starts in b's buffer once b is written back.
        let mut rt = a_and_b_written_on_the_gpu();
        rt.request(2, 1, Level::Prefetch, 0, None);
        let xa = write_back_of(&rt, 0);
        assert!(
            rt.data.replicas.get(1, 0).incoming.is_none(),
            "b's turn comes after a's"
        );
        rt.data.replicas.get_mut(0, 1).refcnt = 1;
        rt.xfer_done(xa);
        rt.progress();
        assert!(
            rt.data.replicas.get(0, 1).allocated,
            "a was kept for its task"
        );
        assert!(
            !rt.data.replicas.get(2, 1).allocated,
            "b is being written back"
        );
        let xb = write_back_of(&rt, 1);
        rt.xfer_done(xb);
        rt.progress();
        assert!(
            rt.data.replicas.get(2, 1).allocated && rt.data.replicas.get(2, 1).incoming.is_some()
        );
    }

    #[test]
    fn a_clean_buffer_of_the_same_size_is_taken_over_before_an_older_dirty_one() {
        // a (least recently used) was written on the GPU; b, used later, is a clean copy
        // of RAM's. StarPU reuses b's buffer directly for c (try_to_reuse_potentially_in_use_mc
        // skips owners) instead of writing a back: no write-back, c fits at once.
        let mut rt = four_handles();
        assert!(rt.allocate(0, 1, Evict::ForFetch));
        rt.data.tick += 1;
        assert!(rt.allocate(1, 1, Evict::ForFetch));
        rt.data.replicas.get_mut(0, 1).state = Msi::Owner;
        rt.data.replicas.get_mut(0, 0).state = Msi::Invalid;
        rt.data.replicas.get_mut(1, 1).state = Msi::Shared;
        assert!(rt.allocate(2, 1, Evict::ForFetch));
        assert_eq!((rt.out.report.evictions, rt.out.report.writebacks), (1, 0));
        assert!(rt.data.replicas.get(0, 1).allocated && !rt.data.replicas.get(1, 1).allocated);
        assert_eq!(
            rt.data.replicas.get(1, 0).state,
            Msi::Owner,
            "RAM's copy is the last one"
        );
        assert_eq!(rt.data.mem.used[1], 2e9);
    }

    #[test]
    fn idle_counts_follow_every_change_of_a_replica() {
        let mut rt = four_handles();
        let count = |rt: &Runtime, clean, for_prefetch| {
            rt.data.replicas.idle(
                1,
                Idle {
                    clean,
                    for_prefetch,
                },
            )
        };
        let all = |rt: &Runtime| {
            [(false, false), (false, true), (true, false), (true, true)]
                .map(|(c, p)| count(rt, c, p))
        };
        // Nothing allocated on the GPU; RAM is never counted.
        assert_eq!(all(&rt), [0; 4]);
        assert!(rt.allocate(0, 1, Evict::ForFetch));
        assert!(rt.allocate(1, 1, Evict::ForFetch));
        // Two idle buffers (not yet valid, so not the only copy): in every class.
        assert_eq!(all(&rt), [2; 4]);
        // a pinned by a queued task's prefetch: a prefetch may not take it.
        rt.data.replicas.get_mut(0, 1).prefetch_pins = 1;
        assert_eq!(all(&rt), [2, 1, 2, 1]);
        // b written on the GPU: only a write-back frees it, so it is not clean.
        rt.data.replicas.get_mut(1, 1).state = Msi::Owner;
        assert_eq!(all(&rt), [2, 1, 1, 0]);
        // b in use by a task: in no class; a prefetch finds nothing without a scan.
        rt.data.replicas.get_mut(1, 1).refcnt = 1;
        assert_eq!(all(&rt), [1, 0, 1, 0]);
        assert_eq!(rt.clean_victim(1, 1e9, true), None);
        // a freed: gone from every class.
        rt.free(0, 1);
        assert_eq!(all(&rt), [0; 4]);
        for (clean, for_prefetch) in [(false, false), (false, true), (true, false), (true, true)] {
            let class = Idle {
                clean,
                for_prefetch,
            };
            assert_eq!(count(&rt, clean, for_prefetch), rt.idle_recount(1, class));
        }
    }

    #[test]
    fn source_selection_prefers_a_direct_copy_then_ram() {
        let rt = four_handles();
        // a is valid in RAM only: the copy to the GPU reads RAM.
        assert_eq!(
            rt.data.replicas.source_for(0, 1, 1e9, &rt.model.machine),
            Some(0)
        );
        // Nothing valid anywhere (a handle never written): no source.
        let mut rt = rt;
        rt.data.replicas.get_mut(3, 0).state = Msi::Invalid;
        assert_eq!(
            rt.data.replicas.source_for(3, 1, 1e9, &rt.model.machine),
            None
        );
    }

    #[test]
    fn a_request_allocates_as_it_starts_and_a_prefetch_short_of_memory_waits() {
        // StarPU allocates a request's buffer when its node's driver handles it, not when
        // the request is made; a prefetch that finds no memory stays queued.
        let mut rt = four_handles();
        for h in 0..3 {
            rt.request(h, 1, Level::Prefetch, 0, None);
        }
        // Two prefetches in flight (StarPU's cap) hold buffers; the third holds none yet,
        // and is not loading: no driver has handled it.
        let alloc = |rt: &Runtime, h| rt.data.replicas.get(h, 1).allocated;
        assert!(alloc(&rt, 0) && alloc(&rt, 1) && !alloc(&rt, 2));
        assert_eq!(rt.data.mem.used[1], 2e9);
        assert!(!rt.data.replicas.get(2, 1).loading);
        // a and b land, prefetched for queued tasks: c's prefetch may not evict them and
        // 0.5 GB is not enough, so c stays queued.
        for h in 0..2 {
            rt.data.replicas.get_mut(h, 1).prefetch_pins = 1;
            let x = rt.data.replicas.get(h, 1).incoming.expect("in flight");
            rt.xfer_done(x);
        }
        assert!(!alloc(&rt, 2) && rt.data.replicas.get(2, 1).incoming.is_some());
        // Handled once, it set StarPU's `load_request`, which stays set short of memory: c
        // counts as loading for dmdar's pop (`starpu_data_query_status2`).
        assert!(rt.data.replicas.get(2, 1).loading);
        // Until memory frees up there, no prefetch into the node starts, from any node.
        assert!(rt.data.mem.prefetch_stuck[1]);
        // A fetch may evict a pinned replica: d takes a's buffer and starts ahead of c.
        rt.request(3, 1, Level::Fetch, 0, None);
        assert!(alloc(&rt, 3) && !alloc(&rt, 0) && !alloc(&rt, 2));
        // b's task is popped: its pin goes, and c's prefetch now evicts it.
        rt.data.replicas.get_mut(1, 1).prefetch_pins = 0;
        rt.pump_into(1);
        assert!(alloc(&rt, 2) && !alloc(&rt, 1) && !rt.data.mem.prefetch_stuck[1]);
        assert_eq!((rt.out.report.evictions, rt.data.mem.used[1]), (2, 2e9));
    }

    #[test]
    fn a_prefetch_for_a_writer_makes_its_copy_the_owner() {
        // StarPU updates the replicas' states with a request's mode when it ends, or when it
        // finds the data there: the copy of b prefetched for t, which writes b, is b's only
        // valid one, dirty, and RAM's is stale; the copy of a, which t reads, stays shared.
        let dag = r#"(handles: [(name: "a", size: 1e9), (name: "b", size: 1e9)],
            tasks: [(name: "t", codelet: "k", accesses: [("a", R), ("b", RW)])])"#;
        let mut rt = test_runtime(dag, "{}", 2.5e9, TEST_FLAGS);
        rt.prefetch(0, 0);
        for h in 0..2 {
            let x = rt.data.replicas.get(h, 1).incoming.expect("requested");
            rt.xfer_done(x);
        }
        let (a, b) = (*rt.data.replicas.get(0, 1), *rt.data.replicas.get(1, 1));
        assert_eq!(
            (a.state, rt.data.replicas.get(0, 0).state),
            (Msi::Shared, Msi::Shared)
        );
        assert_eq!(
            (b.state, rt.data.replicas.get(1, 0).state),
            (Msi::Owner, Msi::Invalid)
        );
        assert!(a.marked_clean && !b.marked_clean, "b's buffer is dirty");
        // So a fetch's direct reuse, which takes clean buffers only, passes b by for a.
        assert_eq!(rt.clean_victim(1, 1e9, false), Some(0));
        // The log's V line: a then b in eviction order, a pinned, b the owner.
        assert_eq!(rt.eviction_order(1), "PO");
        // Data already there: the prefetch finding them makes that copy the owner at once.
        let mut rt = test_runtime(dag, "{}", 2.5e9, TEST_FLAGS);
        assert!(rt.allocate(1, 1, Evict::ForFetch));
        rt.data.replicas.get_mut(1, 1).state = Msi::Shared;
        rt.prefetch(0, 0);
        assert_eq!(rt.data.replicas.get(1, 1).state, Msi::Owner);
        assert_eq!(rt.data.replicas.get(1, 0).state, Msi::Invalid);
    }

    #[test]
    fn a_prefetch_joining_a_request_in_flight_loses_its_pin() {
        // StarPU does not merge the requests of two tasks: the second one's request, handled
        // while the first one's copy is in flight, only waits for it and its pin is lost;
        // handled once the data are there, it pins them.
        let mut rt = four_handles();
        rt.request(0, 1, Level::Prefetch, 0, None);
        rt.carry_pins(0, 1, 1);
        let x = rt.data.replicas.get(0, 1).incoming.expect("in flight");
        assert!(rt.data.copies.xfers[x as usize].launched);
        rt.join(0, 0, 1, 0, 0);
        assert_eq!(
            rt.data.replicas.get(0, 1).prefetch_pins,
            0,
            "pins come with the data"
        );
        rt.xfer_done(x);
        assert_eq!(rt.data.replicas.get(0, 1).prefetch_pins, 1, "one of two");
        rt.join(0, 0, 1, 0, 0);
        assert_eq!(rt.data.replicas.get(0, 1).prefetch_pins, 2);
    }
}
