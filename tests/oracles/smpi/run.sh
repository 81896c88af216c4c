#!/usr/bin/env bash
# Regenerates reference.csv: every case of cases.txt, at every size, on both platforms,
# timed by SimGrid 3.32's SMPI (apt-get install libsimgrid-dev simgrid). tests/smpi_oracle.rs
# replays the same cases in hetsim and compares; it needs only the committed CSV.
#
# SMPI is set to what hetsim models: latency + size / bandwidth with max-min sharing (CM02,
# no cross-traffic, no TCP window, factors 1), no computation, messages up to 64000 B eager
# (detached and sent at once), larger ones when both sides are there (no handshake: hetsim
# adds RTS and CTS, see the test). Usage: [PLATFORMS="star fattree"] ./run.sh [CASE-FILTER-REGEX]
# (about 15 minutes on two cores).
set -euo pipefail
cd "$(dirname "$0")"
command -v smpicc >/dev/null || { echo "run.sh: needs smpicc (apt-get install libsimgrid-dev simgrid)" >&2; exit 2; }
filter=${1:-.}
SIZES="8 1024 32768 65536 1048576 4194304"
# The sizes hetsim and SMPI both take; run.sh FILTER prints the rows of matching cases only.
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
smpicc -O2 -o "$tmp/coll" coll.c
for i in $(seq 0 63); do echo "h$i"; done >"$tmp/hosts"
cfg=(--cfg=network/model:CM02 --cfg=network/crosstraffic:0 --cfg=network/TCP-gamma:1e18
     --cfg=smpi/bw-factor:1 --cfg=smpi/lat-factor:1 --cfg=smpi/simulate-computation:no
     --cfg=smpi/wtime:0 --cfg=smpi/async-small-thresh:64001
     --cfg=smpi/send-is-detached-thresh:64001 --log=root.thres:critical)
out="$tmp/reference.csv"
echo "platform,op,smpi_algo,hetsim_algo,ranks,bytes,smpi_s" >"$out"
grep -v '^#' cases.txt | grep -E -- "$filter" | while read -r op salgo halgo ranks options; do
    max=$(echo "${options:-}" | grep -o 'max=[0-9]*' | cut -d= -f2 || true)
    for platform in ${PLATFORMS:-star fattree}; do
        for p in ${ranks//,/ }; do
            for n in $SIZES; do
                [ -n "$max" ] && [ "$n" -gt "$max" ] && continue
                if [[ "${options:-}" == *whole* ]]; then
                    n=$(( n / p * p ))
                    [ "$n" -eq 0 ] && continue
                fi
                [ "$op" = barrier ] && [ "$n" != 8 ] && continue
                # reduce_int is a reduce (of MPI_INT) to SMPI.
                algo=(); [ "$salgo" != - ] && algo=(--cfg=smpi/${op%_int}:$salgo)
                # SMPI's own algorithm may refuse a case (a truncated receive): left out.
                t=$(smpirun -np "$p" -platform "$platform.xml" -hostfile "$tmp/hosts" "${cfg[@]}" \
                    "${algo[@]}" "$tmp/coll" "$op" "$n" 2>"$tmp/err" | awk -v op="$op" '$1 == op {print $4}') || true
                if [ -z "$t" ]; then
                    echo "run.sh: SMPI failed on $platform $op $salgo p=$p n=$n: $(grep -m1 -o 'CRITICAL.*' "$tmp/err")" >&2
                    continue
                fi
                echo "$platform,$op,$salgo,$halgo,$p,$n,$t" >>"$out"
            done
        done
    done
done
if [ "$filter" = . ]; then mv "$out" reference.csv; else cat "$out"; fi
