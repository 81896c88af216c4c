#!/usr/bin/env python3
"""What became of StarPU-SimGrid's push-time prefetches into GPUs, from an xlog (run.sh with
STARPU_XLOG=file): for each copy a task prefetch made into a GPU (X lines whose origin is
task_prefetch_data_on_node), whether the data were evicted there (E lines) before the next task
started on that GPU with the handle (S lines), by that task's access (R, or W for RW and W) and by
where the copy came from (RAM or a GPU).

Issue 21's note, 2026-11-25: on mirage Cholesky dmda, 3 GPUs + 8 CPUs, 512 MB, 64 tiles, 1,227
of 5,081 RAM copies prefetched for readers were evicted before their task, none of 32,797
prefetched for writers. StarPU updates a prefetched replica's state with the task's mode
(_starpu_update_data_state), so a writer's copy becomes the owner, which the clean-victim reuse
skips. hetsim left it shared until 2026-11-26 and does as StarPU since (memory.rs, `own`):
on attila dmda, 8 CPUs, 512 MB, 64 tiles, it evicts 15 of 28,596 writers' copies before their
task (StarPU 0 of 33,768; it evicted 8,158 while they stayed shared). To read hetsim's log,
rename its origins first: sed 's/ prefetch$/ task_prefetch_data_on_node/'.

Usage: prefetch-fate.py XLOG
"""
import sys
from collections import Counter

NCUDA_WORKERS = 3  # StarPU numbers the CUDA workers first; GPU g's memory node is g + 1


def main(path):
    pending = {}  # (handle, node) -> [evicted, source node]
    fate = Counter()
    with open(path) as log:
        for line in log:
            f = line.split()
            if not f:
                continue
            if f[0] == "X" and f[5] == "task_prefetch_data_on_node" and int(f[3]) > 0:
                pending[(f[4], int(f[3]))] = [False, int(f[2])]
            elif f[0] == "E":
                seen = pending.get((f[3], int(f[2])))
                if seen:
                    seen[0] = True
            elif f[0] == "S" and int(f[2]) < NCUDA_WORKERS:
                node = int(f[2]) + 1
                for access in f[5:]:
                    if ":" not in access:
                        continue
                    handle, mode = access.split(":")
                    seen = pending.pop((handle, node), None)
                    if seen:
                        fate[(
                            "W" if int(mode) & 2 else "R",
                            "evicted" if seen[0] else "kept",
                            "from RAM" if seen[1] == 0 else "from a GPU",
                        )] += 1
    for key, count in sorted(fate.items()):
        print(f"{key[0]} {key[1]:8} {key[2]:11} {count}")


if __name__ == "__main__":
    if len(sys.argv) != 2:
        sys.exit(__doc__)
    main(sys.argv[1])
