#!/usr/bin/env bash
# Runs StarPU-SimGrid (built by build.sh) on rows read from standard input, one per line:
#   machine app sched ncuda ncpu nblocks cap_mb        (app: cholesky or lu)
# and prints them as CSV in the columns of tests/data/starpu-simgrid/results-visible.csv,
# two simulations at a time. Feed the output to the reference test as a report:
#   HETSIM_REF_CSV=rows.csv HETSIM_REF_ROWS=1 cargo test --release --test starpu_simgrid -- --nocapture
# STARPU_XLOG=file (one row only) makes StarPU log each transfer (X time src dst handle
# origin), task pop (P time worker name handle:mode...), task start (S time worker name
# j=job handle:mode... p=priority M buffers pinned referenced idle U used_MiB K chunks
# blocks: the occupancy of the worker's GPU, see below), eviction (E time node handle
# reuse|free is_prefetch nb_tasks_prefetch), request made (Q time handle src dst
# is_prefetch), request short of memory (N time handle node is_prefetch buffers pinned
# referenced idle), request joining another's copy in flight, its pins lost (L time handle
# node is_prefetch nb_tasks_prefetch) and request raised to a fetch by a popped task (U time
# handle node old_is_prefetch). is_prefetch: 0 fetch, 1 task prefetch, 3 idle; StarPU's
# memory nodes are 0 = RAM, 1.. = CUDA0... Occupancy: buffers on the node's LRU list, those
# pinned by queued tasks' prefetches (nb_tasks_prefetch > 0), those referenced, those
# neither; the memory counted against the limit; the sub-allocator's 32 MiB chunks and the
# 16 KiB blocks in use in them (issue 21's note: 32 chunks, room for 288 tiles, 250 held).
# After changing xlog.patch, rebuild with build.sh on a fresh $STARPU_ORACLE (it patches
# only a fresh source tree).
# StarPU's own variables in the environment reach the runs (STARPU_PREFETCH=0 made
# tests/data/starpu-simgrid/noprefetch-1.4.10.csv).
# STARPU_SCALE_CPU="model factor" (for example "chol_model_gemm 1.01") scales that codelet's
# CPU history means, on every machine, in the copy of the models the rows run with: how much a
# row moves when one calibrated time moves by 1 % (issue 21's note, section 3).
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
ex=${STARPU_ORACLE:-/tmp/starpu-oracle}/starpu-1.4.10+dfsg/examples
models=$(mktemp -d)
trap 'rm -rf "$models"' EXIT
cp -r "$here/../../scenarios/machines/." "$models/"
if [ -n "${STARPU_SCALE_CPU:-}" ]; then
    read -r scale_model scale_factor <<<"$STARPU_SCALE_CPU"
    for f in "$models"/codelets/45/"$scale_model".*; do
        # A CPU combination is one whose device type (the line after "# device type") is 0;
        # its history rows have 8 fields, the mean 4th. (Not always COMB_0: the LU models
        # of mirage list the CPU's as COMB_3.)
        awk -v k="$scale_factor" '
            /^# COMB_/ { cpu = 0 }
            dev { cpu = ($1 == 0); dev = 0 }
            /^# device type/ { dev = 1 }
            cpu && !/^#/ && NF == 8 && $1 ~ /^[0-9a-f]+$/ { $4 = sprintf("%e", $4 * k) }
            { print }' "$f" > "$f.scaled"
        mv "$f.scaled" "$f"
    done
fi
one() {
    local m=$1 app=$2 s=$3 nc=$4 np=$5 nb=$6 cap=$7 bin
    case $app in
        cholesky) bin=$ex/cholesky/cholesky_implicit ;;
        lu) bin=$ex/lu/lu_implicit_example_float ;;
        *) echo "unknown app $app" >&2; return 1 ;;
    esac
    local t0 out
    t0=$(date +%s.%N)
    out=$(STARPU_PERF_MODEL_DIR=$models STARPU_HOSTNAME=$m STARPU_NCUDA=$nc STARPU_NCPU=$np \
        STARPU_NOPENCL=0 STARPU_SCHED=$s STARPU_LIMIT_CUDA_MEM=$cap \
        "$bin" -size $((960 * nb)) -nblocks "$nb" 2>/dev/null | tail -1)
    read -r n ms gf <<<"$out"
    printf '%s,%s,%s,%s,%s,%s,960,%s,%s,%s,%s,%s\n' "$m" "$app" "$s" "$nc" "$np" "$nb" "$n" \
        "$cap" "$ms" "$gf" "$(awk -v a="$t0" -v b="$(date +%s.%N)" 'BEGIN { printf "%.2f", b - a }')"
}
export -f one
export ex models
echo "machine,app,sched,ncuda,ncpu,nblocks,block,n,limit_cuda_mem_mb,sim_ms,gflops,wall_s"
xargs -P2 -L1 bash -c 'one "$@"' _
