//! Allocation (StarPU's memalloc.c): per node the bytes used, the sub-allocator, the
//! eviction order, the cudaMalloc and cudaFree costs a node's driver owes, and push-time
//! prefetch bookkeeping; allocating, freeing and marking a use.

use super::coherency::Msi;
use super::kinds::Evict;
use super::lru::Lru;
use super::suballoc::{CHUNK, Driver, Slot, SubAllocator};
use super::{Data, DataCx};
use crate::runtime::model::{CUDA_FREE, CUDA_MALLOC, MIB, PINNED_PER_MIB};

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
    pub(super) fn push_back(&mut self, n: usize, key: (u64, u32), clean: bool) {
        self.lru[n].insert(key);
        if !clean && self.dirty_head[n].is_none() {
            self.dirty_head[n] = Some(key);
        }
    }

    /// StarPU's MC_LIST_ERASE: a buffer leaves node `n`'s eviction order; if it was the
    /// dirty head, the next buffer is.
    pub(super) fn erase(&mut self, n: usize, key: (u64, u32)) {
        if self.dirty_head[n] == Some(key) {
            self.dirty_head[n] = self.lru[n].after(key);
        }
        self.lru[n].remove(key);
    }
}

impl Data {
    /// Allocates `h` on `node` as StarPU does ([`Data::place`] on a GPU). False: not
    /// now. In RAM only handles without home data get here, in pinned memory.
    pub(crate) fn allocate(
        &mut self,
        cx: &mut DataCx<'_>,
        h: u32,
        node: u32,
        evict: Evict,
    ) -> bool {
        if self.replicas.get(h, node).allocated {
            return true;
        }
        let size = cx.model.graph.handles[h as usize].size;
        let n = node as usize;
        // StarPU's driver writes an eviction's victim back synchronously and meanwhile
        // allocates nothing more there (`_starpu_is_reclaiming`: every request into the node
        // waits). Else prefetches chain write-backs, and the driver, which waits for them
        // all, stalls: mirage dmda, 3 GPUs + 8 CPUs, 512 MB, 64 tiles, GPU 0 ran no task for
        // 210 ms (63 write-backs); StarPU's longest such gap there is 30 ms, hetsim's now 22.
        if self.mem.reclaiming(n) {
            return false;
        }
        if node == 0 {
            if cx.model.flags.overheads && cx.model.machine.nodes.len() > 1 {
                self.mem.debt[0] += PINNED_PER_MIB * size / MIB;
            }
        } else {
            let Some(slot) = self.place(cx, n, size, evict) else {
                return false;
            };
            self.replicas.get_mut(h, node).slot = slot;
        }
        let tick = self.tick;
        let mut r = self.replicas.get_mut(h, node);
        r.allocated = true;
        r.last_use = tick;
        // A new GPU buffer is clean whatever RAM holds (StarPU's _starpu_memchunk_init): only
        // a task writing it here dirties it.
        r.marked_clean = node != 0;
        drop(r);
        if node != 0 {
            self.mem.push_back(n, (tick, h), true);
            self.mem.tidy_due[n] = true;
        }
        true
    }

    /// A buffer of `size` bytes on GPU node `n` as StarPU's `_starpu_allocate_interface`: a
    /// new one if memory allows; else, as `evict` allows, a clean idle buffer of that size
    /// taken over, or LRU replicas evicted for twice the size and another try, three tries
    /// in all; while victims are written back, wait. `None`: no buffer now; `Some(slot)`: its
    /// place in the sub-allocator, if any. (StarPU's memchunk cache, tried first, only holds
    /// unregistered data's buffers: empty here.)
    fn place(
        &mut self,
        cx: &mut DataCx<'_>,
        n: usize,
        size: f64,
        evict: Evict,
    ) -> Option<Option<Slot>> {
        let node = n as u32;
        let prefetch = evict == Evict::ForPrefetch;
        for _ in 0..3 {
            if let Some(slot) = self.malloc(cx, n, size) {
                return Some(slot);
            }
            if evict == Evict::No {
                return None;
            }
            if !prefetch {
                cx.out
                    .log('V', || format!("{node} {}", self.eviction_order(node)));
            }
            if let Some(v) = self.clean_victim(cx, node, size, prefetch) {
                return Some(self.take_over(cx, v, node, prefetch));
            }
            self.evict(cx, node, 2.0 * size, prefetch);
            if self.mem.reclaiming(n) {
                return None;
            }
        }
        None
    }

    /// A new GPU buffer on node `n` if memory allows: from the sub-allocator when small
    /// enough (a cudaMalloc only for a new chunk, which counts 32 MiB), else a cudaMalloc
    /// of its own. `None`: out of memory.
    fn malloc(&mut self, cx: &mut DataCx<'_>, n: usize, size: f64) -> Option<Option<Slot>> {
        let cap = cx.model.machine.nodes[n].capacity;
        let fits = |bytes: f64| !cx.model.flags.mem_limit || self.mem.used[n] + bytes <= cap;
        let (slot, driver) = if SubAllocator::serves(size) {
            let may_grow = fits(CHUNK);
            let (slot, driver) = self.mem.sub[n].alloc(size, may_grow)?;
            (Some(slot), driver)
        } else if fits(size) {
            (None, Driver::CudaMalloc)
        } else {
            return None;
        };
        if driver == Driver::CudaMalloc {
            self.mem.used[n] += if slot.is_some() { CHUNK } else { size };
            self.mem.peak[n] = self.mem.peak[n].max(self.mem.used[n]);
            if cx.model.flags.overheads {
                self.charge_cuda_alloc(cx, n, CUDA_MALLOC);
            }
        }
        Some(slot)
    }

    /// A buffer goes back to node `n`'s allocator: a sub-allocated one to its chunk (a chunk
    /// given back no longer counts), another with a cudaFree.
    fn give_back(&mut self, cx: &mut DataCx<'_>, n: usize, size: f64, slot: Option<Slot>) {
        let driver = match slot {
            Some(slot) => self.mem.sub[n].free(slot, size),
            None => Driver::CudaFree,
        };
        if driver == Driver::CudaFree {
            self.mem.used[n] -= if slot.is_some() { CHUNK } else { size };
            if cx.model.flags.overheads {
                self.charge_cuda_alloc(cx, n, CUDA_FREE);
            }
        }
    }

    /// Charges node `n`'s driver a cudaMalloc or cudaFree of `cost` seconds, after the ones
    /// it already owes and after the last one on any GPU (they share StarPU-SimGrid's mutex).
    fn charge_cuda_alloc(&mut self, cx: &mut DataCx<'_>, n: usize, cost: f64) {
        let now = cx.out.now.as_secs_f64();
        let start = (now + self.mem.debt[n]).max(self.mem.cuda_alloc_free_s);
        self.mem.cuda_alloc_free_s = start + cost;
        self.mem.debt[n] = self.mem.cuda_alloc_free_s - now;
    }

    /// Marks a use of `h` on `node` (moves it to the back of the eviction order).
    pub(crate) fn touch(&mut self, h: u32, node: u32) {
        let tick = self.tick;
        let mut r = self.replicas.get_mut(h, node);
        let old = r.last_use;
        r.last_use = tick;
        let (allocated, clean) = (r.allocated, r.marked_clean);
        drop(r);
        if node != 0 && allocated {
            self.mem.erase(node as usize, (old, h));
            self.mem.push_back(node as usize, (tick, h), clean);
        }
    }

    /// Frees `h`'s buffer on `node`, evicted: a sub-allocated one goes back to its chunk,
    /// another with a cudaFree (StarPU frees an evicted buffer; its memchunk cache only
    /// takes unregistered data's).
    pub(crate) fn free(&mut self, cx: &mut DataCx<'_>, h: u32, node: u32) {
        let (size, slot) = self.unallocate(cx, h, node);
        self.give_back(cx, node as usize, size, slot);
    }

    /// `h`'s buffer on `node` leaves it: its size and place, for the caller to free or
    /// hand over. Tasks waiting for memory there try again.
    pub(super) fn unallocate(
        &mut self,
        cx: &mut DataCx<'_>,
        h: u32,
        node: u32,
    ) -> (f64, Option<Slot>) {
        let size = cx.model.graph.handles[h as usize].size;
        let mut r = self.replicas.get_mut(h, node);
        let last = r.last_use;
        r.allocated = false;
        r.state = Msi::Invalid;
        r.evicting = false;
        let slot = r.slot.take();
        drop(r);
        self.mem.erase(node as usize, (last, h));
        self.mem.freed[node as usize] = true;
        self.mem.tidy_due[node as usize] = true;
        let waiting = std::mem::take(&mut self.mem.mem_wait[node as usize]);
        for t in waiting {
            let w = cx.worker_of[t as usize];
            cx.pacing.wake(w);
        }
        (size, slot)
    }
}
