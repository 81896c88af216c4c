#!/usr/bin/env python3
"""Where a popped task's inputs are when a GPU pops it, from a data-event log: StarPU-SimGrid's
(STARPU_XLOG=file tools/starpu-simgrid/run.sh, xlog.patch) or hetsim's (`output.runtime_log`,
`runtime-log.txt`); both write the same lines.

    pop-states.py LOG NCUDA

For every pop by a CUDA worker (workers 0..NCUDA-1 drive memory nodes 1..NCUDA), each buffer
the task reads is classed by the last event of its handle on that node: `copied` (a copy into
the node started: there or landing), `requested` (a request made, no copy started), `gone`
(evicted, and not requested since; with the eviction's level and whether queued tasks had it
pinned) or `never` (no event on that node yet). Times are ignored: the log's order is the
order of events.
"""
import collections
import sys

from places import Places


def main(path, ncuda):
    places = Places()
    counts = collections.Counter()
    pops = 0
    with open(path) as log:
        for line in log:
            f = line.split()
            if not f:
                continue
            places.see(f)
            # P time worker task handle:mode...
            if f[0] == "P" and int(f[2]) < ncuda:
                pops += 1
                node = int(f[2]) + 1
                for handle in Places.reads(f):
                    counts[places.at(node, handle)] += 1
    total = sum(counts.values())
    print(f"{pops} GPU pops, {total} buffers read")
    for name, n in counts.most_common():
        print(f"  {name:<36} {n:>7} {100.0 * n / total:5.1f} %")


if __name__ == "__main__":
    if len(sys.argv) != 3:
        sys.exit(__doc__)
    main(sys.argv[1], int(sys.argv[2]))
