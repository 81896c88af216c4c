#!/usr/bin/env python3
"""How long each GPU node spends writing eviction victims back, from the b lines of a data-event
log: StarPU-SimGrid's (reclaim-log.patch) or hetsim's (`output.runtime_log`). While a node
writes a victim back, StarPU refuses every other allocation there (`_starpu_is_reclaiming`)
and its driver waits.

    reclaim-time.py LOG [WINDOW_S]

Prints, per node, the write-backs, their mean length and the share of the run they cover,
then per WINDOW_S seconds (default 10) the write-backs begun and that share.
"""
import collections
import sys


def main():
    path = sys.argv[1]
    window = float(sys.argv[2]) if len(sys.argv) > 2 else 10.0
    began = {}
    count = collections.Counter()
    busy = collections.Counter()
    per_window = collections.defaultdict(lambda: [0, 0.0])
    end = 0.0
    with open(path) as log:
        for line in log:
            f = line.split()
            if len(f) < 5:
                continue
            try:
                t = float(f[1]) / 1e6
            except ValueError:
                continue
            end = max(end, t)
            if f[0] != "b":
                continue
            node, starts = f[2], f[4] == "1"
            if starts:
                began[node] = t
                count[node] += 1
                per_window[(node, int(t // window))][0] += 1
            elif node in began:
                t0 = began.pop(node)
                busy[node] += t - t0
                per_window[(node, int(t0 // window))][1] += t - t0
    for node in sorted(count):
        print(f"node {node}: {count[node]} write-backs, mean {1e3 * busy[node] / count[node]:.2f} ms, "
              f"{100 * busy[node] / end:.0f} % of {end:.1f} s")
        cells = [f"{k * window:g}s:{n}/{100 * b / window:.0f}%"
                 for (nd, k), (n, b) in sorted(per_window.items()) if nd == node]
        print("  " + " ".join(cells))


if __name__ == "__main__":
    main()
