#!/usr/bin/env python3
"""Which prefetch regime one GPU is in, window by window, from a data-event log:
StarPU-SimGrid's (STARPU_XLOG=file tools/starpu-simgrid/run.sh; the dmda pushes need
occupancy-log.patch, the V lines reuse-log.patch) or hetsim's (`output.runtime_log`).

    regime.py LOG [WORKER] [SECONDS]

For the CUDA worker WORKER (default 0, driving memory node WORKER+1), per window of SECONDS
(default 2), prints:
- pop rank: where the popped task stood in its queue (priority, then push order; 0 is the
  head), as the share popped at ranks 0-3 and at 16 or deeper. dmdas pops, among the tasks
  of the head's priority, the one lacking the fewest bytes: a deep pop means the head's data
  were not there;
- raises: fetches that raised the popped task's own request, split by whether its copy had
  started (in flight) or not (still queued in its list);
- V first: at each fetch that reuses a buffer directly (the V line), whether the first
  buffer it may take in eviction order is idle (I) or pinned for a queued task (P).

Two regimes show. Just in time: pops at the head, raises of copies in flight, idle buffers
first in eviction order (StarPU-SimGrid from about 8 s on attila dmdas, 1024 MB, 8 CPUs,
64 tiles). Memory-bound: pops deep in the queue, raises of queued requests, pinned buffers
first, so each fetch evicts data prefetched for another queued task, which will fetch it
again (StarPU before 8 s; hetsim throughout). Issue 21's note of 2026-11-27.
"""
import collections
import importlib.util
import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
spec = importlib.util.spec_from_file_location("rank", os.path.join(HERE, "prefetch-rank.py"))
rank_tool = importlib.util.module_from_spec(spec)
spec.loader.exec_module(rank_tool)


def raises_and_victims(path, node, width):
    """Per window: raises of a started copy, of a queued request, and V lines by first kind."""
    out = collections.defaultdict(collections.Counter)
    started = {}
    with open(path) as log:
        for line in log:
            f = line.split()
            if len(f) < 3:
                continue
            w = out[int(float(f[1]) * 1e-6 // width)]
            if f[0] == "Q" and f[4] == node:
                started[f[2]] = False
            elif f[0] == "X" and f[3] == node:
                started[f[4]] = True
            elif f[0] == "U" and f[3] == node:
                w["in flight" if started.get(f[2]) else "queued"] += 1
            elif f[0] == "V" and f[2] == node and len(f) > 3:
                first = next((c for c in f[3] if c in "PI"), None)
                if first:
                    w["V " + first] += 1
    return out


def main():
    path = sys.argv[1]
    worker = sys.argv[2] if len(sys.argv) > 2 else "0"
    width = float(sys.argv[3]) if len(sys.argv) > 3 else 2.0
    node = str(int(worker) + 1)
    tasks, _ = rank_tool.read(path, worker, node)
    events = raises_and_victims(path, node, width)
    pops = collections.defaultdict(list)
    for t in tasks:
        pops[int(t["pop"] * 1e-6 // width)].append(t)
    print("window   pops  rank 0-3  rank 16+   raises: in flight  queued   V first: I    P")
    for win in sorted(set(pops) | set(events)):
        ranks = []
        for t in pops[win][::3]:
            me = (-t["prio"], t["push"])
            at = t["pop"]
            ranks.append(sum(1 for u in tasks
                             if u["push"] <= at < u["pop"] and (-u["prio"], u["push"]) < me))
        n = max(1, len(ranks))
        e = events[win]
        print(f"{win * width:5.0f} s {len(pops[win]):6d} {100 * sum(r < 4 for r in ranks) / n:8.0f} %"
              f" {100 * sum(r >= 16 for r in ranks) / n:8.0f} %"
              f" {e['in flight']:18d} {e['queued']:7d} {e['V I']:12d} {e['V P']:4d}")


if __name__ == "__main__":
    if len(sys.argv) < 2:
        sys.exit(__doc__)
    main()
