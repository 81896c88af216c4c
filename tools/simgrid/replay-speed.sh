#!/usr/bin/env bash
# Replays the SMPI-TI oracle's LULESH-like trace (tests/oracles/smpi-ti/lulesh.c: 64 ranks,
# 16,080 messages, recorded by SimGrid 3.32's smpirun -trace-ti) with SMPI (smpirun -replay)
# and with hetsim (tests/oracles/smpi-ti/lulesh.ron), on the same fat-tree and settings, side
# by side: each RUNS times (default 5), then the median wall time of each, their ratio, and
# both simulated times. Needs SimGrid (apt-get install libsimgrid-dev simgrid) and a release
# build. Usage: tools/simgrid/replay-speed.sh [HETSIM_BINARY] [RUNS]
set -euo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
bin=${1:-$root/target/release/hetsim}
runs=${2:-5}
command -v smpirun >/dev/null || { echo "replay-speed.sh: needs smpirun (apt-get install libsimgrid-dev simgrid)" >&2; exit 2; }
[ -x "$bin" ] || { echo "replay-speed.sh: no hetsim binary at $bin (cargo build --release)" >&2; exit 2; }
oracle=$root/tests/oracles/smpi-ti
source "$oracle/smpi-replay.sh"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
for i in $(seq 0 63); do echo "h$i"; done >"$tmp/hosts"
now() { date +%s.%N; }
median() { sort -g | awk '{a[NR]=$1} END {print (NR % 2) ? a[(NR+1)/2] : (a[NR/2]+a[NR/2+1])/2}'; }
: >"$tmp/smpi"; : >"$tmp/hetsim"
for _ in $(seq "$runs"); do
    t0=$(now); smpi_t=$(smpi_replay "$oracle/traces/lulesh" lulesh 64 fattree "$tmp/hosts"); t1=$(now)
    awk -v a="$t0" -v b="$t1" 'BEGIN {print b - a}' >>"$tmp/smpi"
    t0=$(now)
    "$bin" run "$oracle/lulesh.ron" --disable rendezvous_handshake --disable record -q --out "$tmp/out"
    t1=$(now)
    awk -v a="$t0" -v b="$t1" 'BEGIN {print b - a}' >>"$tmp/hetsim"
done
hetsim_t=$(grep -o '"sim_time_s": *[0-9.e+-]*' "$tmp/out/summary.json" | awk -F': *' '{print $2}')
s=$(median <"$tmp/smpi"); h=$(median <"$tmp/hetsim")
printf 'SMPI   replay: %.3f s wall (median of %d), simulated %s s\n' "$s" "$runs" "$smpi_t"
printf 'hetsim replay: %.3f s wall (median of %d), simulated %s s\n' "$h" "$runs" "$hetsim_t"
awk -v s="$s" -v h="$h" 'BEGIN {printf "hetsim is %.1fx faster\n", s / h}'
