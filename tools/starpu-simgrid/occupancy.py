#!/usr/bin/env python3
"""One GPU's buffers by kind over time, from a data-event log: StarPU-SimGrid's built with
occupancy-log.patch (STARPU_ORACLE=... STARPU_OCCUPANCY_LOG=1 build.sh, then STARPU_XLOG=file
run.sh) or hetsim's (`output.runtime_log`). Both end a GPU task's start line (S) with
`C clean all head Y` and twelve counts: the buffers by clean mark (dirty, clean) x state
(invalid, shared, owner) x pinned by a queued task's prefetch (no, yes).

    occupancy.py LOG [NODE] [SECONDS]

For memory node NODE (default 1, driven by worker NODE-1), per window of SECONDS (default 4):
the mean number of buffers, of those marked clean (tidying starts under 5 %), and of the
shared and owner buffers split into pinned and not.

Issue 21's note, 2026-11-26: attila Cholesky dmda, 3 GPUs + 8 CPUs, 512 MB, 64 tiles, GPU 0,
8-40 s: StarPU 131-134 buffers, 29-37 marked clean, 81-96 pinned owners and 25-35 pinned
shared (its prefetch for a task that writes the data makes that copy the owner). hetsim, while
such a copy stayed shared: 145 buffers, 34-111 clean, 20-82 pinned owners, 17-108 pinned shared;
since it is the owner too, 16-36 s: 144-145, 31-36 clean, 84-100 and 26-34.
"""
import collections
import sys

KINDS = ["shared", "shared pinned", "owner", "owner pinned"]


def series(path, node, width):
    worker = str(node - 1)
    win = collections.defaultdict(list)
    with open(path) as log:
        for line in log:
            f = line.split()
            if not f or f[0] != "S" or f[2] != worker or "Y" not in f:
                continue
            c, y = f.index("C"), f.index("Y")
            counts = list(map(int, f[y + 1:y + 13]))
            # Index: clean * 6 + state * 2 + pinned.
            by_kind = [counts[s * 2 + p] + counts[6 + s * 2 + p] for s in (1, 2) for p in (0, 1)]
            win[int(float(f[1]) * 1e-6 // width)].append([int(f[c + 2]), int(f[c + 1])] + by_kind)
    return win


def main(path, node=1, width=4):
    win = series(path, node, width)
    print(f"{'t (s)':>6} {'bufs':>5} {'clean':>6} " + " ".join(f"{k:>14}" for k in KINDS))
    for i in sorted(win):
        rows = win[i]
        mean = [sum(col) / len(rows) for col in zip(*rows)]
        print(f"{i * width:6.0f} " + f"{mean[0]:5.0f} {mean[1]:6.0f} "
              + " ".join(f"{m:14.0f}" for m in mean[2:]))


if __name__ == "__main__":
    if len(sys.argv) not in (2, 3, 4):
        sys.exit(__doc__)
    main(sys.argv[1], *map(int, sys.argv[2:3]), *map(float, sys.argv[3:4]))
