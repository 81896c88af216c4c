#!/usr/bin/env bash
# Regenerates reference.csv: two instances of one SMPI time-independent trace replayed at once
# on the fat-tree of ../smpi/fattree.xml by SimGrid 3.32 (SimGrid's replay_multiple, in
# ../../../tools/simgrid/replay-multiple.cpp; apt-get install libsimgrid-dev simgrid).
# tests/jobs_smpi.rs replays the same traces as two hetsim jobs and compares; it needs only
# the committed traces/ and reference.csv.
#
# The trace (traces/SIZE/rank-I.txt, written here): 8 ranks; rank i and rank (i+4) mod 8
# exchange SIZE bytes three times (isend, irecv, waitall), then ping-pong twice. Ranks 0-3
# sit under one leaf and ranks 4-7 under another, so every message crosses the leaves'
# uplinks. Placements (hosts of instance a, then b):
#   apart      a: h0-3, h8-11     b: h16-19, h24-27   (no link in common)
#   shared     a: h0-3, h8-11     b: h4-7, h12-15     (the same leaves' uplinks)
#   delayed    as shared, b starts 20 us later (20,000 flops at 1 Gf)
# SMPI is set as in ../smpi/run.sh: CM02, factors 1, messages up to 64000 B eager.
set -euo pipefail
cd "$(dirname "$0")"
command -v g++ >/dev/null && [ -e /usr/include/smpi/smpi.h ] ||
    { echo "run.sh: needs g++ and SimGrid (apt-get install libsimgrid-dev simgrid)" >&2; exit 2; }
SIZES="1024 32768 64000 1048576"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
g++ -O1 -o "$tmp/replay-multiple" ../../../tools/simgrid/replay-multiple.cpp -lsimgrid
for n in $SIZES; do
    mkdir -p "traces/$n"
    for i in $(seq 0 7); do
        p=$(( (i + 4) % 8 ))
        {
            echo "$i init"
            for _ in 1 2 3; do
                echo "$i irecv $p 0 $n 6"
                echo "$i isend $p 0 $n 6"
                echo "$i waitall"
            done
            for _ in 1 2; do
                if [ "$i" -lt 4 ]; then
                    echo "$i send $p 0 $n 6"; echo "$i recv $p 0 $n 6"
                else
                    echo "$i recv $p 0 $n 6"; echo "$i send $p 0 $n 6"
                fi
            done
            echo "$i finalize"
        } >"traces/$n/rank-$i.txt"
    done
done
printf 'a 8\nb 8\n' >"$tmp/instances"
hosts() { case "$1" in
    apart) echo "0 1 2 3 8 9 10 11|16 17 18 19 24 25 26 27" ;;
    *) echo "0 1 2 3 8 9 10 11|4 5 6 7 12 13 14 15" ;;
esac; }
cfg=(--cfg=network/model:CM02 --cfg=network/crosstraffic:0 --cfg=network/TCP-gamma:1e18
     --cfg=smpi/bw-factor:1 --cfg=smpi/lat-factor:1 --cfg=smpi/simulate-computation:no
     --cfg=smpi/async-small-thresh:64001 --cfg=smpi/send-is-detached-thresh:64001
     --log=root.thres:critical)
out="$tmp/reference.csv"
echo "case,bytes,job,start_s,smpi_s" >"$out"
for case in apart shared delayed; do
    delay=0; [ "$case" = delayed ] && delay=20000
    for n in $SIZES; do
        IFS='|' read -r ha hb <<<"$(hosts "$case")"
        {
            echo '<?xml version="1.0"?>'
            echo '<!DOCTYPE platform SYSTEM "https://simgrid.org/simgrid.dtd">'
            echo '<platform version="4.1">'
            for job in a b; do
                hs=$ha; d=0; [ "$job" = b ] && { hs=$hb; d=$delay; }
                r=0
                for h in $hs; do
                    echo "  <actor host=\"h$h\" function=\"$job\"><argument value=\"$job\"/><argument value=\"$r\"/><argument value=\"$PWD/traces/$n/rank-$r.txt\"/><argument value=\"$d\"/></actor>"
                    r=$((r + 1))
                done
            done
            echo '</platform>'
        } >"$tmp/deploy.xml"
        "$tmp/replay-multiple" ../smpi/fattree.xml "$tmp/deploy.xml" "$tmp/instances" "${cfg[@]}" \
            >"$tmp/ends" 2>"$tmp/err" || { cat "$tmp/err" >&2; exit 1; }
        for job in a b; do
            start=0; [ "$job" = b ] && start=$(awk -v d="$delay" 'BEGIN { printf "%.9f", d / 1e9 }')
            awk -v j="$job" -v s="$start" -v c="$case" -v n="$n" \
                '$1 == "end" && $2 == j { if ($4 > m) m = $4 } END { printf "%s,%s,%s,%s,%.12f\n", c, n, j, s, m - s }' \
                "$tmp/ends" >>"$out"
        done
    done
done
mv "$out" reference.csv
cat reference.csv
