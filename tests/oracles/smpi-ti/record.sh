#!/usr/bin/env bash
# Records the SMPI-TI oracle's traces and SMPI's replay times (SimGrid 3.32:
# apt-get install libsimgrid-dev simgrid). For each program (halo.c: 8 ranks, actions.c: 4):
#   1. smpirun -trace-ti writes traces/NAME/NAME.txt (SMPI's index) and its per-rank files;
#   2. smpirun -replay replays that trace on ../smpi/star.xml, with the SMPI oracle's settings
#      (../smpi/run.sh: CM02 max-min, factors 1, 64000 B eager, no handshake) and the
#      collective algorithms hetsim forces in tests/smpi_ti.rs; replay.csv gets the time.
# tests/smpi_ti.rs replays the committed traces in hetsim; SimGrid is not needed there.
set -euo pipefail
cd "$(dirname "$0")"
command -v smpicc >/dev/null || { echo "record.sh: needs smpicc (apt-get install libsimgrid-dev simgrid)" >&2; exit 2; }
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
for i in $(seq 0 63); do echo "h$i"; done >"$tmp/hosts"
cfg=(--cfg=network/model:CM02 --cfg=network/crosstraffic:0 --cfg=network/TCP-gamma:1e18
     --cfg=smpi/bw-factor:1 --cfg=smpi/lat-factor:1 --cfg=smpi/wtime:0
     --cfg=smpi/async-small-thresh:64001 --cfg=smpi/send-is-detached-thresh:64001
     --cfg=smpi/host-speed:1Gf --log=root.thres:critical --log=smpi_replay.thres:info)
# The algorithms hetsim forces (tests/smpi_ti.rs), as SMPI names them.
algos=(--cfg=smpi/bcast:binomial_tree --cfg=smpi/reduce:binomial --cfg=smpi/allreduce:rdb
       --cfg=smpi/allgather:NTSLR --cfg=smpi/alltoall:basic_linear
       --cfg=smpi/reduce_scatter:mpich_pair --cfg=smpi/barrier:mpich
       --cfg=smpi/gather:ompi_basic_linear --cfg=smpi/scatter:ompi_basic_linear
       --cfg=smpi/alltoallv:ompi_basic_linear --cfg=smpi/allgatherv:pair)
echo "trace,ranks,smpi_s" >"$tmp/replay.csv"
for prog in halo:8 actions:4; do
    name=${prog%:*}; np=${prog#*:}
    smpicc -O2 -o "$tmp/$name" "$name.c"
    rm -rf "traces/$name"; mkdir -p "traces/$name"
    (cd "traces/$name" && smpirun -np "$np" -platform ../../../smpi/star.xml -hostfile "$tmp/hosts" \
        -trace-ti --cfg=tracing/filename:"$name.txt" --cfg=smpi/simulate-computation:no \
        --log=root.thres:critical "$tmp/$name" >/dev/null)
    t=$(cd "traces/$name" && smpirun -np "$np" -platform ../../../smpi/star.xml -hostfile "$tmp/hosts" \
        "${cfg[@]}" "${algos[@]}" -replay "$name.txt" 2>&1 | grep -o 'Simulation time [0-9.e+-]*' | awk '{print $3}')
    echo "$name,$np,$t" >>"$tmp/replay.csv"
done
mv "$tmp/replay.csv" replay.csv
cat replay.csv
