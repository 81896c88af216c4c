#!/usr/bin/env python3
"""Where each simulator pushed each task, task by task, from two data-event logs of the same
Cholesky row: StarPU-SimGrid's (xlog.patch with occupancy-log.patch, for its B lines) and
hetsim's (`output.runtime_log`).

    match-tasks.py STARPU_LOG HETSIM_LOG [FIRST]

StarPU's log names a task by kind only (GEMM) and its tiles by handle address. The tiles of
cholesky_implicit are registered row by row of the lower triangle, so the addresses fall in
64 (nblocks) groups of 1, 2, ... handles, a constant stride apart within a group: that gives
each address its tile (m, n), and each task its key (kind, tile written, k). hetsim's labels
give the same key (potrf(k), trsm(k,m), syrk(k,n), gemm(k,m,n)).

Prints, by second of StarPU's push time, how many pushes went to the same worker and how many
went to a GPU in one and a CPU in the other (workers 0-2 are the GPUs in both), then the
first FIRST (default 30) pushes, in StarPU's order, whose worker differs.
"""
import collections
import re
import sys

HANDLE = re.compile(r"(0x[0-9a-f]+):(\d)")
NGPUS = 3


def tiles_of(path):
    """StarPU handle address -> (m, n), from every address a task line names."""
    addresses = set()
    with open(path) as log:
        for line in log:
            if line[:2] in ("B ", "P ", "S "):
                addresses.update(int(a, 16) for a, _ in HANDLE.findall(line))
    ordered = sorted(addresses, reverse=True)
    strides = collections.Counter(a - b for a, b in zip(ordered, ordered[1:]))
    stride = strides.most_common(1)[0][0]
    groups, current = [], [ordered[0]]
    for prev, a in zip(ordered, ordered[1:]):
        if prev - a == stride:
            current.append(a)
        else:
            groups.append(current)
            current = [a]
    groups.append(current)
    tiles = {}
    for m, group in enumerate(groups):
        # Within a row the addresses grow with the column.
        for n, a in enumerate(sorted(group)):
            tiles[a] = (m, n)
    return tiles


def starpu_key(kind, handles, tiles):
    kind = kind.lower()
    written = [tiles[int(a, 16)] for a, mode in handles if mode in ("2", "3")][0]
    read = [tiles[int(a, 16)] for a, mode in handles if mode == "1"]
    if kind == "potrf":
        k = written[0]
    elif kind == "trsm":
        k = read[0][0]
    else:
        k = read[0][1]
    return (kind, written, k)


def hetsim_key(label):
    kind, args = re.match(r"(\w+)\(([\d,]+)\)", label).groups()
    a = [int(x) for x in args.split(",")]
    if kind == "potrf":
        return (kind, (a[0], a[0]), a[0])
    if kind == "trsm":
        return (kind, (a[1], a[0]), a[0])
    if kind == "syrk":
        return (kind, (a[1], a[1]), a[0])
    return (kind, (a[1], a[2]), a[0])


def pushes(path, key_of):
    out = {}
    with open(path) as log:
        for line in log:
            if line.startswith("B "):
                f = line.split()
                out[key_of(f, line)] = (float(f[1]) / 1e6, int(f[2]))
    return out


def main():
    starpu_path, hetsim_path = sys.argv[1], sys.argv[2]
    first = int(sys.argv[3]) if len(sys.argv) > 3 else 30
    tiles = tiles_of(starpu_path)
    a = pushes(starpu_path, lambda f, line: starpu_key(f[3], HANDLE.findall(line), tiles))
    b = pushes(hetsim_path, lambda f, line: hetsim_key(f[3]))
    common = [k for k in a if k in b]
    print(f"{len(a)} StarPU pushes, {len(b)} hetsim pushes, {len(common)} matched")
    by_second = collections.defaultdict(lambda: [0, 0, 0])
    for k in common:
        (t, w), (_, wb) = a[k], b[k]
        s = by_second[int(t)]
        s[0] += 1
        s[1] += w == wb
        s[2] += (w < NGPUS) != (wb < NGPUS)
    print("second  pushes  same worker  GPU in one, CPU in the other")
    for t in sorted(by_second):
        n, same, cross = by_second[t]
        print(f"{t:6d}  {n:6d}  {100 * same / n:10.0f} %  {cross:6d}")
    shown = 0
    for k in sorted(common, key=lambda k: a[k][0]):
        (t, w), (tb, wb) = a[k], b[k]
        if w != wb and shown < first:
            shown += 1
            kind, (m, n), kk = k
            print(f"{kind:5} ({m},{n}) k={kk:<3} StarPU {1e3 * t:10.3f} ms worker {w:2d}"
                  f"   hetsim {1e3 * tb:10.3f} ms worker {wb:2d}")


if __name__ == "__main__":
    main()
