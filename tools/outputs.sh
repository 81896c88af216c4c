#!/usr/bin/env bash
# Every shipped scenario's outputs, to show that a change moved no figure (or which moved).
#
#   tools/outputs.sh snapshot BIN DIR   run BIN (a hetsim binary) on every shipped scenario,
#                                       study and benchmark sweep; outputs under DIR
#   tools/outputs.sh compare A B        compare two snapshots file by file, ignoring wall-clock
#                                       values (wall_s) and the snapshot folders' own names
#
# Typical use: build main, `cp target/release/hetsim /tmp/hetsim-before`, snapshot it, make
# the change, snapshot the new binary, compare. Takes about a minute on two cores.
set -uo pipefail
cd "$(dirname "$0")/.."

snapshot() {
    local bin out
    bin=$(realpath "$1"); out=$(realpath -m "$2")
    rm -rf "$out"; mkdir -p "$out"
    run() {
        local name=$1; shift
        "$bin" "$@" >"$out/$name.stdout" 2>"$out/$name.stderr" || echo "FAILED: $name (see $out/$name.stderr)"
    }
    run whatif run --out "$out/whatif"
    for f in scenarios/*.ron scenarios/studies/{nccl-allreduce,nccl-superpod,halo3d,sweep,stencil,solver}.ron tests/data/scenarios/*.ron; do
        local n; n=$(basename "$f" .ron)
        case $n in *study*) continue ;; esac
        run "$n" run "$f" --out "$out/$n"
    done
    run lu512 run scenarios/lu-attila.ron --set platform.limit_cuda_mem_mb=512 --out "$out/lu512"
    run chol48k-dmda run scenarios/cholesky-attila.ron --set workload.n=48000 --set runtime.scheduler=dmda --out "$out/chol48k-dmda"
    for s in eager prio random ws lws dm dmda dmdar dmdap dmdas dmdasd heteroprio; do
        run "chol-$s" run scenarios/cholesky-attila.ron --set runtime.scheduler=$s --set platform.limit_cuda_mem_mb=512 --out "$out/chol-$s"
    done
    # The runtime's data-event log is in no shipped output: a refactor of the runtime must keep it too.
    for s in eager ws dmda dmdas; do
        run "chol-$s-log" run scenarios/cholesky-attila.ron --set runtime.scheduler=$s --set platform.limit_cuda_mem_mb=512 --set output.runtime_log=true --out "$out/chol-$s-log"
    done
    run systems systems
    # `hetsim flows` prints completion times on stdout: the reference flow cases and the
    # staggered 10,000-flow one.
    for f in tests/data/flows/*.json tests/data/flows/perf/case_n10000_stag.json; do
        case $f in *.expected.json) continue ;; esac
        run "flows-$(basename "$f" .json)" flows "$f"
    done
    run halo-hostcopy run scenarios/studies/halo3d.ron --disable gpudirect --out "$out/halo-hostcopy"
    run nccl-a100 nccl-tests --platform scenarios/platforms/dgx-a100.ron -g 8 -b 8 -e 8G -f 2 --out "$out/nccl-a100"
    run nccl-h100 nccl-tests --op all_gather --platform scenarios/platforms/dgx-h100-cluster.ron --set platform.nodes=4 -g 32 --algo ring --proto LL --proto LL128 --proto Simple --out "$out/nccl-h100"
    run p2p p2p --platform scenarios/platforms/lassen.ron --from 'node[0].gpu[0]' --to 'node[1].gpu[0]' --mode gpudirect --mode hostcopy -b 1 -e 16M --out "$out/p2p"
    for s in scenarios/studies/*.ron scenarios/*study*.ron; do
        local n; n=$(basename "$s" .ron)
        case $n in halo3d|sweep|stencil|solver|nccl-allreduce|nccl-superpod) continue ;; esac
        run "study-$n" study "$s" --jobs 2 --out "$out/study-$n"
    done
    echo "$(find "$out" -type f | wc -l) files in $out"
}

compare() {
    local a b bad=0
    a=$(realpath "$1"); b=$(realpath "$2")
    # Wall-clock figures differ from run to run: lines naming them are left out, and so is a
    # results.csv column named wall_s.
    norm() {
        local col
        col=$(head -1 "$1" | tr ',' '\n' | grep -nx 'wall_s' | cut -d: -f1)
        if [[ $1 == *results.csv && -n $col ]]; then
            cut -d, -f"$col" --complement "$1"
        else
            sed -e "s#$2##g" "$1" | grep -v -i wall
        fi
    }
    while IFS= read -r f; do
        local rel=${f#"$a"/}
        case $rel in *.stderr|*/wall_s.*) continue ;; esac
        if [[ ! -e $b/$rel ]]; then echo "only in $a: $rel"; bad=1; continue; fi
        cmp -s "$f" "$b/$rel" && continue
        diff -q <(norm "$f" "$a") <(norm "$b/$rel" "$b") >/dev/null 2>&1 && continue
        echo "differs: $rel"; bad=1
    done < <(find "$a" -type f | sort)
    echo "compared $(find "$a" -type f | wc -l) files: $([[ $bad == 0 ]] && echo identical || echo 'see above')"
    return $bad
}

case ${1:-} in
    snapshot) snapshot "$2" "$3" ;;
    compare) compare "$2" "$3" ;;
    *) sed -n '2,10p' "$0"; exit 2 ;;
esac
