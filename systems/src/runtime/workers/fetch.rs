//! A popped task's fetch: allocating and requesting its buffers in StarPU's handle order.

use super::dirties;
use crate::runtime::core::Runtime;
use crate::runtime::data::coherency::Msi;
use crate::runtime::data::kinds::Evict;
use crate::runtime::data::kinds::Level;
use crate::runtime::model::machine::Arch;

impl Runtime {
    /// Allocates and requests the task's data on the worker's node; true once all is there.
    pub(crate) fn fetch(&mut self, t: u32, w: usize) -> bool {
        let node = self.model.machine.workers[w].node;
        let mut ready = true;
        // In StarPU's order of the task's buffers, as `_starpu_fetch_task_input` walks them.
        for (h, mode) in self.model.graph.fetch_order(t) {
            if !self.with_data(|d, cx| d.allocate(cx, h, node, Evict::ForFetch)) {
                if !self.data.mem.mem_wait[node as usize].contains(&t) {
                    self.data.mem.mem_wait[node as usize].push(t);
                }
                return false;
            }
            if dirties(mode) {
                self.data.replicas.get_mut(h, node).marked_clean = false;
            }
            if mode.reads() {
                let prio = self.priority(t);
                self.with_data(|d, cx| d.request(cx, h, node, Level::Fetch, prio, Some(t)));
                let r = self.data.replicas.get(h, node);
                if r.state == Msi::Invalid || r.incoming.is_some() {
                    ready = false;
                }
            }
        }
        if ready {
            // StarPU: a write waits for the requests pending on its handle.
            let acc = &self.model.graph.tasks[t as usize].accesses;
            if let Some(&(h, _)) = acc
                .iter()
                .find(|&&(h, m)| m.modifies() && self.data.copies.handle_xfers[h as usize] > 0)
            {
                self.data.copies.write_wait.push((h, w as u32));
                return false;
            }
        }
        ready
    }

    /// Whether task `t` on worker `w` is a synchronous GPU kernel, which its driver runs
    /// itself (StarPU's CUDA driver fetches it, flushes its pipeline, then runs it blocking).
    pub(crate) fn runs_sync(&self, t: u32, w: usize) -> bool {
        matches!(self.model.machine.workers[w].arch, Arch::Cuda(_))
            && self.model.graph.cuda_sync_task(t)
    }

    /// Whether worker `w` holds a synchronous GPU task: its driver pops no more until that
    /// task ends.
    pub(crate) fn holds_sync(&self, w: usize) -> bool {
        self.workers.each[w]
            .in_hand
            .iter()
            .any(|&t| self.runs_sync(t, w))
    }
}
