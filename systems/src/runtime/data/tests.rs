//! The datawizard's rules through a small runtime (`setup.rs`'s fixtures): allocation,
//! eviction and prefetch pins (`memory`), request lists, joins and copies (`requests`).

/// Allocation, eviction, write-back and prefetch pins.
mod memory {
    use crate::runtime::core::Runtime;
    use crate::runtime::data::coherency::{Idle, Msi, Replica};
    use crate::runtime::data::kinds::{Evict, Level};
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
        assert!(rt.with_data(|d, cx| d.allocate(cx, 0, 1, Evict::ForFetch)));
        rt.data.tick += 1;
        assert!(rt.with_data(|d, cx| d.allocate(cx, 1, 1, Evict::ForFetch)));
        // a was used after b: b is now the least recently used.
        rt.data.tick += 1;
        rt.data.touch(0, 1);
        // No room for c without eviction, and none allowed.
        assert!(!rt.with_data(|d, cx| d.allocate(cx, 2, 1, Evict::No)));
        assert!(rt.with_data(|d, cx| d.allocate(cx, 2, 1, Evict::ForFetch)));
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
        assert!(rt.with_data(|d, cx| d.allocate(cx, 0, 1, Evict::ForFetch)));
        assert!(rt.with_data(|d, cx| d.allocate(cx, 1, 1, Evict::ForFetch)));
        assert!(rt.data.replicas.get(0, 1).marked_clean && rt.data.replicas.get(1, 1).marked_clean);
        assert_eq!(rt.data.replicas.marked_clean(1), 2);
        // No dirty buffer on the node: tidying has nowhere to start.
        assert_eq!(rt.data.mem.dirty_head[1], None);
    }

    #[test]
    fn a_replica_in_use_is_never_evicted_and_a_dirty_one_is_written_back() {
        let mut rt = four_handles();
        assert!(rt.with_data(|d, cx| d.allocate(cx, 0, 1, Evict::ForFetch)));
        rt.data.tick += 1;
        assert!(rt.with_data(|d, cx| d.allocate(cx, 1, 1, Evict::ForFetch)));
        // a is in use by a task; b was written on the GPU (the only valid copy).
        rt.data.replicas.get_mut(0, 1).refcnt = 1;
        *rt.data.replicas.get_mut(1, 1) = Replica {
            state: Msi::Owner,
            ..*rt.data.replicas.get(1, 1)
        };
        rt.data.replicas.get_mut(1, 0).state = Msi::Invalid;
        // c needs room: b is the only idle replica; it is written back to RAM first (a copy
        // GPU -> RAM starts) and freed when it lands, so c waits.
        assert!(!rt.with_data(|d, cx| d.allocate(cx, 2, 1, Evict::ForFetch)));
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
        assert!(rt.with_data(|d, cx| d.allocate(cx, 2, 1, Evict::ForFetch)));
    }

    #[test]
    fn victims_are_written_back_one_at_a_time_and_nothing_is_allocated_meanwhile() {
        // a and b were written on the GPU (RAM's copies are stale). c needs room: StarPU
        // reclaims twice the size asked, writing each victim back in turn and waiting for it
        // (transfer_subtree_to_node): a first, b once a's is done. Meanwhile its driver,
        // reclaiming, allocates nothing on the node (copy_driver.c, `_starpu_is_reclaiming`):
        // d waits too, even once a's buffer is free.
        let mut rt = a_and_b_written_on_the_gpu();
        assert!(!rt.with_data(|d, cx| d.allocate(cx, 2, 1, Evict::ForFetch)));
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
            !rt.with_data(|d, cx| d.allocate(cx, 3, 1, Evict::ForFetch)),
            "b is being written back"
        );
        let xb = write_back_of(&rt, 1);
        rt.xfer_done(xb);
        assert!(
            rt.with_data(|d, cx| d.allocate(cx, 3, 1, Evict::ForFetch))
                && rt.with_data(|d, cx| d.allocate(cx, 2, 1, Evict::ForFetch))
        );
        assert_eq!((rt.out.report.evictions, rt.data.mem.used[1]), (2, 2e9));
    }

    #[test]
    fn requests_held_back_while_a_node_reclaimed_start_when_it_is_done() {
        // c's prefetch evicts a (written on the GPU) and waits for its write-back. A task
        // takes a meanwhile, so the write-back frees nothing when it lands: the eviction goes
        // on to b, and c starts in b's buffer once b is written back.
        let mut rt = a_and_b_written_on_the_gpu();
        rt.with_data(|d, cx| d.request(cx, 2, 1, Level::Prefetch, 0, None));
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
        assert!(rt.with_data(|d, cx| d.allocate(cx, 0, 1, Evict::ForFetch)));
        rt.data.tick += 1;
        assert!(rt.with_data(|d, cx| d.allocate(cx, 1, 1, Evict::ForFetch)));
        rt.data.replicas.get_mut(0, 1).state = Msi::Owner;
        rt.data.replicas.get_mut(0, 0).state = Msi::Invalid;
        rt.data.replicas.get_mut(1, 1).state = Msi::Shared;
        assert!(rt.with_data(|d, cx| d.allocate(cx, 2, 1, Evict::ForFetch)));
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
        assert!(rt.with_data(|d, cx| d.allocate(cx, 0, 1, Evict::ForFetch)));
        assert!(rt.with_data(|d, cx| d.allocate(cx, 1, 1, Evict::ForFetch)));
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
        assert_eq!(rt.with_data(|d, cx| d.clean_victim(cx, 1, 1e9, true)), None);
        // a freed: gone from every class.
        rt.with_data(|d, cx| d.free(cx, 0, 1));
        assert_eq!(all(&rt), [0; 4]);
        for (clean, for_prefetch) in [(false, false), (false, true), (true, false), (true, true)] {
            let class = Idle {
                clean,
                for_prefetch,
            };
            assert_eq!(
                count(&rt, clean, for_prefetch),
                rt.data.idle_recount(1, class)
            );
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
            rt.with_data(|d, cx| d.request(cx, h, 1, Level::Prefetch, 0, None));
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
        rt.with_data(|d, cx| d.request(cx, 3, 1, Level::Fetch, 0, None));
        assert!(alloc(&rt, 3) && !alloc(&rt, 0) && !alloc(&rt, 2));
        // b's task is popped: its pin goes, and c's prefetch now evicts it.
        rt.data.replicas.get_mut(1, 1).prefetch_pins = 0;
        rt.with_data(|d, cx| d.pump_into(cx, 1));
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
        rt.with_data(|d, cx| d.prefetch(cx, 0, 0));
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
        assert_eq!(
            rt.with_data(|d, cx| d.clean_victim(cx, 1, 1e9, false)),
            Some(0)
        );
        // The log's V line: a then b in eviction order, a pinned, b the owner.
        assert_eq!(rt.data.eviction_order(1), "PO");
        // Data already there: the prefetch finding them makes that copy the owner at once.
        let mut rt = test_runtime(dag, "{}", 2.5e9, TEST_FLAGS);
        assert!(rt.with_data(|d, cx| d.allocate(cx, 1, 1, Evict::ForFetch)));
        rt.data.replicas.get_mut(1, 1).state = Msi::Shared;
        rt.with_data(|d, cx| d.prefetch(cx, 0, 0));
        assert_eq!(rt.data.replicas.get(1, 1).state, Msi::Owner);
        assert_eq!(rt.data.replicas.get(1, 0).state, Msi::Invalid);
    }

    #[test]
    fn a_prefetch_joining_a_request_in_flight_loses_its_pin() {
        // StarPU does not merge the requests of two tasks: the second one's request, handled
        // while the first one's copy is in flight, only waits for it and its pin is lost;
        // handled once the data are there, it pins them.
        let mut rt = four_handles();
        rt.with_data(|d, cx| d.request(cx, 0, 1, Level::Prefetch, 0, None));
        rt.data.carry_pins(0, 1, 1);
        let x = rt.data.replicas.get(0, 1).incoming.expect("in flight");
        assert!(rt.data.copies.xfers[x as usize].launched);
        rt.with_data(|d, cx| d.join(cx, 0, 0, 1, 0, 0));
        assert_eq!(
            rt.data.replicas.get(0, 1).prefetch_pins,
            0,
            "pins come with the data"
        );
        rt.xfer_done(x);
        assert_eq!(rt.data.replicas.get(0, 1).prefetch_pins, 1, "one of two");
        rt.with_data(|d, cx| d.join(cx, 0, 0, 1, 0, 0));
        assert_eq!(rt.data.replicas.get(0, 1).prefetch_pins, 2);
    }
}

/// Request lists, their caps and joins, and the serialisation of copies.
mod requests {
    use hetsim_schema::SimTime;

    use crate::runtime::core::Runtime;
    use crate::runtime::data::coherency::Msi;
    use crate::runtime::data::copies::Xfer;
    use crate::runtime::data::kinds::{Evict, Level};
    use crate::runtime::model::Flags;
    use crate::runtime::out::Due;
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
            assert!(rt.with_data(|d, cx| d.allocate(cx, h, 1, Evict::ForFetch)));
            rt.with_data(|d, cx| d.request(cx, h, 1, Level::Fetch, 0, None));
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
        rt.with_data(|d, cx| d.submit(cx, 0));
        rt.out.now = SimTime::from_secs_saturating(195e-6);
        rt.with_data(|d, cx| d.submit(cx, 1));
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
        let pair = rt.data.pair(0, 1);
        for h in 0..4 {
            assert!(rt.with_data(|d, cx| d.allocate(cx, h, 1, Evict::ForPrefetch)));
            rt.with_data(|d, cx| d.request(cx, h, 1, Level::Prefetch, 0, None));
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
            assert!(rt.with_data(|d, cx| d.allocate(cx, h, 1, Evict::ForFetch)));
            rt.with_data(|d, cx| d.request(cx, h, 1, Level::Fetch, 0, None));
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
        rt.with_data(|d, cx| d.request(cx, 2, 1, Level::Fetch, 0, None));
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
        rt.with_data(|d, cx| d.request(cx, 0, 1, Level::Prefetch, 0, None));
        assert!(
            rt.data.replicas.get(0, 1).loading,
            "a CPU's pushes hold no GPU request"
        );
        rt.pacing.deferred[gpu] = true;
        rt.with_data(|d, cx| d.request(cx, 1, 1, Level::Prefetch, 0, None));
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
        assert!(rt.with_data(|d, cx| d.allocate(cx, 0, 0, Evict::No)));
        rt.with_data(|d, cx| d.request(cx, 0, 0, Level::Fetch, 0, None));
        let up = rt
            .data
            .replicas
            .get(0, 0)
            .incoming
            .expect("a's copy to RAM");
        rt.with_data(|d, cx| d.request(cx, 2, 1, Level::Prefetch, 0, None));
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
            rt.with_data(|d, cx| d.request(cx, h, 1, Level::Prefetch, 0, None));
        }
        rt
    }

    /// [`prefetch_slots_taken`] with a task's prefetch of a queued, pinning a when it lands:
    /// that request's index.
    fn a_prefetch_queued(rt: &mut Runtime) -> u32 {
        rt.with_data(|d, cx| d.request(cx, 0, 1, Level::Prefetch, 0, None));
        rt.data.carry_pins(0, 1, 1);
        rt.data.replicas.get(0, 1).incoming.unwrap()
    }

    #[test]
    fn a_joining_request_whose_data_went_copies_them_in_its_turn() {
        // StarPU's request stacked for another task, handled when the replica is invalid and
        // nothing loads it, copies it itself: in its place in the list, before the requests
        // made after it.
        let mut rt = prefetch_slots_taken();
        // a is on the GPU (landed for a first task): another task's request waits its turn.
        assert!(rt.with_data(|d, cx| d.allocate(cx, 0, 1, Evict::ForPrefetch)));
        rt.data.replicas.get_mut(0, 1).state = Msi::Shared;
        rt.with_data(|d, cx| d.join(cx, 0, 0, 1, 0, 0));
        let j = rt.data.copies.requests[rt.data.pair(0, 1)]
            .first()
            .unwrap()
            .2;
        rt.with_data(|d, cx| d.request(cx, 2, 1, Level::Prefetch, 0, None));
        let c = rt.data.replicas.get(2, 1).incoming.unwrap();
        // a goes before that turn; then b lands and frees a slot.
        rt.with_data(|d, cx| d.free(cx, 0, 1));
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
        let pair = rt.data.pair(0, 1);
        let l = a_prefetch_queued(&mut rt);
        rt.with_data(|d, cx| d.join(cx, 0, 0, 1, 5, 7));
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
        let pair = rt.data.pair(0, 1);
        let l = a_prefetch_queued(&mut rt);
        rt.data.copies.xfers[l as usize].task = Some(0);
        rt.with_data(|d, cx| d.request(cx, 2, 1, Level::Prefetch, 0, None));
        let c = rt.data.replicas.get(2, 1).incoming.unwrap();
        rt.with_data(|d, cx| d.request(cx, 0, 1, Level::Fetch, 0, Some(1)));
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
            rt.with_data(|d, cx| d.request(cx, h, 1, Level::Prefetch, 0, None));
        }
        // Two prefetches in flight (the pair's cap): another task's request for a waits.
        rt.with_data(|d, cx| d.join(cx, 0, 0, 1, 0, 0));
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
