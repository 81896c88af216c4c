//! StarPU's GPU sub-allocator (src/datawizard/malloc.c, on by default as
//! `STARPU_SUBALLOCATOR=1`): a buffer of at most 4 MiB is carved, in 16 KiB blocks, out of a
//! 32 MiB chunk; only a new chunk costs a cudaMalloc, and up to four wholly free chunks are
//! kept rather than given back with cudaFree. A 960 x 960 single-precision tile (3.5 MiB)
//! is served this way; a double-precision one (7 MiB) is allocated directly.
//!
//! StarPU's rules, which decide how many tiles fit under a memory limit: the 32 MiB chunks,
//! not the buffers, count against `STARPU_LIMIT_CUDA_MEM`; a chunk's free blocks are
//! segments in address order, taken first fit; the search walks the chunks in list order
//! (a chunk where a buffer was freed, or with room for two more, moves to the front) and
//! skips a chunk whose `available_max` hint is shorter than the request. The hint is
//! lowered when a search fails in the chunk, and raised by a free only when the freed
//! blocks merge with a free neighbour: a tile freed between two used ones is not seen until
//! then. So with 1024 MiB per GPU (attila, dmdas, 64 tiles, StarPU's own log) 32 chunks
//! have room for 288 tiles and StarPU holds 245-258 for most of the run.

use std::collections::BTreeMap;

/// Buffers up to this size are sub-allocated.
pub const MAX_SUB: f64 = 4.0 * 1048576.0;
/// One chunk's bytes: what a new chunk counts against the node's memory.
pub const CHUNK: f64 = 32.0 * 1048576.0;
const BLOCK: f64 = 16384.0;
const CHUNK_BLOCKS: u32 = 2048;
/// Wholly free chunks kept for later.
const KEEP_FREE: usize = 4;

/// Where a sub-allocated buffer is: its chunk and first block.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Slot {
    pub chunk: u32,
    pub block: u32,
}

/// One 32 MiB chunk.
#[derive(Debug, Clone)]
struct Chunk {
    /// Free segments: first block -> length, in address order.
    free: BTreeMap<u32, u32>,
    /// Free blocks in all.
    available: u32,
    /// StarPU's hint of the longest free segment (see the module doc).
    available_max: u32,
}

impl Chunk {
    fn new() -> Chunk {
        Chunk {
            free: BTreeMap::from([(0, CHUNK_BLOCKS)]),
            available: CHUNK_BLOCKS,
            available_max: CHUNK_BLOCKS,
        }
    }

    /// The first free segment of at least `b` blocks, first fit; else the hint is set to
    /// the longest one.
    fn find(&mut self, b: u32) -> Option<(u32, u32)> {
        let mut longest = 0;
        for (&start, &len) in &self.free {
            if len >= b {
                return Some((start, len));
            }
            longest = longest.max(len);
        }
        self.available_max = longest;
        None
    }

    /// Takes `b` blocks at the head of the free segment at `start` (of `len` blocks).
    fn take(&mut self, start: u32, len: u32, b: u32) {
        self.available -= b;
        self.free.remove(&start);
        if len > b {
            self.free.insert(start + b, len - b);
        }
    }

    /// Gives back `b` blocks at `start`, merged with free neighbours; a merge may raise the
    /// hint, a lone segment does not.
    fn give(&mut self, start: u32, b: u32) {
        self.available += b;
        let (mut start, mut len) = (start, b);
        if let Some(next) = self.free.remove(&(start + b)) {
            len += next;
            self.available_max = self.available_max.max(len);
        }
        if let Some((&p, &plen)) = self.free.range(..start).next_back()
            && p + plen == start
        {
            start = p;
            len += plen;
            self.available_max = self.available_max.max(len);
        }
        self.free.insert(start, len);
    }
}

/// The chunks of one memory node.
#[derive(Debug, Clone, Default)]
pub struct SubAllocator {
    /// Chunks by id; `None`: given back.
    chunks: Vec<Option<Chunk>>,
    /// StarPU's chunk list, front first: the order a search walks.
    order: Vec<u32>,
    /// Wholly free chunks kept.
    nfree: usize,
}

/// What an allocation or a free cost the node's driver.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Driver {
    Nothing,
    CudaMalloc,
    CudaFree,
}

impl SubAllocator {
    pub fn serves(size: f64) -> bool {
        size <= MAX_SUB
    }

    fn blocks(size: f64) -> u32 {
        (size / BLOCK).ceil().max(1.0) as u32
    }

    fn move_first(&mut self, c: u32) {
        let at = self
            .order
            .iter()
            .position(|&o| o == c)
            .expect("a listed chunk");
        self.order.remove(at);
        self.order.insert(0, c);
    }

    /// Places a buffer of `size` bytes in a chunk with room; else, when `may_grow` (a new
    /// chunk fits under the node's memory), in a new chunk (a cudaMalloc). `None`: out of
    /// memory.
    pub fn alloc(&mut self, size: f64, may_grow: bool) -> Option<(Slot, Driver)> {
        let b = Self::blocks(size);
        for at in 0..self.order.len() {
            let c = self.order[at];
            let chunk = self.chunks[c as usize].as_mut().expect("a live chunk");
            if chunk.available_max < b {
                continue;
            }
            let Some((start, len)) = chunk.find(b) else {
                continue;
            };
            if chunk.available == CHUNK_BLOCKS {
                self.nfree -= 1;
            }
            chunk.take(start, len, b);
            if len >= 2 * b {
                self.move_first(c);
            }
            let slot = Slot {
                chunk: c,
                block: start,
            };
            return Some((slot, Driver::Nothing));
        }
        if !may_grow {
            return None;
        }
        let mut chunk = Chunk::new();
        chunk.take(0, CHUNK_BLOCKS, b);
        let c = match self.chunks.iter().position(Option::is_none) {
            Some(i) => {
                self.chunks[i] = Some(chunk);
                i as u32
            }
            None => {
                self.chunks.push(Some(chunk));
                self.chunks.len() as u32 - 1
            }
        };
        self.order.insert(0, c);
        Some((Slot { chunk: c, block: 0 }, Driver::CudaMalloc))
    }

    /// Gives back a buffer of `size` bytes at `slot`: a chunk left wholly free beyond the
    /// four kept is freed (a cudaFree, and its 32 MiB no longer count); a chunk with room
    /// again moves to the front.
    pub fn free(&mut self, slot: Slot, size: f64) -> Driver {
        let c = slot.chunk;
        let chunk = self.chunks[c as usize].as_mut().expect("a live chunk");
        chunk.give(slot.block, Self::blocks(size));
        if chunk.available < CHUNK_BLOCKS {
            self.move_first(c);
            return Driver::Nothing;
        }
        if self.nfree < KEEP_FREE {
            self.nfree += 1;
            return Driver::Nothing;
        }
        self.chunks[c as usize] = None;
        self.order.retain(|&o| o != c);
        Driver::CudaFree
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const TILE: f64 = 3_686_400.0; // 960 x 960 floats: 225 blocks

    #[test]
    fn nine_tiles_share_one_cuda_malloc() {
        // 2048 blocks of 16 KiB per chunk hold nine 225-block tiles; the tenth opens a chunk.
        let mut s = SubAllocator::default();
        let costs: Vec<Driver> = (0..10).map(|_| s.alloc(TILE, true).unwrap().1).collect();
        assert_eq!(costs[0], Driver::CudaMalloc);
        assert!(costs[1..9].iter().all(|&c| c == Driver::Nothing));
        assert_eq!(costs[9], Driver::CudaMalloc);
        assert!(SubAllocator::serves(TILE));
        assert!(
            !SubAllocator::serves(2.0 * TILE),
            "double-precision tiles go direct"
        );
    }

    #[test]
    fn a_tile_freed_between_used_ones_is_not_found_until_a_neighbour_frees() {
        // Nine tiles fill chunk 0 (23 blocks left at its end). A failed search sets its hint
        // to 23; the fifth tile freed has used neighbours, so the hint stays and a new tile
        // cannot go there: out of memory without a new chunk (StarPU's available_max).
        let mut s = SubAllocator::default();
        let slots: Vec<Slot> = (0..9).map(|_| s.alloc(TILE, true).unwrap().0).collect();
        assert_eq!(s.alloc(TILE, false), None);
        assert_eq!(s.free(slots[4], TILE), Driver::Nothing);
        assert_eq!(s.alloc(TILE, false), None, "the lone hole is not seen");
        // Its neighbour freed merges with it: 450 blocks, the hint rises, first fit takes
        // the hole's start (block 4 x 225).
        s.free(slots[5], TILE);
        let (slot, cost) = s.alloc(TILE, false).unwrap();
        assert_eq!((slot.chunk, slot.block, cost), (0, 900, Driver::Nothing));
    }

    #[test]
    fn four_free_chunks_are_kept_the_fifth_is_given_back() {
        let mut s = SubAllocator::default();
        let big = MAX_SUB * 8.0 - 1.0;
        let slots: Vec<Slot> = (0..5).map(|_| s.alloc(big, true).unwrap().0).collect();
        let chunks: Vec<u32> = slots.iter().map(|s| s.chunk).collect();
        assert_eq!(chunks, [0, 1, 2, 3, 4]);
        let frees: Vec<Driver> = slots.iter().map(|&c| s.free(c, big)).collect();
        assert_eq!(frees[..4], [Driver::Nothing; 4]);
        assert_eq!(frees[4], Driver::CudaFree);
        // The kept chunks' hints were lowered to 0 when full and a free without a free
        // neighbour leaves them there: StarPU's search passes them by, a new chunk is made.
        assert_eq!(s.alloc(TILE, false), None);
        assert_eq!(s.alloc(TILE, true).unwrap().1, Driver::CudaMalloc);
    }
}
