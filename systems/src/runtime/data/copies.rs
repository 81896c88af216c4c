//! Copies: StarPU-SimGrid's serialisation of copies on the bus, their queueing cost, and what
//! a finished copy makes valid (a write-back ended, a copy landed).

use std::cmp::Reverse;
use std::collections::BTreeSet;

use hetsim_schema::SimTime;

use super::coherency::Msi;
use super::kinds::{Level, RequestKey};
use super::{Data, DataCx};
use crate::runtime::model::QUEUE_COST;
use crate::runtime::out::{Due, handle_name};

#[derive(Debug, Clone, Default)]
pub struct Xfer {
    pub(crate) handle: u32,
    pub(crate) src: u32,
    pub(crate) dst: u32,
    /// A write-back of an evicted replica (frees the source when done; started at once, outside
    /// the request lists, as StarPU's synchronous write-back).
    pub(crate) writeback: bool,
    pub(crate) level: Level,
    /// The priority of the task it is for (request lists are served most urgent first).
    pub(crate) prio: i64,
    /// The task whose push-time prefetch made it (a fetch of that task joins it).
    pub(crate) task: Option<u32>,
    /// Prefetch pins it adds to its destination replica when it lands (StarPU's
    /// `nb_tasks_prefetch` of a request).
    pub(crate) pins: u32,
    /// A request that copies nothing: it was made for another task while a request loading
    /// the same replica (the loader) was pending, as StarPU does not merge requests of
    /// different tasks. Handled in its turn: while the loader is in flight it only waits for
    /// it, and its pins are lost; once the data are there it pins them; before the loader's
    /// turn (or once the data went) it copies them itself, and a queued loader joins.
    pub(crate) joins: bool,
    /// Taken off its request list and started.
    pub(crate) launched: bool,
    /// GPUs to forward the data to once they land in RAM (no peer access to the source).
    pub(crate) then: Vec<u32>,
    /// Earlier transfers it waits for, and later ones waiting for it (StarPU-SimGrid's
    /// serialisation: one copy at a time per node pair and per GPU-GPU pair).
    pub(crate) waits: u32,
    pub(crate) wakes: Vec<u32>,
}

impl Xfer {
    /// A request to copy `handle` from `src` to `dst` at `level` for a task of priority
    /// `prio`.
    pub(crate) fn copy(handle: u32, src: u32, dst: u32, level: Level, prio: i64) -> Xfer {
        Xfer {
            handle,
            src,
            dst,
            level,
            prio,
            ..Default::default()
        }
    }

    /// An eviction's write-back of `handle` from `node` to RAM (a fetch with no priority).
    pub(crate) fn write_back(handle: u32, node: u32) -> Xfer {
        Xfer {
            writeback: true,
            ..Xfer::copy(handle, node, 0, Level::Fetch, 0)
        }
    }

    /// A request of another task joining the one that loads (`joins`), with its `pins`.
    pub(crate) fn joining(
        handle: u32,
        src: u32,
        dst: u32,
        level: Level,
        prio: i64,
        pins: u32,
    ) -> Xfer {
        Xfer {
            pins,
            joins: true,
            ..Xfer::copy(handle, src, dst, level, prio)
        }
    }

    /// StarPU-SimGrid's rule for two copies that must not overlap (`new` waits for `old`):
    /// the same node pair (one CUDA stream per pair), crossed GPU-GPU copies, or a GPU-GPU
    /// copy and a copy into one of its ends.
    pub(crate) fn after(new: (u32, u32), old: (u32, u32)) -> bool {
        let gpu_gpu = |(s, d): (u32, u32)| s != 0 && d != 0;
        new == old
            || (gpu_gpu(new) && gpu_gpu(old) && new == (old.1, old.0))
            || (gpu_gpu(new) && (old.1 == new.0 || old.1 == new.1))
            || (gpu_gpu(old) && (new.1 == old.0 || new.1 == old.1))
    }

    /// The node whose driver handles a copy (StarPU's `link_supports_direct_transfers`):
    /// the destination's, or the source's when the destination is RAM (CPUs cannot reach a
    /// GPU).
    pub(crate) fn handler(src: u32, dst: u32) -> u32 {
        if dst != 0 { dst } else { src }
    }
}

/// Request `x`'s place in its list: fetches before prefetches before idle requests, the most
/// urgent first, then the oldest (StarPU's priority lists, pushed at the back).
pub(crate) fn request_key(xf: &Xfer, x: u32) -> RequestKey {
    (xf.level, Reverse(xf.prio), x)
}

/// Every transfer, and the request lists of each node pair.
#[derive(Debug, Clone, Default)]
pub struct Transfers {
    pub xfers: Vec<Xfer>,
    /// Requests not yet started, per node pair (`src * nodes + dst`), in the order they are
    /// served: by level, then priority, then age ([`request_key`]).
    pub requests: Vec<BTreeSet<RequestKey>>,
    /// Requests started and not finished, per node pair.
    pub inflight: Vec<u32>,
    /// Transfers of each handle requested and not finished: a task that writes the handle
    /// waits until there are none (a write-back in flight must not land after the write).
    pub handle_xfers: Vec<u32>,
    /// Workers whose fetched task waits so, with the handle.
    pub write_wait: Vec<(u32, u32)>,
    /// Transfers queued or running on the shared bus.
    pub pending: Vec<u32>,
    /// When each node's driver is done submitting the copies it handles: StarPU-SimGrid's
    /// driver thread sleeps for each copy's queueing in turn.
    pub driver_free: Vec<SimTime>,
}

impl Transfers {
    /// No transfer yet between `nodes` memory nodes, for `handles` handles.
    pub fn new(nodes: usize, handles: usize) -> Transfers {
        Transfers {
            requests: vec![BTreeSet::new(); nodes * nodes],
            inflight: vec![0; nodes * nodes],
            handle_xfers: vec![0; handles],
            driver_free: vec![SimTime::ZERO; nodes],
            ..Default::default()
        }
    }
}

/// What the end of a copy asks of the worker loop, in the order it does it: the driver of a
/// node whose write-backs are over goes on (`driver_back`), the pair's next requests are
/// handled, the workers waiting on `dst` learn the data landed, and a copy between GPUs
/// without peer access goes on from RAM (`then`).
#[derive(Debug)]
pub(crate) struct CopyEnd {
    pub driver_back: Option<u32>,
    pub src: u32,
    pub dst: u32,
    pub handle: u32,
    pub then: Vec<u32>,
    pub level: Level,
    pub prio: i64,
}

impl Data {
    /// Starts transfer `x`: after its queueing cost, and on the shared bus after the copies it
    /// must follow.
    pub(crate) fn launch(&mut self, cx: &mut DataCx<'_>, x: u32) {
        let Xfer {
            handle: h,
            src,
            dst,
            ..
        } = self.copies.xfers[x as usize];
        self.copies.xfers[x as usize].launched = true;
        cx.out.log('X', || {
            let xf = &self.copies.xfers[x as usize];
            let origin = if xf.writeback {
                "writeback"
            } else {
                xf.level.name()
            };
            format!("{src} {dst} {} {origin}", handle_name(h))
        });
        if self.replicas.get(h, dst).incoming == Some(x) {
            self.replicas.get_mut(h, dst).loading = true;
        }
        let size = cx.model.graph.handles[h as usize].size;
        cx.out.report.transfers += 1;
        match (src, dst) {
            (0, _) => cx.out.report.bytes_h2d += size,
            (_, 0) => cx.out.report.bytes_d2h += size,
            _ => cx.out.report.bytes_d2d += size,
        }
        // Queueing cost, after the allocations the destination's driver owes, paid by the
        // driver handling the copy after the copies it submitted before.
        let owed = std::mem::take(&mut self.mem.debt[dst as usize]);
        let driver = Xfer::handler(src, dst) as usize;
        let mut at = cx
            .out
            .now
            .saturating_add(SimTime::from_secs_saturating(owed))
            .max(self.copies.driver_free[driver]);
        if cx.model.flags.overheads {
            at = at.saturating_add(SimTime::from_secs_saturating(QUEUE_COST));
        }
        self.copies.driver_free[driver] = at;
        if !cx.model.flags.shared_bus {
            let t = cx.model.machine.alone(src, dst, size);
            cx.out.timers.push((
                at.saturating_add(SimTime::from_secs_saturating(t)),
                Due::XferDone(x),
            ));
        } else if at > cx.out.now {
            // StarPU-SimGrid submits the copy (and orders it against the others) once the
            // driver has slept for the allocations and the queueing.
            cx.out.timers.push((at, Due::XferSubmit(x)));
        } else {
            self.submit(cx, x);
        }
    }

    /// Copy `x` reaches the shared bus: it waits for the pending copies it must follow
    /// (StarPU-SimGrid's `transfer_submit`), else its flow starts now.
    pub(crate) fn submit(&mut self, cx: &mut DataCx<'_>, x: u32) {
        let (src, dst) = (
            self.copies.xfers[x as usize].src,
            self.copies.xfers[x as usize].dst,
        );
        let mut waits = 0;
        for &p in &self.copies.pending {
            let old = &mut self.copies.xfers[p as usize];
            if Xfer::after((src, dst), (old.src, old.dst)) {
                old.wakes.push(x);
                waits += 1;
            }
        }
        self.copies.pending.push(x);
        self.copies.xfers[x as usize].waits = waits;
        if waits == 0 {
            cx.out.flows.push((cx.out.now, x));
        }
    }

    /// Transfer `x` is over: the copies serialised behind it may go.
    pub(crate) fn unblock_after(&mut self, cx: &mut DataCx<'_>, x: u32) {
        if let Some(i) = self.copies.pending.iter().position(|&p| p == x) {
            self.copies.pending.remove(i);
        }
        let now = cx.out.now;
        for w in std::mem::take(&mut self.copies.xfers[x as usize].wakes) {
            let next = &mut self.copies.xfers[w as usize];
            next.waits -= 1;
            if next.waits == 0 {
                // Submitted (at its queueing's end) before what it waited for ended.
                cx.out.flows.push((now, w));
            }
        }
    }

    /// Copy `x` ended: the datawizard's half (the request lists, the replicas' states, an
    /// eviction's pass going on). What the worker loop does next comes back as a
    /// [`CopyEnd`], which `Runtime::xfer_done` carries out.
    pub(crate) fn end_copy(&mut self, cx: &mut DataCx<'_>, x: u32) -> CopyEnd {
        self.unblock_after(cx, x);
        let Xfer {
            handle: h,
            src,
            dst,
            writeback,
            ..
        } = self.copies.xfers[x as usize];
        let then = std::mem::take(&mut self.copies.xfers[x as usize].then);
        let (level, prio) = (
            self.copies.xfers[x as usize].level,
            self.copies.xfers[x as usize].prio,
        );
        self.tick += 1;
        self.copies.handle_xfers[h as usize] -= 1;
        self.wake_writers_of(cx, h);
        let pair = self.pair(src, dst);
        self.copies.inflight[pair] -= 1;
        // The end wakes the drivers of its handling node (StarPU-SimGrid's
        // `_starpu_wake_all_blocked_workers_on_node`), whose progress goes through the node's
        // request lists again: a prefetch held back for memory tries again (the copy's source
        // on a GPU may be evictable now).
        self.mem.freed[Xfer::handler(src, dst) as usize] = true;
        let driver_back = if writeback {
            self.write_back_ended(cx, h, src)
        } else {
            self.copy_landed(cx, x, h, src, dst);
            None
        };
        CopyEnd {
            driver_back,
            src,
            dst,
            handle: h,
            then,
            level,
            prio,
        }
    }

    /// Tasks that wait to write `h` go on once no copy of it is in flight.
    fn wake_writers_of(&mut self, cx: &mut DataCx<'_>, h: u32) {
        if self.copies.handle_xfers[h as usize] == 0 && !self.copies.write_wait.is_empty() {
            let waiting = std::mem::take(&mut self.copies.write_wait);
            for (wh, w) in waiting {
                if wh == h {
                    cx.pacing.wake(w);
                } else {
                    self.copies.write_wait.push((wh, w));
                }
            }
        }
    }

    /// An eviction's write-back of `h` from `src` to RAM ended: RAM owns the data again
    /// unless a task took the GPU's replica meanwhile, and the eviction's pass goes on.
    /// Returns the node whose driver goes on, once its pass is over.
    fn write_back_ended(&mut self, cx: &mut DataCx<'_>, h: u32, src: u32) -> Option<u32> {
        self.replicas.get_mut(h, 0).incoming = None;
        self.replicas.get_mut(h, 0).loading = false;
        let n = src as usize;
        if self.replicas.get(h, src).refcnt > 0 {
            // A task took the replica meanwhile: keep it, both copies now valid; the
            // eviction still has its bytes to free.
            self.replicas.get_mut(h, src).evicting = false;
            self.replicas.get_mut(h, src).state = Msi::Shared;
            self.replicas.get_mut(h, 0).state = Msi::Shared;
            self.mem.reclaim_left[n].0 += cx.model.graph.handles[h as usize].size;
        } else {
            // RAM holds the data again; the GPU copy goes.
            self.replicas.get_mut(h, 0).state = Msi::Owner;
            self.free(cx, h, src);
        }
        self.mem.writebacks[n] -= 1;
        cx.out.log('b', || format!("{src} {} 0", handle_name(h)));
        // The eviction's pass goes on to its next victims.
        if self.mem.writebacks[n] == 0 {
            let (left, for_prefetch) = std::mem::take(&mut self.mem.reclaim_left[n]);
            if left > 0.0 {
                self.evict(cx, src, left, for_prefetch);
            }
        }
        if !self.mem.reclaiming(n) {
            // The requests into the node held back while it reclaimed try again with the
            // others (the end flagged the node above); its driver goes on.
            return Some(src);
        }
        None
    }

    /// Copy `x` of `h` from `src` landed on `dst`: the replica there is valid (owned by the
    /// task that writes it there), its prefetch pins counted.
    fn copy_landed(&mut self, cx: &mut DataCx<'_>, x: u32, h: u32, src: u32, dst: u32) {
        self.replicas.get_mut(h, src).refcnt -= 1;
        let mut r = self.replicas.get_mut(h, dst);
        r.incoming = None;
        r.loading = false;
        let allocated = r.allocated;
        if allocated {
            r.state = Msi::Shared;
            r.prefetch_pins += self.copies.xfers[x as usize].pins;
        }
        drop(r);
        if allocated {
            let mut s = self.replicas.get_mut(h, src);
            if s.state == Msi::Owner {
                s.state = Msi::Shared;
            }
            drop(s);
            // For the task that writes it there: the only valid copy now.
            if self.mem.writer_node[h as usize] == Some(dst) {
                self.own(cx, h, dst);
            }
        }
    }

    /// The second hop of copies of `h` between GPUs without peer access: from RAM to each of
    /// `then`.
    pub(crate) fn relay(
        &mut self,
        cx: &mut DataCx<'_>,
        h: u32,
        then: Vec<u32>,
        level: Level,
        prio: i64,
    ) {
        for node in then {
            self.new_xfer(cx, Xfer::copy(h, 0, node, level, prio));
        }
    }
}
