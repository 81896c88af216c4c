#!/usr/bin/env python3
"""What a fetch short of memory finds in one GPU's eviction order, from a data-event log with
V lines: StarPU-SimGrid's (built with STARPU_REUSE_LOG=1, reuse-log.patch) or hetsim's
(`output.runtime_log`).

    reuse-scan.py LOG [NODE] [FROM_S] [TO_S]

Each V line is the node's buffers in eviction order (first 400), one letter each: R in use or
moving, O the only valid copy (dirty), P pinned by a queued task's prefetch, I neither. A
fetch's direct reuse takes the first clean buffer of its size (P or I; all tiles have one
size in the Cholesky rows). Prints, over the V lines of NODE (default 1) between FROM_S and
TO_S seconds (default 8 and 32, the middle of the attila dmdas 1024 MB 64-tile row), which
class that first clean buffer is in (a P taken leaves a queued task to fetch its data again
at its pop), the mean count of each class, and the median position of the first P and I.
"""
import collections
import statistics
import sys


def scan(path, node="1", start=8.0, end=32.0):
    first = collections.Counter()
    counts = collections.Counter()
    first_at = {"P": [], "I": []}
    n = 0
    with open(path) as log:
        for line in log:
            f = line.split()
            if len(f) < 4 or f[0] != "V" or f[2] != node:
                continue
            if not start * 1e6 <= float(f[1]) < end * 1e6:
                continue
            order = f[3]
            n += 1
            first[next((c for c in order if c in "PI"), "none")] += 1
            counts.update(order)
            for c in "PI":
                if c in order:
                    first_at[c].append(order.index(c))
    return n, first, counts, first_at


def main():
    path = sys.argv[1]
    node = sys.argv[2] if len(sys.argv) > 2 else "1"
    start = float(sys.argv[3]) if len(sys.argv) > 3 else 8.0
    end = float(sys.argv[4]) if len(sys.argv) > 4 else 32.0
    n, first, counts, first_at = scan(path, node, start, end)
    if not n:
        print(f"no V line on node {node} between {start} and {end} s")
        return
    print(f"{n} fetches short of memory on node {node}, {start:g}-{end:g} s")
    print("  first clean buffer: " + ", ".join(f"{c} {100 * first[c] / n:.1f} %" for c in "PI")
          + (f", none {100 * first['none'] / n:.1f} %" if first["none"] else ""))
    print("  mean buffers: " + ", ".join(f"{c} {counts[c] / n:.1f}" for c in "ROPI"))
    for c in "PI":
        if first_at[c]:
            print(f"  first {c} at position {statistics.median(first_at[c]):g} (median),"
                  f" present in {100 * len(first_at[c]) / n:.0f} %")


if __name__ == "__main__":
    main()
