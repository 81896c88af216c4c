#!/usr/bin/env python3
"""One GPU's memory over time, from a data-event log: StarPU-SimGrid's (STARPU_XLOG=file
tools/starpu-simgrid/run.sh; B lines need occupancy-log.patch) or hetsim's
(`output.runtime_log`); both write the same lines.

    log-series.py LOG [NODE] [SECONDS]

For memory node NODE (default 1, the first GPU, driven by worker NODE-1) and windows of
SECONDS (default 4), prints: the mean queue length of its worker at a push (B), its buffers at
a task start (M: all, pinned by queued tasks' prefetches, idle), the prefetches into it short
of memory (N), raised to fetch by a pop (U), copies into it started (X), evictions there by a
prefetch and by a fetch (E), and at its pops the share of the inputs read that were gone
through a fetch's eviction or only requested (as pop-states.py classes them).
"""
import collections
import sys

from places import Places


def series(path, node, width):
    win = collections.defaultdict(collections.Counter)
    places = Places()
    worker = str(node - 1)
    with open(path) as log:
        for line in log:
            f = line.split()
            if len(f) < 2:
                continue
            kind, w = f[0], win[int(float(f[1]) * 1e-6 // width)]
            places.see(f)
            if kind == "X":
                w["X"] += int(f[3]) == node
            elif kind == "E":
                if int(f[2]) == node:
                    w["E fetch" if f[5] == "0" else "E prefetch"] += 1
            elif kind in ("N", "U"):
                w[kind] += int(f[3]) == node
            elif kind == "B" and f[2] == worker:
                w["pushes"] += 1
                w["queued"] += int(f[4][2:])
            elif kind == "S" and f[2] == worker and "M" in f:
                m = f.index("M")
                w["starts"] += 1
                w["buffers"] += int(f[m + 1])
                w["pinned"] += int(f[m + 2])
                w["idle"] += int(f[m + 4])
            elif kind == "P" and f[2] == worker:
                for handle in Places.reads(f):
                    w["read"] += 1
                    place = places.at(node, handle)
                    w["gone" if place.startswith("gone (fetch") else place] += 1
    return win


def main(path, node=1, width=4.0):
    win = series(path, node, width)
    print(f"{'t (s)':>6} {'queue':>6} {'bufs':>5} {'pinned':>6} {'idle':>5} {'N':>6} {'U':>6} "
          f"{'X':>6} {'E pf':>6} {'E f':>6} {'gone %':>7} {'req %':>6}")
    for i in sorted(win):
        w = win[i]
        mean = lambda k, n: w[k] / w[n] if w[n] else float("nan")
        share = lambda k: 100.0 * w[k] / w["read"] if w["read"] else float("nan")
        print(f"{i * width:6.0f} {mean('queued', 'pushes'):6.0f} {mean('buffers', 'starts'):5.0f} "
              f"{mean('pinned', 'starts'):6.0f} {mean('idle', 'starts'):5.0f} {w['N']:6d} "
              f"{w['U']:6d} {w['X']:6d} {w['E prefetch']:6d} {w['E fetch']:6d} "
              f"{share('gone'):7.1f} {share('requested'):6.1f}")


if __name__ == "__main__":
    if not 2 <= len(sys.argv) <= 4:
        sys.exit(__doc__)
    main(sys.argv[1], *(int(a) if i == 0 else float(a) for i, a in enumerate(sys.argv[2:])))
