#!/usr/bin/env python3
"""What became of the buffers evicted from one GPU, from a data-event log: StarPU-SimGrid's
(STARPU_XLOG=file tools/starpu-simgrid/run.sh) or hetsim's (`output.runtime_log`).

    victim-fates.py LOG [NODE]

Each eviction from memory node NODE (default 1, driven by worker NODE-1) is classed by who
evicted it (a fetch or a prefetch, and whether queued tasks had it pinned) and by what came
next for its handle there: a copy into the node started again before any pop read it
(`reloaded before its pop`), a pop on that GPU read it first (`popped missing`), it was
evicted again, or nothing happened (`never again`).
"""
import collections
import sys


def fates(path, node=1):
    worker = str(node - 1)
    pending = {}
    counts = collections.Counter()
    with open(path) as log:
        for line in log:
            f = line.split()
            if not f:
                continue
            if f[0] == "E" and int(f[2]) == node:
                kind = ("fetch" if f[5] == "0" else "prefetch") + (" pinned" if int(f[6]) else "")
                if f[3] in pending:
                    counts[(pending[f[3]], "evicted again")] += 1
                pending[f[3]] = kind
            elif f[0] == "X" and int(f[3]) == node and f[4] in pending:
                counts[(pending.pop(f[4]), "reloaded before its pop")] += 1
            elif f[0] == "P" and f[2] == worker:
                for access in f[4:]:
                    handle = access.rsplit(":", 1)[0]
                    if handle in pending:
                        counts[(pending.pop(handle), "popped missing")] += 1
    for kind in pending.values():
        counts[(kind, "never again")] += 1
    return counts


def main(path, node=1):
    counts = fates(path, node)
    by_kind = collections.Counter()
    for (kind, _), n in counts.items():
        by_kind[kind] += n
    for (kind, fate), n in sorted(counts.items()):
        print(f"{kind:<16} {fate:<24} {n:7d} {100.0 * n / by_kind[kind]:5.1f} %")


if __name__ == "__main__":
    if len(sys.argv) not in (2, 3):
        sys.exit(__doc__)
    main(sys.argv[1], *map(int, sys.argv[2:]))
