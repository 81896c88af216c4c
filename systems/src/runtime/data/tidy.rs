//! StarPU's background tidying of GPU memory (memalloc.c, `starpu_memchunk_tidy`, run at
//! each progress of a node's driver; here after each instant's worker moves): when fewer
//! than 5 % of a GPU's buffers are marked clean (every buffer is when allocated, whatever RAM
//! holds, as `_starpu_memchunk_init` sets it; a task writing it here dirties it; a write-back
//! asked for marks it clean again), tidying walks the eviction order from the dirty head and
//! marks dirty buffers clean until 10 % are, writing back those RAM lacks as idle requests
//! (they start only when their node pair has nothing else in flight).
//! Clean buffers are then evicted or taken over without a synchronous write-back. Buffers of
//! handles a popped task writes are skipped, as StarPU skips handles in W mode with
//! references. The dirty head is StarPU's shortcut: it follows the walk, stops at the first
//! skipped buffer, and is unset at the end of the list, so a buffer dirtied in place (a
//! write whose data had to be fetched) before it waits until it is used again.
//! On by default (switch `memory_tidying`), as in StarPU: its log of attila dmdas at 512 MB
//! per GPU, 80 tiles, shows 49,199 tidying write-backs against 23,582 at eviction. It was off
//! until requests allocated as they start and prefetch pins followed StarPU; before that it
//! made eager at 1024 MB 17-29 % fast. Until buffers copied from another GPU were marked
//! clean at allocation, it wrote back 17 times what StarPU does under eager (attila, 1024 MB,
//! 48 tiles: 5,728 write-backs against StarPU's 333; now 23) and made attila eager at
//! 2763 MB, 80 tiles, 18 % fast (now 5 %). Under dmdas StarPU tidies far more (attila,
//! 512 MB, 48 tiles: 3,997 write-backs against hetsim's 24) as its prefetch for a task that
//! writes the data dirties the copy at once; since hetsim does so too, 712 GPU-only, none with
//! 8 CPUs (issue 21's note, 2026-11-26).
//! StarPU's second trigger, on free memory (`STARPU_MINIMUM_AVAILABLE_MEM`), is off by
//! default in StarPU and not modelled.

use super::kinds::{Evict, Level};
use super::{Data, DataCx};

/// `STARPU_MINIMUM_CLEAN_BUFFERS`: tidying starts under this share of clean buffers (%).
pub const MINIMUM_CLEAN: usize = 5;
/// `STARPU_TARGET_CLEAN_BUFFERS`: and goes on until this share is clean (%).
pub const TARGET_CLEAN: usize = 10;

/// How many more of a node's `buffers` should be marked clean, `clean` of them being so:
/// none unless under the minimum, else up to the target (StarPU's integer percentages).
pub fn shortfall(buffers: usize, clean: usize) -> usize {
    if clean >= buffers * MINIMUM_CLEAN / 100 {
        return 0;
    }
    (buffers * TARGET_CLEAN / 100).saturating_sub(clean)
}

/// What one tidying pass does: the buffers it marks clean, and where the dirty head is left.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Pass {
    pub marks: Vec<u32>,
    pub head: Option<(u64, u32)>,
}

/// StarPU's walk from the dirty head (`from_head`: the eviction order from there on) until
/// `want` buffers are marked: clean ones are passed, dirty ones being written are skipped,
/// the rest marked. The head follows the walk until a buffer is skipped; reaching the end
/// unsets it, so buffers dirtied in place before the head wait until a dirty buffer is
/// pushed back.
pub fn walk(
    from_head: impl Iterator<Item = (u64, u32)>,
    want: usize,
    dirty: impl Fn(u32) -> bool,
    written: impl Fn(u32) -> bool,
) -> Pass {
    let mut order = from_head;
    let mut at = order.next();
    let mut head = at;
    let mut marks = Vec::new();
    let mut skipped = false;
    while let Some((_, h)) = at {
        if marks.len() == want {
            break;
        }
        if dirty(h) {
            if written(h) {
                skipped = true;
            } else {
                marks.push(h);
            }
        }
        at = order.next();
        if at.is_none() || !skipped {
            head = at;
        }
    }
    Pass { marks, head }
}

impl Data {
    /// Tidies GPU node `node`: marks dirty buffers clean and writes back those RAM lacks.
    pub(crate) fn tidy(&mut self, cx: &mut DataCx<'_>, node: u32) {
        if !cx.model.flags.tidy {
            return;
        }
        let n = node as usize;
        let want = shortfall(
            self.mem.lru[n].len(),
            self.replicas.marked_clean(node) as usize,
        );
        let Some(head) = self.mem.dirty_head[n] else {
            return;
        };
        if want == 0 {
            return;
        }
        debug_assert!(self.mem.lru[n].contains(head), "dirty head off the list");
        let pass = walk(
            self.mem.lru[n].from(head),
            want,
            |h| !self.replicas.get(h, node).marked_clean,
            |h| self.mem.writing[h as usize] > 0,
        );
        self.mem.dirty_head[n] = pass.head;
        for h in pass.marks {
            self.replicas.get_mut(h, node).marked_clean = true;
            // Already in RAM (or on its way there): the mark alone was stale.
            let ram = self.replicas.get(h, 0);
            if ram.valid() || ram.incoming.is_some() {
                continue;
            }
            cx.out.report.tidy_writebacks += 1;
            self.allocate(cx, h, 0, Evict::No);
            self.request(cx, h, 0, Level::Idle, 0, None);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tidying_starts_under_five_percent_clean_and_aims_at_ten() {
        // 277 buffers (1024 MB of 3.5 MiB tiles): 13 clean is the minimum, 27 the target.
        assert_eq!(shortfall(277, 13), 0);
        assert_eq!(shortfall(277, 12), 15);
        assert_eq!(shortfall(277, 0), 27);
        // Under 20 buffers, 5 % rounds down to none: never.
        assert_eq!(shortfall(19, 0), 0);
        assert_eq!(shortfall(20, 0), 2);
    }

    #[test]
    fn a_pass_walks_from_the_dirty_head_and_stops_following_it_after_a_skip() {
        let lru = [(1u64, 7u32), (2, 3), (3, 9), (4, 4), (5, 8), (6, 1)];
        let clean = [3u32];
        let written = [9u32];
        let dirty = |h| !clean.contains(&h);
        let busy = |h| written.contains(&h);
        // From 7: 3 is clean, 9 is being written (skipped), 4 and 8 marked; the head stayed
        // on 9, the first buffer it could not take.
        let pass = walk(lru.iter().copied(), 3, dirty, busy);
        assert_eq!(pass.marks, vec![7, 4, 8]);
        assert_eq!(pass.head, Some((3, 9)));
        // No skip: the head follows the walk to the buffer after the last one marked.
        let pass = walk(lru[3..].iter().copied(), 1, dirty, busy);
        assert_eq!((pass.marks, pass.head), (vec![4], Some((5, 8))));
        // Reaching the end unsets the head, skip or not.
        let pass = walk(lru[2..].iter().copied(), 9, dirty, busy);
        assert_eq!((pass.marks, pass.head), (vec![4, 8, 1], None));
    }
}
