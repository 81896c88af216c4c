#!/usr/bin/env bash
# Records the SMPI-TI oracle's traces and SMPI's replay times (SimGrid 3.32:
# apt-get install libsimgrid-dev simgrid). For each program (halo.c: 8 ranks and actions.c:
# 4 on ../smpi/star.xml; lulesh.c: 64 on ../smpi/fattree.xml):
#   1. smpirun -trace-ti writes traces/NAME/NAME.txt (SMPI's index) and its per-rank files;
#   2. smpirun -replay replays that trace on the same platform, with the SMPI oracle's settings
#      (../smpi/run.sh: CM02 max-min, factors 1, 64000 B eager, no handshake) and the
#      collective algorithms hetsim forces in tests/smpi_ti.rs; replay.csv gets the time.
#   3. lulesh is replayed once more on fattree.xml without link latency (lulesh-lat0).
# tests/smpi_ti.rs replays the committed traces in hetsim; SimGrid is not needed there.
set -euo pipefail
cd "$(dirname "$0")"
command -v smpicc >/dev/null || { echo "record.sh: needs smpicc (apt-get install libsimgrid-dev simgrid)" >&2; exit 2; }
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
for i in $(seq 0 63); do echo "h$i"; done >"$tmp/hosts"
source ./smpi-replay.sh
echo "trace,ranks,platform,smpi_s" >"$tmp/replay.csv"
for prog in halo:8:star actions:4:star lulesh:64:fattree; do
    IFS=: read -r name np platform <<<"$prog"
    smpicc -O2 -o "$tmp/$name" "$name.c"
    rm -rf "traces/$name"; mkdir -p "traces/$name"
    (cd "traces/$name" && smpirun -np "$np" -platform "../../../smpi/$platform.xml" -hostfile "$tmp/hosts" \
        -trace-ti --cfg=tracing/filename:"$name.txt" --cfg=smpi/simulate-computation:no \
        --log=root.thres:critical "$tmp/$name" >/dev/null)
    t=$(smpi_replay "traces/$name" "$name" "$np" "$platform" "$tmp/hosts")
    echo "$name,$np,$platform,$t" >>"$tmp/replay.csv"
done
# The LULESH-like trace once more, on the fat-tree without link latency. SimGrid's CM02 model
# shares a link among flows in inverse proportion to their route's latency (a flow's sharing
# penalty is its latency); hetsim shares it equally. With no latency every flow weighs the same
# on both sides, so the two replays must agree closely (tests/smpi_ti.rs).
sed 's/lat="0.25us"/lat="0us"/' ../smpi/fattree.xml >"$tmp/fattree-lat0.xml"
t=$(smpi_replay traces/lulesh lulesh 64 "$tmp/fattree-lat0.xml" "$tmp/hosts")
echo "lulesh-lat0,64,fattree-lat0,$t" >>"$tmp/replay.csv"
mv "$tmp/replay.csv" replay.csv
cat replay.csv
