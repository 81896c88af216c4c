#!/usr/bin/env python3
"""How far ahead of one GPU's pops its prefetches run, from a data-event log: StarPU-SimGrid's
(STARPU_XLOG=file tools/starpu-simgrid/run.sh; the dmda pushes need occupancy-log.patch) or
hetsim's (`output.runtime_log`).

    prefetch-rank.py LOG [WORKER] [FROM_S] [TO_S]

For the CUDA worker WORKER (default 0, driving memory node WORKER+1) between FROM_S and TO_S
seconds (default 8 and 32):
- each prefetch copy into the node (one in four, to keep it quick) is matched to the queued
  task of that worker that reads the handle and pops first, and counted by that task's rank
  in the worker's queue when the copy starts (priority, then push order; 0 is the head);
- each task popped by the worker gives its wait in the queue (push to pop), as deciles.
StarPU's own tasks are named by their handles (its log names codelets); hetsim's by name.
"""
import collections
import statistics
import sys


def handles(fields):
    """The task's handles, sorted: what names a task in StarPU's log."""
    return tuple(sorted(x.split(":")[0] for x in fields if ":" in x and not x.startswith("p=")))


def prio(fields):
    return int(next(x for x in fields if x.startswith("p="))[2:])


def read(path, worker, node):
    tasks = collections.defaultdict(dict)
    copies = []
    with open(path) as log:
        for line in log:
            f = line.split()
            if len(f) < 4:
                continue
            hetsim = "(" in f[3]
            if f[0] == "B" and f[2] == worker:
                task = tasks[f[3] if hetsim else handles(f[5:])]
                task["push"] = float(f[1])
                if not hetsim:
                    task["prio"] = prio(f)
            elif f[0] == "P" and f[2] == worker:
                task = tasks[f[3] if hetsim else handles(f[4:])]
                task["pop"] = float(f[1])
                task["reads"] = [x.split(":")[0] for x in f[4:]
                                 if ":" in x and x.split(":")[1] in ("1", "3")]
            elif f[0] == "S" and f[2] == worker and hetsim:
                tasks[f[3]]["prio"] = prio(f)
            elif f[0] == "X" and f[3] == node and f[5] in ("prefetch", "task_prefetch_data_on_node"):
                copies.append((float(f[1]), f[4]))
    done = [t for t in tasks.values() if {"push", "pop", "prio"} <= t.keys()]
    return done, copies


def main():
    path = sys.argv[1]
    worker = sys.argv[2] if len(sys.argv) > 2 else "0"
    start = float(sys.argv[3]) * 1e6 if len(sys.argv) > 3 else 8e6
    end = float(sys.argv[4]) * 1e6 if len(sys.argv) > 4 else 32e6
    tasks, copies = read(path, worker, str(int(worker) + 1))
    readers = collections.defaultdict(list)
    for t in tasks:
        for h in t.get("reads", []):
            readers[h].append(t)
    bins = ["0", "1", "2-3", "4-15", "16-63", "64+", "none queued"]
    ranks = collections.Counter()
    window = [c for c in copies if start <= c[0] < end][::4]
    for at, h in window:
        queued = [t for t in readers[h] if t["push"] <= at < t["pop"]]
        if not queued:
            ranks["none queued"] += 1
            continue
        mine = min(queued, key=lambda t: t["pop"])
        me = (-mine["prio"], mine["push"])
        rank = sum(1 for t in tasks if t["push"] <= at < t["pop"] and (-t["prio"], t["push"]) < me)
        ranks[next(b for b, top in zip(bins, [1, 2, 4, 16, 64, float("inf")]) if rank < top)] += 1
    n = max(1, len(window))
    print(f"{len(window)} prefetch copies into node {int(worker) + 1}, by the rank of their task:")
    print("  " + "  ".join(f"{b} {100 * ranks[b] / n:.0f} %" for b in bins))
    waits = [(t["pop"] - t["push"]) / 1e3 for t in tasks if start <= t["pop"] < end]
    if len(waits) > 1:
        deciles = statistics.quantiles(waits, n=10)
        print(f"{len(waits)} pops, queue wait deciles (ms): " + " ".join(f"{d:.0f}" for d in deciles))


if __name__ == "__main__":
    main()
