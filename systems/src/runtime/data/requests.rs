//! Requests (StarPU's data_request.c): request lists per node pair served by level (fetch,
//! prefetch, idle) and priority under StarPU 1.4's in-flight caps, requests of other tasks
//! joining one that loads, relays through RAM between GPUs without peer access, and
//! push-time prefetch with its pins.

use super::coherency::Msi;
use super::copies::{Xfer, request_key};
use super::kinds::{Evict, Level};
use super::{Data, DataCx};
use crate::runtime::out::handle_name;

impl Data {
    /// dm* prefetch at push: request the task's inputs on `w`'s node. Each is pinned against
    /// other prefetches' evictions once it is there, until the popped task's fetch has all its
    /// data; buffers are allocated only when the requests start (StarPU allocates as it
    /// handles a request).
    pub(crate) fn prefetch(&mut self, cx: &mut DataCx<'_>, t: u32, w: usize) {
        if !cx.model.flags.prefetch {
            return;
        }
        let node = cx.model.machine.workers[w].node;
        self.mem.prefetched[t as usize] = true;
        let prio = cx.model.graph.tasks[t as usize].priority;
        let acc = cx.model.graph.tasks[t as usize].accesses.clone();
        for (h, mode) in acc {
            if !mode.reads() {
                continue;
            }
            if mode.writes() {
                self.mem.writer_node[h as usize] = Some(node);
            }
            let r = *self.replicas.get(h, node);
            if r.valid() {
                // StarPU: a request finding the data there pins them and marks its chunk
                // recently used; for a write, that copy is the only valid one from now on.
                self.replicas.get_mut(h, node).prefetch_pins += 1;
                if mode.writes() {
                    self.own(cx, h, node);
                }
                self.touch(h, node);
            } else if let Some(l) = r.incoming {
                // Requested for another task: this one's request joins a direct copy (a relay
                // through RAM gets the pin now, as `carry_pins` gives it).
                let loader = &self.copies.xfers[l as usize];
                if loader.dst == node {
                    self.join(cx, h, loader.src, node, prio, t);
                } else {
                    self.carry_pins(h, node, 1);
                }
            } else {
                self.request(cx, h, node, Level::Prefetch, prio, None);
                if let Some(l) = self.replicas.get(h, node).incoming {
                    self.copies.xfers[l as usize].task = Some(t);
                }
                self.carry_pins(h, node, 1);
            }
        }
    }

    /// The task leaves its worker's queue: its prefetch pins go.
    pub(crate) fn unpin_prefetch(&mut self, cx: &mut DataCx<'_>, t: u32, node: u32) {
        if std::mem::take(&mut self.mem.prefetched[t as usize]) {
            let acc = cx.model.graph.tasks[t as usize].accesses.clone();
            for (h, mode) in acc {
                // StarPU's decrement, which may take another task's pin when this one's
                // was lost or has not landed yet.
                if mode.reads() && self.replicas.get(h, node).prefetch_pins > 0 {
                    self.replicas.get_mut(h, node).prefetch_pins -= 1;
                }
            }
            self.mem.freed[node as usize] = true;
        }
    }

    /// Brings a valid copy of `h` to `node` unless it is there or coming; `task` asks for it
    /// (a fetch), if any. A fetch for data a queued prefetch asked for raises that request to
    /// its level; if another task's prefetch made it, that prefetch's pins move to a joining
    /// request (StarPU: the fetch's own request loads, the prefetch's then finds it loading).
    pub(crate) fn request(
        &mut self,
        cx: &mut DataCx<'_>,
        h: u32,
        node: u32,
        level: Level,
        prio: i64,
        task: Option<u32>,
    ) {
        let r = *self.replicas.get(h, node);
        if let Some(x) = r.incoming {
            self.raise(cx, x, node, level, prio, task);
            return;
        }
        if r.state != Msi::Invalid {
            return;
        }
        let Some(src) = self.source_for(cx, h, node) else {
            return; // never written: nothing to move
        };
        let x = if cx.model.machine.direct[src as usize][node as usize] {
            self.new_xfer(cx, Xfer::copy(h, src, node, level, prio))
        } else {
            // No peer access: to RAM first (or with the copy already going there), then on.
            self.allocate(cx, h, 0, Evict::No);
            self.request(cx, h, 0, level, prio, None);
            let x = self
                .replicas
                .get(h, 0)
                .incoming
                .expect("RAM copy requested");
            self.copies.xfers[x as usize].then.push(node);
            x
        };
        self.replicas.get_mut(h, node).incoming = Some(x);
    }

    /// A request into `node` finds copy `x` of its data already requested: a fetch raises it
    /// (StarPU's U line), a more urgent one requeues it; a fetch meeting another task's
    /// queued prefetch that pins data gets its own request, which loads in its place.
    fn raise(
        &mut self,
        cx: &mut DataCx<'_>,
        x: u32,
        node: u32,
        level: Level,
        prio: i64,
        task: Option<u32>,
    ) {
        let (h, old) = (
            self.copies.xfers[x as usize].handle,
            self.copies.xfers[x as usize].level,
        );
        if level == Level::Fetch && old != Level::Fetch {
            // StarPU raises it, queued or in flight (its log's U line).
            cx.out.log('U', || {
                format!("{} {node} {}", handle_name(h), old.log_code())
            });
        }
        let xf = &self.copies.xfers[x as usize];
        if !xf.launched && (level == Level::Fetch || prio > xf.prio) {
            let (src, dst, pins) = (xf.src, xf.dst, xf.pins);
            if level == Level::Fetch && xf.level != Level::Fetch && xf.task != task && pins > 0 {
                // The fetch's own request, served first, loads; the prefetch's stays
                // where it is and, at its turn, finds the data loading or there.
                let f = self.add_join(cx, Xfer::joining(h, src, dst, Level::Fetch, prio, 0));
                self.copies.xfers[f as usize].task = task;
                self.hand_over_load(x, f);
                self.post(cx, src, dst);
                return;
            }
            self.requeue(x, |xf| {
                xf.prio = xf.prio.max(prio);
                if level == Level::Fetch {
                    xf.level = Level::Fetch;
                }
            });
            self.post(cx, src, dst);
        }
    }

    /// A transfer of `h` from `src` to `dst`: a request joins its node pair's list and starts
    /// when the caps allow (its source stays while it is read); a write-back starts at once
    /// (its source is `evicting` instead).
    pub(crate) fn new_xfer(&mut self, cx: &mut DataCx<'_>, new: Xfer) -> u32 {
        let Xfer {
            handle: h,
            src,
            dst,
            writeback,
            level,
            ..
        } = new;
        let x = self.copies.xfers.len() as u32;
        self.copies.handle_xfers[h as usize] += 1;
        // Set before the pair is pumped: allocations made there must not evict `dst`.
        self.replicas.get_mut(h, dst).incoming = Some(x);
        if !writeback {
            self.replicas.get_mut(h, src).refcnt += 1;
        }
        self.copies.xfers.push(new);
        if writeback {
            // StarPU's synchronous write-back is a fetch request on the pair: it counts as
            // in flight there (idle requests wait for it).
            let pair = self.pair(src, dst);
            self.copies.inflight[pair] += 1;
            self.launch(cx, x);
        } else {
            self.enqueue(x);
            self.log_request(cx, h, src, dst, level);
            self.post(cx, src, dst);
            // Posting it flags and signals its handler's driver.
            cx.pacing
                .posted_on(Xfer::handler(src, dst), cx.model, cx.out);
        }
        x
    }

    /// A request of another task for replica (`h`, `dst`), which a request from `src` already
    /// loads: it copies nothing and waits in that pair's list with its pins ([`Xfer::joins`]).
    /// `task`: the task whose prefetch makes it.
    pub(crate) fn join(
        &mut self,
        cx: &mut DataCx<'_>,
        h: u32,
        src: u32,
        dst: u32,
        prio: i64,
        task: u32,
    ) {
        let x = self.add_join(cx, Xfer::joining(h, src, dst, Level::Prefetch, prio, 1));
        self.copies.xfers[x as usize].task = Some(task);
        self.post(cx, src, dst);
    }

    /// [`Data::join`]'s request, listed but not yet served: its index.
    fn add_join(&mut self, cx: &mut DataCx<'_>, new: Xfer) -> u32 {
        let Xfer {
            handle: h,
            src,
            dst,
            level,
            ..
        } = new;
        let x = self.copies.xfers.len() as u32;
        self.copies.xfers.push(new);
        // Like every request that reads, it holds its source until handled (StarPU takes
        // the reference when it creates the request).
        self.replicas.get_mut(h, src).refcnt += 1;
        self.log_request(cx, h, src, dst, level);
        self.enqueue(x);
        x
    }

    /// Puts request `x` in its node pair's list, at its key's place.
    fn enqueue(&mut self, x: u32) {
        let xf = &self.copies.xfers[x as usize];
        let (pair, key) = (self.pair(xf.src, xf.dst), request_key(xf, x));
        self.copies.requests[pair].insert(key);
    }

    /// Changes queued request `x`'s level or priority, keeping its list in order.
    fn requeue(&mut self, x: u32, change: impl FnOnce(&mut Xfer)) {
        let xf = &self.copies.xfers[x as usize];
        let pair = self.pair(xf.src, xf.dst);
        self.copies.requests[pair].remove(&request_key(xf, x));
        change(&mut self.copies.xfers[x as usize]);
        self.enqueue(x);
    }

    /// The log's line for a request made (a copy's or a joining one).
    fn log_request(&mut self, cx: &mut DataCx<'_>, h: u32, src: u32, dst: u32, level: Level) {
        cx.out.log('Q', || {
            format!("{} {src} {dst} {}", handle_name(h), level.log_code())
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
            self.copies.xfers[x as usize].handle,
            self.copies.xfers[x as usize].dst,
        );
        let r = *self.replicas.get(h, dst);
        if r.loading || (r.incoming.is_none() && r.valid()) {
            return false;
        }
        // Its source, held since the request was made, is still valid.
        debug_assert!(
            self.replicas
                .get(h, self.copies.xfers[x as usize].src)
                .valid(),
            "a joining request's source went"
        );
        match r.incoming {
            Some(l) => self.hand_over_load(l, x),
            None => {
                self.copies.xfers[x as usize].joins = false;
                self.copies.handle_xfers[h as usize] += 1;
                self.replicas.get_mut(h, dst).incoming = Some(x);
            }
        }
        true
    }

    /// Queued loader `l` of a replica gives the loading to request `x` of another task and
    /// becomes a joining request where it stands (level, priority, place and pins kept); RAM
    /// legs it would forward go with the loading.
    fn hand_over_load(&mut self, l: u32, x: u32) {
        debug_assert!(
            !self.copies.xfers[l as usize].launched,
            "loader {l} started"
        );
        let then = std::mem::take(&mut self.copies.xfers[l as usize].then);
        self.copies.xfers[l as usize].joins = true;
        let xf = &mut self.copies.xfers[x as usize];
        xf.joins = false;
        xf.then = then;
        let (h, dst) = (xf.handle, xf.dst);
        self.replicas.get_mut(h, dst).incoming = Some(x);
    }

    /// A joining request's turn, with the replica loading or its data there: while the
    /// loader is in flight its pins are lost; once the data are there it adds them.
    fn resolve_join(&mut self, cx: &mut DataCx<'_>, x: u32) {
        let g = &self.copies.xfers[x as usize];
        let (h, dst, level, pins) = (g.handle, g.dst, g.level, g.pins);
        if self.replicas.get(h, dst).incoming.is_some() {
            cx.out.log('L', || {
                format!("{} {dst} {} {pins}", handle_name(h), level.log_code())
            });
        } else {
            self.replicas.get_mut(h, dst).prefetch_pins += pins;
        }
    }

    /// Prefetch pins for replica (`h`, `node`) just requested: carried by the request that
    /// loads it, or added now if the data are there or come through RAM (simplified: a relay's
    /// pins are not carried).
    pub(crate) fn carry_pins(&mut self, h: u32, node: u32, pins: u32) {
        match self.replicas.get(h, node).incoming {
            Some(l) if self.copies.xfers[l as usize].dst == node => {
                self.copies.xfers[l as usize].pins += pins;
            }
            _ => self.replicas.get_mut(h, node).prefetch_pins += pins,
        }
    }

    /// A request was made (or raised) on (`src`, `dst`): its handling driver handles it in
    /// its progress. Under the paced policies a GPU driver whose thread is in its loop
    /// (waiting, which the post wakes; pushing; or in its progress) handles it at the end
    /// of that progress, just before it pops, as StarPU's driver goes through its node's
    /// request lists in `__starpu_datawizard_progress` ([`Pacing::paced_handler_in_loop`](crate::runtime::pacing::Pacing::paced_handler_in_loop)).
    /// Otherwise it is handled now: a driver holding what it can take handles it in its
    /// next iteration, microseconds away, and the dm* drivers' progress is modelled only
    /// after a task's end ([`Pacing::pushing_driver`](crate::runtime::pacing::Pacing::pushing_driver)).
    pub(crate) fn post(&mut self, cx: &mut DataCx<'_>, src: u32, dst: u32) {
        let Some(w) = cx
            .pacing
            .paced_handler_in_loop(Xfer::handler(src, dst), &cx.model.machine)
        else {
            self.pump(cx, src, dst);
            return;
        };
        cx.pacing.park(w, src, dst);
        cx.pacing
            .posted_on(Xfer::handler(src, dst), cx.model, cx.out);
    }

    pub(crate) fn pair(&self, src: u32, dst: u32) -> usize {
        src as usize * self.replicas.nodes + dst as usize
    }

    /// Starts the requests of a node pair its caps allow: fetches before prefetches, most
    /// urgent first, then in request order. A request allocates its destination as it starts
    /// (evicting as its level may); short of memory it stays queued until memory frees up
    /// there or a copy the node's driver handles ends. A prefetch that finds none stops every
    /// prefetch into its node, from any node, until then: StarPU's progress stops the node's
    /// prefetch lists at the first ENOMEM and starts again from RAM's list each time. A pair
    /// whose GPU driver is pushing what its task released waits for that driver's progress
    /// ([`Pacing::pushing_driver`](crate::runtime::pacing::Pacing::pushing_driver)).
    pub(crate) fn pump(&mut self, cx: &mut DataCx<'_>, src: u32, dst: u32) {
        if let Some(w) = cx
            .pacing
            .pushing_driver(Xfer::handler(src, dst), &cx.model.machine)
        {
            cx.pacing.park(w, src, dst);
            return;
        }
        let pair = self.pair(src, dst);
        let mut no_memory: Vec<u32> = Vec::new();
        loop {
            let best = self.copies.requests[pair]
                .iter()
                .find(|key| !no_memory.contains(&key.2))
                .copied();
            let Some(key) = best else { break };
            let x = key.2;
            let (h, level) = {
                let xf = &self.copies.xfers[x as usize];
                (xf.handle, xf.level)
            };
            if self.copies.inflight[pair] >= level.cap() {
                break;
            }
            // StarPU pushes a node's prefetches only while none of its requests lacks memory.
            if level != Level::Fetch
                && (!no_memory.is_empty()
                    || !self.mem.mem_wait[dst as usize].is_empty()
                    || self.mem.prefetch_stuck[dst as usize])
            {
                break;
            }
            if self.copies.xfers[x as usize].joins && !self.join_loads_itself(x) {
                self.copies.requests[pair].remove(&key);
                self.replicas.get_mut(h, src).refcnt -= 1;
                self.resolve_join(cx, x);
                continue;
            }
            // StarPU sets the replica's `load_request` as it handles the request, before
            // allocating: short of memory it stays set, and the data count as loading.
            if self.replicas.get(h, dst).incoming == Some(x) {
                self.replicas.get_mut(h, dst).loading = true;
            }
            if !self.allocate(cx, h, dst, Evict::for_level(level)) {
                cx.out.log('N', || {
                    format!("{} {dst} {}", handle_name(h), level.log_code())
                });
                self.mem.prefetch_stuck[dst as usize] = true;
                if level == Level::Fetch {
                    no_memory.push(x);
                    continue;
                }
                break;
            }
            self.copies.requests[pair].remove(&key);
            self.copies.inflight[pair] += 1;
            self.launch(cx, x);
        }
    }

    /// Memory came free on `node`: the requests into it that wait for some try again, RAM's
    /// first.
    pub(crate) fn pump_into(&mut self, cx: &mut DataCx<'_>, node: u32) {
        self.mem.prefetch_stuck[node as usize] = false;
        for src in 0..cx.model.machine.nodes.len() as u32 {
            if src != node && !self.copies.requests[self.pair(src, node)].is_empty() {
                self.pump(cx, src, node);
            }
        }
    }
}
