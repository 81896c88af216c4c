#!/usr/bin/env python3
"""Checks SimGrid's wake-up order in a StarPU-SimGrid log made with threads-log.patch
(build.sh, STARPU_THREADS_LOG=1; run.sh, STARPU_XLOG=file): for every instant at which two or
more worker threads wake from sleeps, does the order match "by the instant the sleep began,
and among sleeps begun at one instant, the last begun first" (runtime/threads.rs)?

    tools/starpu-simgrid/sleep-order.py LOG...
"""
import collections
import sys


def check(path):
    pending = {}  # worker -> (sequence, instant begun)
    wakes = collections.defaultdict(list)
    seq = 0
    for line in open(path):
        f = line.split()
        if len(f) < 3 or f[0] not in ("s", "a") or f[2] == "-1":
            continue
        if f[0] == "s":
            seq += 1
            pending[f[2]] = (seq, float(f[1]))
        else:
            s = pending.pop(f[2])
            wakes[round(float(f[1]), 3)].append((f[2],) + s)
    ok = bad = 0
    for ws in wakes.values():
        if len(ws) < 2:
            continue
        expect = [w[0] for w in sorted(ws, key=lambda w: (w[2], -w[1]))]
        if expect == [w[0] for w in ws]:
            ok += 1
        else:
            bad += 1
    print(f"{path}: {ok} instants in the expected order, {bad} not")


for p in sys.argv[1:]:
    check(p)
