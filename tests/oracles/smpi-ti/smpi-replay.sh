# SMPI's replay settings for the SMPI-TI oracle, sourced by record.sh and
# tools/simgrid/replay-speed.sh: the SMPI oracle's model (../smpi/run.sh: CM02 max-min,
# factors 1, 64000 B eager, no handshake) and the collective algorithms hetsim forces.
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
# smpi_replay DIR NAME NP PLATFORM HOSTS: replays DIR/NAME.txt on ../smpi/PLATFORM.xml (or on
# PLATFORM itself, a path) and prints SMPI's simulated time in seconds.
smpi_replay() {
    local here platform; here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
    platform=$4; [[ $platform == */* ]] || platform="$here/../smpi/$platform.xml"
    (cd "$1" && smpirun -np "$3" -platform "$platform" -hostfile "$5" \
        "${cfg[@]}" "${algos[@]}" -replay "$2.txt" 2>&1 |
        grep -o 'Simulation time [0-9.e+-]*' | awk '{print $3}')
}
