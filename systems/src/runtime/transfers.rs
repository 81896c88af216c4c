//! Data transfers as StarPU requests them: request lists per node pair served by level
//! (fetch, prefetch, idle) and priority under StarPU 1.4's in-flight caps, sources chosen
//! StarPU's way, relays through RAM between GPUs without peer access, StarPU-SimGrid's
//! serialisation of copies, write-backs, and what a finished copy makes valid.

use std::cmp::Reverse;
use std::collections::BTreeSet;

use hetsim_schema::SimTime;

use super::core::Runtime;
use super::memory::{Evict, Msi};
use super::model::QUEUE_COST;
use super::out::Due;

/// StarPU's request levels: a task that needs its data now, a push-time prefetch, or an
/// idle write-back. Served in that order; a node pair starts fetches while fewer than
/// [`FETCH_CAP`] requests are in flight on it, prefetches while fewer than [`PREFETCH_CAP`]
/// are, idle requests only when none is.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Default)]
pub enum Level {
    #[default]
    Fetch,
    Prefetch,
    Idle,
}

impl Level {
    /// Requests in flight on a node pair below which one of this level starts.
    pub fn cap(self) -> u32 {
        match self {
            Level::Fetch => FETCH_CAP,
            Level::Prefetch => PREFETCH_CAP,
            Level::Idle => IDLE_CAP,
        }
    }

    /// StarPU's `is_prefetch` code in the oracle's log: 0 fetch, 1 task prefetch, 3 idle.
    pub fn log_code(self) -> u8 {
        match self {
            Level::Fetch => 0,
            Level::Prefetch => 1,
            Level::Idle => 3,
        }
    }

    /// Its name (a copy's origin in the log).
    pub fn name(self) -> &'static str {
        match self {
            Level::Fetch => "fetch",
            Level::Prefetch => "prefetch",
            Level::Idle => "idle",
        }
    }
}

/// StarPU 1.4's per-(node, peer, direction) caps on requests in flight (notes 2.4).
const FETCH_CAP: u32 = 5;
const PREFETCH_CAP: u32 = 2;
const IDLE_CAP: u32 = 1;

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

/// Where a request stands in its node pair's list.
pub type RequestKey = (Level, Reverse<i64>, u32);

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

impl Runtime {
    /// Brings a valid copy of `h` to `node` unless it is there or coming; `task` asks for it
    /// (a fetch), if any. A fetch for data a queued prefetch asked for raises that request to
    /// its level; if another task's prefetch made it, that prefetch's pins move to a joining
    /// request (StarPU: the fetch's own request loads, the prefetch's then finds it loading).
    pub(crate) fn request(
        &mut self,
        h: u32,
        node: u32,
        level: Level,
        prio: i64,
        task: Option<u32>,
    ) {
        let r = *self.data.replicas.get(h, node);
        if let Some(x) = r.incoming {
            self.raise(x, h, node, level, prio, task);
            return;
        }
        if r.state != Msi::Invalid {
            return;
        }
        let Some(src) = self.source_for(h, node) else {
            return; // never written: nothing to move
        };
        let x = if self.model.machine.direct[src as usize][node as usize] {
            self.new_xfer(h, src, node, false, level, prio)
        } else {
            // No peer access: to RAM first (or with the copy already going there), then on.
            self.allocate(h, 0, Evict::No);
            self.request(h, 0, level, prio, None);
            let x = self
                .data
                .replicas
                .get(h, 0)
                .incoming
                .expect("RAM copy requested");
            self.data.copies.xfers[x as usize].then.push(node);
            x
        };
        self.data.replicas.get_mut(h, node).incoming = Some(x);
    }

    /// A request for `h` into `node` finds copy `x` already requested: a fetch raises it
    /// (StarPU's U line), a more urgent one requeues it; a fetch meeting another task's
    /// queued prefetch that pins data gets its own request, which loads in its place.
    fn raise(&mut self, x: u32, h: u32, node: u32, level: Level, prio: i64, task: Option<u32>) {
        let old = self.data.copies.xfers[x as usize].level;
        if level == Level::Fetch && old != Level::Fetch {
            // StarPU raises it, queued or in flight (its log's U line).
            self.log('U', |rt| {
                format!("{} {node} {}", rt.handle_name(h), old.log_code())
            });
        }
        let xf = &self.data.copies.xfers[x as usize];
        if !xf.launched && (level == Level::Fetch || prio > xf.prio) {
            let (src, dst, pins) = (xf.src, xf.dst, xf.pins);
            if level == Level::Fetch && xf.level != Level::Fetch && xf.task != task && pins > 0 {
                // The fetch's own request, served first, loads; the prefetch's stays
                // where it is and, at its turn, finds the data loading or there.
                let f = self.add_join(h, src, dst, Level::Fetch, prio, 0);
                self.data.copies.xfers[f as usize].task = task;
                self.hand_over_load(x, f);
                self.post(src, dst);
                return;
            }
            self.requeue(x, |xf| {
                xf.prio = xf.prio.max(prio);
                if level == Level::Fetch {
                    xf.level = Level::Fetch;
                }
            });
            self.post(src, dst);
        }
    }

    /// A transfer of `h` from `src` to `dst`: a request joins its node pair's list and starts
    /// when the caps allow (its source stays while it is read); a write-back starts at once
    /// (its source is `evicting` instead).
    pub(crate) fn new_xfer(
        &mut self,
        h: u32,
        src: u32,
        dst: u32,
        writeback: bool,
        level: Level,
        prio: i64,
    ) -> u32 {
        let x = self.data.copies.xfers.len() as u32;
        self.data.copies.handle_xfers[h as usize] += 1;
        // Set before the pair is pumped: allocations made there must not evict `dst`.
        self.data.replicas.get_mut(h, dst).incoming = Some(x);
        if !writeback {
            self.data.replicas.get_mut(h, src).refcnt += 1;
        }
        self.data.copies.xfers.push(Xfer {
            handle: h,
            src,
            dst,
            writeback,
            level,
            prio,
            ..Default::default()
        });
        if writeback {
            // StarPU's synchronous write-back is a fetch request on the pair: it counts as
            // in flight there (idle requests wait for it).
            let pair = self.pair(src, dst);
            self.data.copies.inflight[pair] += 1;
            self.launch(x);
        } else {
            self.enqueue(x);
            self.log_request(h, src, dst, level);
            self.post(src, dst);
            // Posting it flags and signals its handler's driver.
            self.pacing
                .posted_on(Xfer::handler(src, dst), &self.model, &mut self.out);
        }
        x
    }

    /// A request of another task for replica (`h`, `dst`), which a request from `src` already
    /// loads: it copies nothing and waits in that pair's list with its pins ([`Xfer::joins`]).
    /// `task`: the task whose prefetch makes it.
    pub(crate) fn join(&mut self, h: u32, src: u32, dst: u32, prio: i64, task: u32) {
        let x = self.add_join(h, src, dst, Level::Prefetch, prio, 1);
        self.data.copies.xfers[x as usize].task = Some(task);
        self.post(src, dst);
    }

    /// [`Runtime::join`]'s request, listed but not yet served: its index.
    fn add_join(&mut self, h: u32, src: u32, dst: u32, level: Level, prio: i64, pins: u32) -> u32 {
        let x = self.data.copies.xfers.len() as u32;
        self.data.copies.xfers.push(Xfer {
            handle: h,
            src,
            dst,
            level,
            prio,
            pins,
            joins: true,
            ..Default::default()
        });
        // Like every request that reads, it holds its source until handled (StarPU takes
        // the reference when it creates the request).
        self.data.replicas.get_mut(h, src).refcnt += 1;
        self.log_request(h, src, dst, level);
        self.enqueue(x);
        x
    }

    /// Puts request `x` in its node pair's list, at its key's place.
    fn enqueue(&mut self, x: u32) {
        let xf = &self.data.copies.xfers[x as usize];
        let (pair, key) = (self.pair(xf.src, xf.dst), request_key(xf, x));
        self.data.copies.requests[pair].insert(key);
    }

    /// Changes queued request `x`'s level or priority, keeping its list in order.
    fn requeue(&mut self, x: u32, change: impl FnOnce(&mut Xfer)) {
        let xf = &self.data.copies.xfers[x as usize];
        let pair = self.pair(xf.src, xf.dst);
        self.data.copies.requests[pair].remove(&request_key(xf, x));
        change(&mut self.data.copies.xfers[x as usize]);
        self.enqueue(x);
    }

    /// The log's line for a request made (a copy's or a joining one).
    fn log_request(&mut self, h: u32, src: u32, dst: u32, level: Level) {
        self.log('Q', |rt| {
            format!("{} {src} {dst} {}", rt.handle_name(h), level.log_code())
        });
    }

    /// A joining request's turn with no request loading its replica and the data not there:
    /// it is a copy from its source, made now, in its place in the list (StarPU's request
    /// finds no `load_request` and the replica invalid, and copies it itself). A loader still
    /// queued (not yet handled) becomes a joining request in its own place, with its own pins:
    /// at its turn it finds this copy in flight (its pins lost) or landed (its pins added).
    /// True if so.
    fn join_loads_itself(&mut self, x: u32) -> bool {
        let (h, dst) = (
            self.data.copies.xfers[x as usize].handle,
            self.data.copies.xfers[x as usize].dst,
        );
        let r = *self.data.replicas.get(h, dst);
        if r.loading || (r.incoming.is_none() && r.valid()) {
            return false;
        }
        // Its source, held since the request was made, is still valid.
        debug_assert!(
            self.data
                .replicas
                .get(h, self.data.copies.xfers[x as usize].src)
                .valid(),
            "a joining request's source went"
        );
        match r.incoming {
            Some(l) => self.hand_over_load(l, x),
            None => {
                self.data.copies.xfers[x as usize].joins = false;
                self.data.copies.handle_xfers[h as usize] += 1;
                self.data.replicas.get_mut(h, dst).incoming = Some(x);
            }
        }
        true
    }

    /// Queued loader `l` of a replica gives the loading to request `x` of another task and
    /// becomes a joining request where it stands (level, priority, place and pins kept); RAM
    /// legs it would forward go with the loading.
    fn hand_over_load(&mut self, l: u32, x: u32) {
        debug_assert!(
            !self.data.copies.xfers[l as usize].launched,
            "loader {l} started"
        );
        let then = std::mem::take(&mut self.data.copies.xfers[l as usize].then);
        self.data.copies.xfers[l as usize].joins = true;
        let xf = &mut self.data.copies.xfers[x as usize];
        xf.joins = false;
        xf.then = then;
        let (h, dst) = (xf.handle, xf.dst);
        self.data.replicas.get_mut(h, dst).incoming = Some(x);
    }

    /// A joining request's turn, with the replica loading or its data there: while the
    /// loader is in flight its pins are lost; once the data are there it adds them.
    fn resolve_join(&mut self, x: u32) {
        let g = &self.data.copies.xfers[x as usize];
        let (h, dst, level, pins) = (g.handle, g.dst, g.level, g.pins);
        if self.data.replicas.get(h, dst).incoming.is_some() {
            self.log('L', |rt| {
                format!("{} {dst} {} {pins}", rt.handle_name(h), level.log_code())
            });
        } else {
            self.data.replicas.get_mut(h, dst).prefetch_pins += pins;
        }
    }

    /// Prefetch pins for replica (`h`, `node`) just requested: carried by the request that
    /// loads it, or added now if the data are there or come through RAM (simplified: a relay's
    /// pins are not carried).
    pub(crate) fn carry_pins(&mut self, h: u32, node: u32, pins: u32) {
        match self.data.replicas.get(h, node).incoming {
            Some(l) if self.data.copies.xfers[l as usize].dst == node => {
                self.data.copies.xfers[l as usize].pins += pins;
            }
            _ => self.data.replicas.get_mut(h, node).prefetch_pins += pins,
        }
    }

    /// A request was made (or raised) on (`src`, `dst`): its handling driver handles it in
    /// its progress. Under the paced policies a GPU driver whose thread is in its loop
    /// (waiting, which the post wakes; pushing; or in its progress) handles it at the end
    /// of that progress, just before it pops, as StarPU's driver goes through its node's
    /// request lists in `__starpu_datawizard_progress` ([`Runtime::paced_handler_in_loop`]).
    /// Otherwise it is handled now: a driver holding what it can take handles it in its
    /// next iteration, microseconds away, and the dm* drivers' progress is modelled only
    /// after a task's end ([`Runtime::pushing_driver`]).
    pub(crate) fn post(&mut self, src: u32, dst: u32) {
        let Some(w) = self
            .pacing
            .paced_handler_in_loop(Xfer::handler(src, dst), &self.model.machine)
        else {
            self.pump(src, dst);
            return;
        };
        self.pacing.park(w, src, dst);
        self.pacing
            .posted_on(Xfer::handler(src, dst), &self.model, &mut self.out);
    }

    pub(crate) fn pair(&self, src: u32, dst: u32) -> usize {
        src as usize * self.model.machine.nodes.len() + dst as usize
    }

    /// Starts the requests of a node pair its caps allow: fetches before prefetches, most
    /// urgent first, then in request order. A request allocates its destination as it starts
    /// (evicting as its level may); short of memory it stays queued until memory frees up
    /// there or a copy the node's driver handles ends. A prefetch that finds none stops every
    /// prefetch into its node, from any node, until then: StarPU's progress stops the node's
    /// prefetch lists at the first ENOMEM and starts again from RAM's list each time. A pair
    /// whose GPU driver is pushing what its task released waits for that driver's progress
    /// ([`Runtime::pushing_driver`]).
    pub(crate) fn pump(&mut self, src: u32, dst: u32) {
        if let Some(w) = self
            .pacing
            .pushing_driver(Xfer::handler(src, dst), &self.model.machine)
        {
            self.pacing.park(w, src, dst);
            return;
        }
        let pair = self.pair(src, dst);
        let mut no_memory: Vec<u32> = Vec::new();
        loop {
            let best = self.data.copies.requests[pair]
                .iter()
                .find(|key| !no_memory.contains(&key.2))
                .copied();
            let Some(key) = best else { break };
            let x = key.2;
            let (h, level) = {
                let xf = &self.data.copies.xfers[x as usize];
                (xf.handle, xf.level)
            };
            if self.data.copies.inflight[pair] >= level.cap() {
                break;
            }
            // StarPU pushes a node's prefetches only while none of its requests lacks memory.
            if level != Level::Fetch
                && (!no_memory.is_empty()
                    || !self.data.mem.mem_wait[dst as usize].is_empty()
                    || self.data.mem.prefetch_stuck[dst as usize])
            {
                break;
            }
            if self.data.copies.xfers[x as usize].joins && !self.join_loads_itself(x) {
                self.data.copies.requests[pair].remove(&key);
                self.data.replicas.get_mut(h, src).refcnt -= 1;
                self.resolve_join(x);
                continue;
            }
            // StarPU sets the replica's `load_request` as it handles the request, before
            // allocating: short of memory it stays set, and the data count as loading.
            if self.data.replicas.get(h, dst).incoming == Some(x) {
                self.data.replicas.get_mut(h, dst).loading = true;
            }
            if !self.allocate(h, dst, Evict::for_level(level)) {
                self.log('N', |rt| {
                    format!("{} {dst} {}", rt.handle_name(h), level.log_code())
                });
                self.data.mem.prefetch_stuck[dst as usize] = true;
                if level == Level::Fetch {
                    no_memory.push(x);
                    continue;
                }
                break;
            }
            self.data.copies.requests[pair].remove(&key);
            self.data.copies.inflight[pair] += 1;
            self.launch(x);
        }
    }

    /// Memory came free on `node`: the requests into it that wait for some try again, RAM's
    /// first.
    pub(crate) fn pump_into(&mut self, node: u32) {
        self.data.mem.prefetch_stuck[node as usize] = false;
        for src in 0..self.model.machine.nodes.len() as u32 {
            if src != node && !self.data.copies.requests[self.pair(src, node)].is_empty() {
                self.pump(src, node);
            }
        }
    }

    /// Starts transfer `x`: after its queueing cost, and on the shared bus after the copies it
    /// must follow.
    pub(crate) fn launch(&mut self, x: u32) {
        let Xfer {
            handle: h,
            src,
            dst,
            ..
        } = self.data.copies.xfers[x as usize];
        self.data.copies.xfers[x as usize].launched = true;
        self.log('X', |rt| {
            let xf = &rt.data.copies.xfers[x as usize];
            let origin = if xf.writeback {
                "writeback"
            } else {
                xf.level.name()
            };
            format!("{src} {dst} {} {origin}", rt.handle_name(h))
        });
        if self.data.replicas.get(h, dst).incoming == Some(x) {
            self.data.replicas.get_mut(h, dst).loading = true;
        }
        let size = self.model.graph.handles[h as usize].size;
        self.out.report.transfers += 1;
        match (src, dst) {
            (0, _) => self.out.report.bytes_h2d += size,
            (_, 0) => self.out.report.bytes_d2h += size,
            _ => self.out.report.bytes_d2d += size,
        }
        // Queueing cost, after the allocations the destination's driver owes, paid by the
        // driver handling the copy after the copies it submitted before.
        let owed = std::mem::take(&mut self.data.mem.debt[dst as usize]);
        let driver = Xfer::handler(src, dst) as usize;
        let mut at = self
            .out
            .now
            .saturating_add(SimTime::from_secs_saturating(owed))
            .max(self.data.copies.driver_free[driver]);
        if self.model.flags.overheads {
            at = at.saturating_add(SimTime::from_secs_saturating(QUEUE_COST));
        }
        self.data.copies.driver_free[driver] = at;
        if !self.model.flags.shared_bus {
            let t = self.model.machine.alone(src, dst, size);
            self.out.timers.push((
                at.saturating_add(SimTime::from_secs_saturating(t)),
                Due::XferDone(x),
            ));
        } else if at > self.out.now {
            // StarPU-SimGrid submits the copy (and orders it against the others) once the
            // driver has slept for the allocations and the queueing.
            self.out.timers.push((at, Due::XferSubmit(x)));
        } else {
            self.submit(x);
        }
    }

    /// Copy `x` reaches the shared bus: it waits for the pending copies it must follow
    /// (StarPU-SimGrid's `transfer_submit`), else its flow starts now.
    pub(crate) fn submit(&mut self, x: u32) {
        let (src, dst) = (
            self.data.copies.xfers[x as usize].src,
            self.data.copies.xfers[x as usize].dst,
        );
        let mut waits = 0;
        for &p in &self.data.copies.pending {
            let old = &mut self.data.copies.xfers[p as usize];
            if Xfer::after((src, dst), (old.src, old.dst)) {
                old.wakes.push(x);
                waits += 1;
            }
        }
        self.data.copies.pending.push(x);
        self.data.copies.xfers[x as usize].waits = waits;
        if waits == 0 {
            self.out.flows.push((self.out.now, x));
        }
    }

    /// Transfer `x` is over: the copies serialised behind it may go.
    pub(crate) fn unblock_after(&mut self, x: u32) {
        if let Some(i) = self.data.copies.pending.iter().position(|&p| p == x) {
            self.data.copies.pending.remove(i);
        }
        let now = self.out.now;
        for w in std::mem::take(&mut self.data.copies.xfers[x as usize].wakes) {
            let next = &mut self.data.copies.xfers[w as usize];
            next.waits -= 1;
            if next.waits == 0 {
                // Submitted (at its queueing's end) before what it waited for ended.
                self.out.flows.push((now, w));
            }
        }
    }

    /// Copy `x` ended: the datawizard's half (the request lists, the replicas' states, an
    /// eviction's pass going on). What the worker loop does next comes back as a
    /// [`CopyEnd`], which `Runtime::xfer_done` carries out.
    pub(crate) fn end_copy(&mut self, x: u32) -> CopyEnd {
        self.unblock_after(x);
        let Xfer {
            handle: h,
            src,
            dst,
            writeback,
            ..
        } = self.data.copies.xfers[x as usize];
        let then = std::mem::take(&mut self.data.copies.xfers[x as usize].then);
        let (level, prio) = (
            self.data.copies.xfers[x as usize].level,
            self.data.copies.xfers[x as usize].prio,
        );
        self.data.tick += 1;
        self.data.copies.handle_xfers[h as usize] -= 1;
        self.wake_writers_of(h);
        let pair = self.pair(src, dst);
        self.data.copies.inflight[pair] -= 1;
        // The end wakes the drivers of its handling node (StarPU-SimGrid's
        // `_starpu_wake_all_blocked_workers_on_node`), whose progress goes through the node's
        // request lists again: a prefetch held back for memory tries again (the copy's source
        // on a GPU may be evictable now).
        self.data.mem.freed[Xfer::handler(src, dst) as usize] = true;
        let driver_back = if writeback {
            self.write_back_ended(h, src)
        } else {
            self.copy_landed(x, h, src, dst);
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
    fn wake_writers_of(&mut self, h: u32) {
        if self.data.copies.handle_xfers[h as usize] == 0 && !self.data.copies.write_wait.is_empty()
        {
            let waiting = std::mem::take(&mut self.data.copies.write_wait);
            for (wh, w) in waiting {
                if wh == h {
                    self.pacing.wake(w);
                } else {
                    self.data.copies.write_wait.push((wh, w));
                }
            }
        }
    }

    /// An eviction's write-back of `h` from `src` to RAM ended: RAM owns the data again
    /// unless a task took the GPU's replica meanwhile, and the eviction's pass goes on.
    /// Returns the node whose driver goes on, once its pass is over.
    fn write_back_ended(&mut self, h: u32, src: u32) -> Option<u32> {
        self.data.replicas.get_mut(h, 0).incoming = None;
        self.data.replicas.get_mut(h, 0).loading = false;
        let n = src as usize;
        if self.data.replicas.get(h, src).refcnt > 0 {
            // A task took the replica meanwhile: keep it, both copies now valid; the
            // eviction still has its bytes to free.
            self.data.replicas.get_mut(h, src).evicting = false;
            self.data.replicas.get_mut(h, src).state = Msi::Shared;
            self.data.replicas.get_mut(h, 0).state = Msi::Shared;
            self.data.mem.reclaim_left[n].0 += self.model.graph.handles[h as usize].size;
        } else {
            // RAM holds the data again; the GPU copy goes.
            self.data.replicas.get_mut(h, 0).state = Msi::Owner;
            self.free(h, src);
        }
        self.data.mem.writebacks[n] -= 1;
        self.log('b', |rt| format!("{src} {} 0", rt.handle_name(h)));
        // The eviction's pass goes on to its next victims.
        if self.data.mem.writebacks[n] == 0 {
            let (left, for_prefetch) = std::mem::take(&mut self.data.mem.reclaim_left[n]);
            if left > 0.0 {
                self.evict(src, left, for_prefetch);
            }
        }
        if !self.data.mem.reclaiming(n) {
            // The requests into the node held back while it reclaimed try again with the
            // others (the end flagged the node above); its driver goes on.
            return Some(src);
        }
        None
    }

    /// Copy `x` of `h` from `src` landed on `dst`: the replica there is valid (owned by the
    /// task that writes it there), its prefetch pins counted.
    fn copy_landed(&mut self, x: u32, h: u32, src: u32, dst: u32) {
        self.data.replicas.get_mut(h, src).refcnt -= 1;
        let mut r = self.data.replicas.get_mut(h, dst);
        r.incoming = None;
        r.loading = false;
        let allocated = r.allocated;
        if allocated {
            r.state = Msi::Shared;
            r.prefetch_pins += self.data.copies.xfers[x as usize].pins;
        }
        drop(r);
        if allocated {
            let mut s = self.data.replicas.get_mut(h, src);
            if s.state == Msi::Owner {
                s.state = Msi::Shared;
            }
            drop(s);
            // For the task that writes it there: the only valid copy now.
            if self.data.mem.writer_node[h as usize] == Some(dst) {
                self.own(h, dst);
            }
        }
    }

    /// The second hop of copies of `h` between GPUs without peer access: from RAM to each of
    /// `then`.
    pub(crate) fn relay(&mut self, h: u32, then: Vec<u32>, level: Level, prio: i64) {
        for node in then {
            self.new_xfer(h, 0, node, false, level, prio);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::runtime::model::Flags;
    use crate::runtime::setup::{TEST_FLAGS, a_and_b_written_on_the_gpu, test_runtime};

    #[test]
    fn copies_serialise_as_starpu_simgrid_does() {
        // Same pair: one CUDA stream per (src, dst).
        assert!(Xfer::after((0, 1), (0, 1)));
        // Different pairs from RAM overlap (they share the bus through max-min).
        assert!(!Xfer::after((0, 1), (0, 2)) && !Xfer::after((1, 0), (0, 1)));
        // Crossed GPU-GPU copies, and GPU-GPU against a copy into either end.
        assert!(Xfer::after((1, 2), (2, 1)));
        assert!(Xfer::after((1, 2), (0, 1)) && Xfer::after((1, 2), (0, 2)));
        assert!(Xfer::after((0, 2), (1, 2)) && Xfer::after((0, 1), (1, 2)));
        assert!(!Xfer::after((1, 0), (1, 2)) && !Xfer::after((0, 3), (1, 2)));
    }

    #[test]
    fn a_driver_submits_its_copies_in_turn_after_its_allocations() {
        // StarPU-SimGrid's GPU driver, handling two requests into its GPU: the first
        // allocates the sub-allocator's first chunk (a cudaMalloc, 175 us of sleep), sleeps
        // 10 us for the queueing and submits its copy (at 185 us, when it is ordered against
        // the copies pending then); the second, served from the chunk, sleeps 10 us after
        // that (195 us) and, on the same node pair, waits for the first copy to end.
        let dag = r#"(handles: [(name: "a", size: 1e6), (name: "b", size: 1e6)], tasks: [])"#;
        let flags = Flags {
            overheads: true,
            ..TEST_FLAGS
        };
        let mut rt = test_runtime(dag, "{}", 16e9, flags);
        for h in 0..2 {
            assert!(rt.allocate(h, 1, Evict::ForFetch));
            rt.request(h, 1, Level::Fetch, 0, None);
        }
        let us = |t: SimTime| (t.as_secs_f64() * 1e6).round() as u64;
        let submits: Vec<(u64, Due)> = rt.out.timers.iter().map(|&(t, d)| (us(t), d)).collect();
        assert_eq!(
            submits,
            [(185, Due::XferSubmit(0)), (195, Due::XferSubmit(1))]
        );
        assert!(
            rt.out.flows.is_empty(),
            "no copy is on the bus before its submission"
        );
        rt.out.timers.clear();
        rt.out.now = SimTime::from_secs_saturating(185e-6);
        rt.submit(0);
        rt.out.now = SimTime::from_secs_saturating(195e-6);
        rt.submit(1);
        let started: Vec<(u64, u32)> = rt.out.flows.iter().map(|&(t, x)| (us(t), x)).collect();
        assert_eq!(started, [(185, 0)]);
        assert_eq!(rt.data.copies.xfers[1].waits, 1);
    }

    #[test]
    fn a_node_pair_runs_two_prefetches_at_once_and_fetches_up_to_five() {
        let handles = (0..8)
            .map(|i| format!(r#"(name: "h{i}", size: 1e6)"#))
            .collect::<Vec<_>>()
            .join(", ");
        let dag = format!("(handles: [{handles}], tasks: [])");
        let mut rt = test_runtime(&dag, "{}", 16e9, TEST_FLAGS);
        let pair = rt.pair(0, 1);
        for h in 0..4 {
            assert!(rt.allocate(h, 1, Evict::ForPrefetch));
            rt.request(h, 1, Level::Prefetch, 0, None);
        }
        // StarPU 1.4's caps: prefetches start while fewer than 2 are in flight.
        assert_eq!(
            (
                rt.data.copies.inflight[pair],
                rt.data.copies.requests[pair].len()
            ),
            (2, 2)
        );
        for h in 4..8 {
            assert!(rt.allocate(h, 1, Evict::ForFetch));
            rt.request(h, 1, Level::Fetch, 0, None);
        }
        // Fetches start while fewer than 5 are: three more; the rest wait, fetches first.
        assert_eq!(
            (
                rt.data.copies.inflight[pair],
                rt.data.copies.requests[pair].len()
            ),
            (5, 3)
        );
        let queued: Vec<Level> = rt.data.copies.requests[pair].iter().map(|k| k.0).collect();
        assert_eq!(queued, [Level::Fetch, Level::Prefetch, Level::Prefetch]);
        // A fetch for data a prefetch asked for raises that request to fetch level.
        rt.request(2, 1, Level::Fetch, 0, None);
        let raised = rt.data.replicas.get(2, 1).incoming.unwrap();
        assert_eq!(rt.data.copies.xfers[raised as usize].level, Level::Fetch);
        // One copy ends: the queued fetch goes first.
        let done = rt.data.replicas.get(0, 1).incoming.unwrap();
        rt.xfer_done(done);
        assert_eq!(rt.data.copies.inflight[pair], 5);
        assert!(rt.data.copies.xfers[raised as usize].launched);
    }

    #[test]
    fn a_gpu_driver_handles_no_request_while_it_pushes_what_its_task_released() {
        // StarPU's CUDA driver ends a task, pushes what it released (1 us each), and handles
        // its node's request lists only in its next progress: a request into its GPU made
        // meanwhile neither allocates nor starts until then. A CPU pushing holds nothing back.
        let dag = r#"(handles: [(name: "a", size: 1e6), (name: "b", size: 1e6)], tasks: [])"#;
        let mut rt = test_runtime(dag, "{}", 16e9, TEST_FLAGS);
        let (gpu, cpu) = (0usize, 1usize);
        rt.pacing.deferred[cpu] = true;
        rt.request(0, 1, Level::Prefetch, 0, None);
        assert!(
            rt.data.replicas.get(0, 1).loading,
            "a CPU's pushes hold no GPU request"
        );
        rt.pacing.deferred[gpu] = true;
        rt.request(1, 1, Level::Prefetch, 0, None);
        let b = rt.data.replicas.get(1, 1);
        assert!(b.incoming.is_some() && !b.allocated && !b.loading);
        assert_eq!(rt.pacing.parked_pairs[gpu], [(0, 1)]);
        rt.resume(gpu as u32);
        assert!(rt.data.replicas.get(1, 1).allocated && rt.data.replicas.get(1, 1).loading);
        assert!(rt.pacing.parked_pairs[gpu].is_empty());
    }

    #[test]
    fn a_prefetch_short_of_memory_tries_again_when_its_nodes_driver_sees_a_copy_end() {
        // StarPU-SimGrid wakes the drivers of a copy's handling node when it ends, and their
        // progress goes through the node's request lists again. Here the GPU's dirty a is
        // copied to RAM for a CPU task: once that copy ends, a is clean and unreferenced,
        // and c's prefetch, held back for memory, takes its buffer.
        let mut rt = a_and_b_written_on_the_gpu();
        // b is pinned for a task queued on the GPU; a is read by its copy to RAM.
        rt.data.replicas.get_mut(1, 1).prefetch_pins = 1;
        assert!(rt.allocate(0, 0, Evict::No));
        rt.request(0, 0, Level::Fetch, 0, None);
        let up = rt
            .data
            .replicas
            .get(0, 0)
            .incoming
            .expect("a's copy to RAM");
        rt.request(2, 1, Level::Prefetch, 0, None);
        assert!(!rt.data.replicas.get(2, 1).allocated && rt.data.mem.prefetch_stuck[1]);
        // The copy ends, handled by the GPU's driver (its source's).
        rt.xfer_done(up);
        rt.progress();
        assert!(rt.data.replicas.get(2, 1).allocated && rt.data.replicas.get(2, 1).loading);
        assert!(!rt.data.replicas.get(0, 1).allocated && rt.data.replicas.get(0, 0).valid());
        assert!(!rt.data.mem.prefetch_stuck[1]);
    }

    /// Four handles of 1 MB and a GPU of 16 GB (memory never runs short), with b and d
    /// copied in: the RAM-to-GPU pair's two prefetch slots are taken.
    fn prefetch_slots_taken() -> Runtime {
        let dag = r#"(handles: [(name: "a", size: 1e6), (name: "b", size: 1e6),
            (name: "c", size: 1e6), (name: "d", size: 1e6)], tasks: [])"#;
        let mut rt = test_runtime(dag, "{}", 16e9, TEST_FLAGS);
        for h in [1, 3] {
            rt.request(h, 1, Level::Prefetch, 0, None);
        }
        rt
    }

    /// [`prefetch_slots_taken`] with a task's prefetch of a queued, pinning a when it lands:
    /// that request's index.
    fn a_prefetch_queued(rt: &mut Runtime) -> u32 {
        rt.request(0, 1, Level::Prefetch, 0, None);
        rt.carry_pins(0, 1, 1);
        rt.data.replicas.get(0, 1).incoming.unwrap()
    }

    #[test]
    fn a_joining_request_whose_data_went_copies_them_in_its_turn() {
        // StarPU's request stacked for another task, handled when the replica is invalid and
        // nothing loads it, copies it itself: in its place in the list, before the requests
        // made after it.
        let mut rt = prefetch_slots_taken();
        // a is on the GPU (landed for a first task): another task's request waits its turn.
        assert!(rt.allocate(0, 1, Evict::ForPrefetch));
        rt.data.replicas.get_mut(0, 1).state = Msi::Shared;
        rt.join(0, 0, 1, 0, 0);
        let j = rt.data.copies.requests[rt.pair(0, 1)].first().unwrap().2;
        rt.request(2, 1, Level::Prefetch, 0, None);
        let c = rt.data.replicas.get(2, 1).incoming.unwrap();
        // a goes before that turn; then b lands and frees a slot.
        rt.free(0, 1);
        let b = rt.data.replicas.get(1, 1).incoming.unwrap();
        rt.xfer_done(b);
        assert_eq!(
            rt.data.replicas.get(0, 1).incoming,
            Some(j),
            "the join loads a itself"
        );
        assert!(
            rt.data.copies.xfers[j as usize].launched && !rt.data.copies.xfers[c as usize].launched
        );
        rt.xfer_done(j);
        let a = rt.data.replicas.get(0, 1);
        assert!(a.valid() && a.prefetch_pins == 1, "with its pin");
    }

    #[test]
    fn a_join_served_before_its_queued_loader_loads_and_the_loader_keeps_its_pin() {
        // StarPU handles its lists most urgent first: a more urgent task's request for data
        // another task's request is to load, served first, finds nothing loading and copies
        // them itself. The other request stays where it was and, at its turn, finds the data
        // there and adds its pin (in flight, it would lose it).
        let mut rt = prefetch_slots_taken();
        let pair = rt.pair(0, 1);
        let l = a_prefetch_queued(&mut rt);
        rt.join(0, 0, 1, 5, 7);
        let x = rt.data.copies.requests[pair].first().unwrap().2;
        assert_ne!(x, l, "the more urgent request goes first");
        let b = rt.data.replicas.get(1, 1).incoming.unwrap();
        rt.xfer_done(b);
        assert_eq!(rt.data.replicas.get(0, 1).incoming, Some(x), "x loads");
        assert!(rt.data.copies.xfers[x as usize].launched);
        assert!(
            rt.data.copies.xfers[l as usize].joins && !rt.data.copies.xfers[l as usize].launched
        );
        // x's end frees a slot: l's turn comes in the same progress, after the end is seen.
        rt.xfer_done(x);
        assert!(rt.data.copies.requests[pair].is_empty());
        assert_eq!(
            rt.data.replicas.get(0, 1).prefetch_pins,
            2,
            "x's pin and l's"
        );
        assert_eq!(
            rt.data.replicas.get(0, 0).refcnt,
            0,
            "both let their source go"
        );
    }

    #[test]
    fn a_fetch_for_data_another_tasks_prefetch_is_to_load_loads_them_itself() {
        // Task 1's fetch finds task 0's prefetch of a still queued: StarPU merges no requests
        // of different tasks, so the fetch's own request, served first, loads a, and task 0's
        // stays in its place with its pin, to add it once a is there.
        let mut rt = prefetch_slots_taken();
        let pair = rt.pair(0, 1);
        let l = a_prefetch_queued(&mut rt);
        rt.data.copies.xfers[l as usize].task = Some(0);
        rt.request(2, 1, Level::Prefetch, 0, None);
        let c = rt.data.replicas.get(2, 1).incoming.unwrap();
        rt.request(0, 1, Level::Fetch, 0, Some(1));
        let f = rt.data.replicas.get(0, 1).incoming.unwrap();
        assert_ne!(f, l);
        assert!(
            rt.data.copies.xfers[f as usize].launched,
            "a fetch under its cap of 5"
        );
        assert_eq!(rt.data.copies.xfers[l as usize].level, Level::Prefetch);
        let order: Vec<u32> = rt.data.copies.requests[pair].iter().map(|k| k.2).collect();
        assert_eq!(order, [l, c], "task 0's request keeps its place");
        rt.xfer_done(f);
        let b = rt.data.replicas.get(1, 1).incoming.unwrap();
        rt.xfer_done(b);
        assert_eq!(rt.data.replicas.get(0, 1).prefetch_pins, 1, "task 0's pin");
        assert!(rt.data.copies.xfers[c as usize].launched);
    }

    #[test]
    fn a_joining_request_holds_its_source_until_its_turn() {
        // StarPU takes a reference on a request's source when it creates the request, a
        // request stacked on another task's copy too: the source cannot be evicted while it
        // waits in its list.
        let dag = r#"(handles: [(name: "a", size: 1e6), (name: "b", size: 1e6)], tasks: [])"#;
        let mut rt = test_runtime(dag, "{}", 16e9, TEST_FLAGS);
        for h in 0..2 {
            rt.request(h, 1, Level::Prefetch, 0, None);
        }
        // Two prefetches in flight (the pair's cap): another task's request for a waits.
        rt.join(0, 0, 1, 0, 0);
        assert_eq!(
            rt.data.replicas.get(0, 0).refcnt,
            2,
            "a's copy and the waiting request"
        );
        let b = rt.data.replicas.get(1, 1).incoming.unwrap();
        rt.xfer_done(b);
        assert_eq!(
            rt.data.replicas.get(0, 0).refcnt,
            1,
            "handled: only a's copy holds it"
        );
    }
}
