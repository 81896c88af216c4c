#!/usr/bin/env python3
"""What became of the copies into one GPU, from a data-event log: StarPU-SimGrid's
(STARPU_XLOG=file tools/starpu-simgrid/run.sh) or hetsim's (`output.runtime_log`).

    load-fates.py LOG [NODE]

For memory node NODE (default 1, driven by worker NODE-1), each copy started into it (X line)
is followed until a task started on that GPU reads the handle (S line: `used`) or the buffer is
evicted first (E line: `evicted unused`, by a fetch or a prefetch). A used copy's lead is the
time from the copy's start to that task start; the leads are printed as quantiles, and the used
copies counted by lead (under or over 50 ms) and by source (RAM or another GPU).

The origins differ between the logs: StarPU names the function that made the request
(task_prefetch_data_on_node, even when a pop raised it to a fetch), hetsim the request's level
when it started (a raised prefetch shows as a fetch); compare the totals, not the origins.

Issue 21's note, 2026-11-26: attila Cholesky dmdas, 3 GPUs + 8 CPUs, 1024 MB, 64 tiles, GPU 0:
StarPU 22,766 copies, 522 evicted unused; hetsim 25,207 and 6,415, all by fetches. Lead
quartiles: StarPU 4.8 / 6.5 / 23.5 ms, hetsim 5.1 / 7.4 / 187 ms; long leads from RAM 3,737
against 5,674.
"""
import collections
import sys

LONG_MS = 50.0


def follow(path, node):
    worker = str(node - 1)
    started = {}  # handle -> (start time in us, source node)
    fates = collections.Counter()
    leads = []
    with open(path) as log:
        for line in log:
            f = line.split()
            if not f:
                continue
            if f[0] == "X" and int(f[3]) == node:
                if f[4] in started:
                    fates["copied again before use"] += 1
                started[f[4]] = (float(f[1]), int(f[2]))
                fates["copies"] += 1
            elif f[0] == "S" and f[2] == worker:
                for access in f[5:]:
                    if access.startswith("p="):
                        break
                    handle = access.rsplit(":", 1)[0]
                    if handle in started:
                        t0, src = started.pop(handle)
                        lead = (float(f[1]) - t0) * 1e-3
                        leads.append(lead)
                        length = "long" if lead >= LONG_MS else "short"
                        fates[f"used, {length} lead, from {'RAM' if src == 0 else 'a GPU'}"] += 1
            elif f[0] == "E" and int(f[2]) == node and f[3] in started:
                del started[f[3]]
                fates[f"evicted unused by a {'fetch' if f[5] == '0' else 'prefetch'}"] += 1
    return fates, sorted(leads)


def main(path, node=1):
    fates, leads = follow(path, node)
    for fate, n in sorted(fates.items()):
        print(f"{fate:<36} {n:7d}")
    if leads:
        marks = [leads[int(len(leads) * q)] for q in (0.1, 0.25, 0.5, 0.75, 0.9)]
        print("lead ms, 10/25/50/75/90 %:", " / ".join(f"{m:.1f}" for m in marks))


if __name__ == "__main__":
    if len(sys.argv) not in (2, 3):
        sys.exit(__doc__)
    main(sys.argv[1], *map(int, sys.argv[2:]))
