#!/usr/bin/env bash
# Runs a flow case (tests/data/flows/README.md's format, e.g.
# tests/data/flows/perf/case_n10000_stag.json) with SimGrid (tools/simgrid/flowcase.cpp) and
# with `hetsim flows`, side by side: first once each to compare their completion times (the
# largest relative difference is printed), then RUNS times each in turn (default 5), and the
# median wall time of each and their ratio. Needs SimGrid (apt-get install libsimgrid-dev
# simgrid), g++, python3 and a release build.
# Usage: tools/simgrid/flow-speed.sh CASE.json [HETSIM_BINARY] [RUNS]
set -euo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
case_json=${1:?usage: flow-speed.sh CASE.json [HETSIM_BINARY] [RUNS]}
bin=${2:-$root/target/release/hetsim}
runs=${3:-5}
[ -f "$case_json" ] || { echo "flow-speed.sh: no flow case at $case_json" >&2; exit 2; }
[ -x "$bin" ] || { echo "flow-speed.sh: no hetsim binary at $bin (cargo build --release)" >&2; exit 2; }
[ -f /usr/include/simgrid/s4u.hpp ] || { echo "flow-speed.sh: needs SimGrid (apt-get install libsimgrid-dev simgrid)" >&2; exit 2; }
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
g++ -O2 -o "$tmp/flowcase" "$root/tools/simgrid/flowcase.cpp" -lsimgrid
python3 "$root/tools/simgrid/flowcase-input.py" "$case_json" >"$tmp/case.txt"
simgrid() { "$tmp/flowcase" "$tmp/case.txt"; }
hetsim() { "$bin" flows "$case_json"; }
simgrid >"$tmp/simgrid.txt"
hetsim >"$tmp/hetsim.json"
python3 - "$tmp/simgrid.txt" "$tmp/hetsim.json" <<'EOF'
import json, sys
simgrid = {line.split()[0]: float(line.split()[1]) for line in open(sys.argv[1])}
hetsim = json.load(open(sys.argv[2]))["flows"]
assert simgrid.keys() == hetsim.keys(), "the two runs name different flows"
worst = max(abs(hetsim[k] - t) / t for k, t in simgrid.items())
print(f"{len(simgrid)} flows; largest relative difference of completion times: {worst:.3g}")
EOF
now() { date +%s.%N; }
median() { sort -g | awk '{a[NR]=$1} END {print (NR % 2) ? a[(NR+1)/2] : (a[NR/2]+a[NR/2+1])/2}'; }
: >"$tmp/simgrid.wall"; : >"$tmp/hetsim.wall"
for _ in $(seq "$runs"); do
    t0=$(now); simgrid >/dev/null; t1=$(now)
    awk -v a="$t0" -v b="$t1" 'BEGIN {print b - a}' >>"$tmp/simgrid.wall"
    t0=$(now); hetsim >/dev/null; t1=$(now)
    awk -v a="$t0" -v b="$t1" 'BEGIN {print b - a}' >>"$tmp/hetsim.wall"
done
s=$(median <"$tmp/simgrid.wall"); h=$(median <"$tmp/hetsim.wall")
printf 'SimGrid: %.3f s wall (median of %d)\n' "$s" "$runs"
printf 'hetsim:  %.3f s wall (median of %d)\n' "$h" "$runs"
awk -v s="$s" -v h="$h" 'BEGIN {printf "hetsim is %.1fx faster\n", s / h}'
