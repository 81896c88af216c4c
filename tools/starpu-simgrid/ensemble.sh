#!/usr/bin/env bash
# Runs StarPU-SimGrid (built by build.sh) on rows read from standard input, in the format of
# run.sh, once as calibrated and once with each of the application's four CPU codelet times
# scaled by 0.999 and by 1.001 (run.sh's STARPU_SCALE_CPU): nine predictions per row. Prints
# them as CSV: the perturbation (`nominal` or `model*factor`), then run.sh's columns without
# wall_s. This is how tests/data/starpu-simgrid/ensembles-1.4.10.csv was made:
#   tools/starpu-simgrid/ensemble.sh < rows.txt > ensembles.csv
# Why: with CPUs that run a GEMM 30 times slower than a GPU, which worker takes a critical task
# first decides the tail of some runs, and a 0.1 % change of one calibrated time moves StarPU's
# own prediction by up to 20 % (issue 21's note). A single run of such a row is one sample; the
# ensemble's median is what a model can be expected to match.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
rows=$(cat)
models() {
    case $1 in
        cholesky) echo chol_model_gemm chol_model_potrf chol_model_trsm chol_model_syrk ;;
        lu) echo starpu_slu_lu_model_gemm starpu_slu_lu_model_getrf starpu_slu_lu_model_trsm_ll starpu_slu_lu_model_trsm_ru ;;
        *) echo "unknown app $1" >&2; return 1 ;;
    esac
}
# run.sh's CSV without its header and wall_s, prefixed with the perturbation.
label() { tail -n +2 | sed -e "s/^/$1,/" -e 's/,[^,]*$//'; }
echo "perturbation,machine,app,sched,ncuda,ncpu,nblocks,block,n,limit_cuda_mem_mb,sim_ms,gflops"
bash "$here/run.sh" <<<"$rows" | label nominal
for app in cholesky lu; do
    app_rows=$(awk -v a="$app" '$2 == a' <<<"$rows")
    [ -n "$app_rows" ] || continue
    for model in $(models "$app"); do
        for factor in 0.999 1.001; do
            STARPU_SCALE_CPU="$model $factor" bash "$here/run.sh" <<<"$app_rows" \
                | label "$model*$factor"
        done
    done
done
