//! Reclaiming (StarPU's memalloc.c): the LRU eviction order with write-back of the only
//! valid copy, direct reuse of a clean buffer of the same size, and `wont_use` hints.

use super::coherency::{Idle, Msi, Replica};
use super::copies::Xfer;
use super::kinds::{Evict, Level};
use super::suballoc::Slot;
use super::{Data, DataCx};
use crate::runtime::out::handle_name;

impl Data {
    /// A `wont_use` hint came due: `h`'s GPU copies go to the front of the eviction order,
    /// and a dirty one is written back to RAM when its link is idle (an IDLEFETCH request),
    /// so that evicting it later costs nothing.
    pub(crate) fn evict_first(&mut self, cx: &mut DataCx<'_>, h: u32) {
        for node in 1..cx.model.machine.nodes.len() as u32 {
            let mut r = self.replicas.get_mut(h, node);
            if r.allocated {
                let old = r.last_use;
                r.last_use = 0;
                // Dirty: valid here while RAM (the home) is not.
                let dirty = r.state != Msi::Invalid && !r.evicting;
                // StarPU marks it clean now: the caller schedules the write-back.
                r.marked_clean = true;
                drop(r);
                self.mem.erase(node as usize, (old, h));
                self.mem.lru[node as usize].insert((0, h));
                if dirty && self.replicas.get(h, 0).state == Msi::Invalid {
                    self.allocate(cx, h, 0, Evict::No);
                    self.request(cx, h, 0, Level::Idle, 0, None);
                }
            }
        }
    }

    /// `node`'s first 400 buffers in eviction order, one letter each, for the log's V line
    /// (as the oracle's reuse-log.patch writes it at a fetch's direct reuse): `R` in use or
    /// moving, `O` the only valid copy (dirty), `P` pinned by a queued task's prefetch, `I`
    /// none of these (what a prefetch may take over).
    pub(super) fn eviction_order(&self, node: u32) -> String {
        let code = |r: &Replica| match r {
            r if r.refcnt > 0 || r.incoming.is_some() || r.evicting => 'R',
            r if r.state == Msi::Owner => 'O',
            r if r.prefetch_pins > 0 => 'P',
            _ => 'I',
        };
        self.mem.lru[node as usize]
            .iter()
            .take(400)
            .map(|(_, h)| code(self.replicas.get(h, node)))
            .collect()
    }

    /// StarPU's direct reuse (try_to_reuse_potentially_in_use_mc): the least recently used
    /// evictable replica of the same size that is not the only valid copy.
    pub(super) fn clean_victim(
        &self,
        cx: &DataCx<'_>,
        node: u32,
        size: f64,
        for_prefetch: bool,
    ) -> Option<u32> {
        let idle = self.replicas.clean_idle(node, for_prefetch);
        debug_assert_eq!(
            idle.iter().copied().collect::<Vec<_>>(),
            self.mem.lru[node as usize]
                .iter()
                .filter(|&(_, h)| Idle {
                    clean: true,
                    for_prefetch
                }
                .holds(self.replicas.get(h, node)))
                .collect::<Vec<_>>(),
            "clean idle replicas on {node}"
        );
        idle.iter()
            .map(|&(_, h)| h)
            .find(|&h| cx.model.graph.handles[h as usize].size == size)
    }

    /// Frees at least `need` bytes on `node` by evicting idle replicas, least recently used
    /// first (shared ones dropped, owners written back to RAM). For a prefetch, replicas
    /// other queued tasks prefetched are kept.
    pub(crate) fn evict(&mut self, cx: &mut DataCx<'_>, node: u32, need: f64, for_prefetch: bool) {
        let class = Idle {
            clean: false,
            for_prefetch,
        };
        let idle = self.replicas.idle(node, class) as usize;
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
        for (_, h) in self.mem.lru[node as usize].iter() {
            if counted >= need || victims.len() == idle {
                break;
            }
            if class.holds(self.replicas.get(h, node)) {
                victims.push(h);
                counted += cx.model.graph.handles[h as usize].size;
                if self.only_copy(h, node) {
                    break;
                }
            }
        }
        for h in victims {
            self.throw(cx, h, node, for_prefetch);
        }
        if self.mem.reclaiming(node as usize) {
            self.mem.reclaim_left[node as usize] = (need - counted, for_prefetch);
        }
    }

    /// The replicas of `class` on `node`, counted the long way: what `Replicas::idle` keeps.
    pub(super) fn idle_recount(&self, node: u32, class: Idle) -> u32 {
        let lru = &self.mem.lru[node as usize];
        lru.iter()
            .filter(|&(_, h)| class.holds(self.replicas.get(h, node)))
            .count() as u32
    }

    /// Evicts replica `h` from `node`: the only valid copy is written back to RAM first and
    /// freed when that is done; another is dropped now. (`for_prefetch`: a prefetch evicts
    /// it.)
    fn throw(&mut self, cx: &mut DataCx<'_>, h: u32, node: u32, for_prefetch: bool) {
        self.log_eviction(cx, h, node, "free", for_prefetch);
        if self.only_copy(h, node) {
            // Copies to GPUs without peer access may ride on the write-back (`request`).
            self.replicas.get_mut(h, node).evicting = true;
            cx.out.report.writebacks += 1;
            self.mem.writebacks[node as usize] += 1;
            cx.out.log('b', || {
                format!("{node} {} 1 {}", handle_name(h), u8::from(for_prefetch))
            });
            self.allocate(cx, h, 0, Evict::No);
            self.new_xfer(cx, Xfer::write_back(h, node));
        } else {
            self.free(cx, h, node);
            self.owner_of_the_rest(cx, h);
        }
        cx.out.report.evictions += 1;
    }

    /// StarPU's direct reuse: clean replica `h` on `node` (not the only valid copy) is
    /// dropped and its buffer changes hands, with no write-back and no free. Its place in the
    /// sub-allocator, if any.
    pub(super) fn take_over(
        &mut self,
        cx: &mut DataCx<'_>,
        h: u32,
        node: u32,
        for_prefetch: bool,
    ) -> Option<Slot> {
        self.log_eviction(cx, h, node, "reuse", for_prefetch);
        debug_assert!(!self.only_copy(h, node), "taking over the only valid copy");
        let (_, slot) = self.unallocate(cx, h, node);
        self.owner_of_the_rest(cx, h);
        cx.out.report.evictions += 1;
        slot
    }

    /// The log's line for an eviction: how the buffer goes (`reuse` or `free`), whether a
    /// prefetch evicts it, and the replica's prefetch pins.
    fn log_eviction(
        &mut self,
        cx: &mut DataCx<'_>,
        h: u32,
        node: u32,
        how: &str,
        for_prefetch: bool,
    ) {
        let pins = self.replicas.get(h, node).prefetch_pins;
        cx.out.log('E', || {
            let level = if for_prefetch { 1 } else { 0 };
            format!("{node} {} {how} {level} {pins}", handle_name(h))
        });
    }
}
