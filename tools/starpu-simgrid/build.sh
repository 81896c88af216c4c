#!/usr/bin/env bash
# Builds StarPU 1.4.10 in SimGrid mode (the oracle the task runtime is checked against) with a
# transfer/task/eviction log (xlog.patch, written for hetsim), into $STARPU_ORACLE (default
# /tmp/starpu-oracle). STARPU_DRIVERS_LOG=1 adds drivers-log.patch: the log then also has
# D time worker task (a task's end handled), H time worker task (a push, after its 1 us),
# O time worker busy N queued (a ws pop), W time thief none|locked V|stole V yes|no (a
# steal), M time worker nt N pl N tr 0|1 st 0|1 (a pop attempt: tasks in the pipeline,
# its length, a transfer pending, the pipeline stuck), R time worker (a CUDA driver loop)
# and Z time worker (it waits): issue 21's note, 2026-11-25. STARPU_OCCUPANCY_LOG=1 adds
# occupancy-log.patch: B time worker task n=queued handle:mode... p=prio (a dmda push, the
# target's queue length before it), T time node clean buffers (a tidying pass that starts),
# and on S lines `C clean buffers dirty_head Y` + 12 counts of the worker's GPU buffers by
# clean mark (dirty, clean) x MSI state (invalid, shared, owner) x pinned (no, yes): issue 21's
# second note of 2026-11-25. STARPU_THREADS_LOG=1 adds threads-log.patch: s time worker us
# (a thread begins a sleep) and a time worker (it wakes), K time pusher target st=status
# keep=flag and k time pusher target fast (a push's walk reaches a worker), g time worker
# block=0|1 (a CPU driver goes to wait) and G time worker (it is woken), y time worker node (a
# driver's progress on a node), e time worker (an eager pop that found nothing) and A time
# worker node (a request wakes a node's drivers): the rules of runtime/threads.rs, issue 21's
# note of 2026-11-26 (tools/starpu-simgrid/sleep-order.py checks the wake order).
# STARPU_REUSE_LOG=1 adds reuse-log.patch: V time node codes, the node's buffers in eviction
# order (first 400) when a fetch looks for a clean buffer to take over: R referenced, O owner
# (dirty), P pinned by a queued task's prefetch, I neither (issue 21's second note of
# 2026-11-26; tools/starpu-simgrid/reuse-scan.py reads it, and hetsim's log has the line).
# STARPU_RECLAIM_LOG=1 adds reclaim-log.patch: r time node 1|0 level worker (an allocation sets
# or clears the node's `reclaiming` flag, which refuses every other allocation there) and b time
# node worker 1|0 (an eviction's synchronous write-back of a victim begins or ends); hetsim's
# log writes the b lines too (node, handle, 1 level | 0), and reclaim-time.py compares the two
# (issue 21's note of 2026-11-27). Not used by CI or the tests. Needs root for apt and the
# Debian package registry: StarPU's source comes from Debian's `starpu` source package
# (1.4.10+dfsg-2, sid).
#
# StarPU 1.4.10 reproduces all 220 rows of tests/data/starpu-simgrid/results-visible.csv
# (made with 1.4.12) to the printed digit. Two things matter for that:
# - --enable-maxcpus=64: configure otherwise caps CPU workers at this machine's core count
#   (2 here), and STARPU_NCPU=8 silently runs 2 CPU workers;
# - STARPU_PERF_MODEL_DIR pointing at a copy of scenarios/machines (run.sh does it).
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
dest=${STARPU_ORACLE:-/tmp/starpu-oracle}
mkdir -p "$dest"
cd "$dest"
if [ ! -e /etc/apt/sources.list.d/hetsim-starpu-src.sources ]; then
    cat > /etc/apt/sources.list.d/hetsim-starpu-src.sources <<'SRC'
Types: deb-src
URIs: http://deb.debian.org/debian
Suites: sid
Components: main
Signed-By: /usr/share/keyrings/debian-archive-keyring.gpg
SRC
fi
apt-get update -qq
DEBIAN_FRONTEND=noninteractive apt-get install -y -qq libsimgrid-dev simgrid libopenblas-dev \
    pkg-config >/dev/null
if [ ! -d starpu-1.4.10+dfsg ]; then
    apt-get source --download-only starpu=1.4.10+dfsg-2 >/dev/null 2>&1
    tar xzf starpu_1.4.10+dfsg.orig.tar.gz
    (cd starpu-1.4.10+dfsg && patch -p1 -s < "$here/xlog.patch")
    if [ -n "${STARPU_DRIVERS_LOG:-}" ]; then
        (cd starpu-1.4.10+dfsg && patch -p1 -s < "$here/drivers-log.patch")
    fi
    if [ -n "${STARPU_OCCUPANCY_LOG:-}" ]; then
        (cd starpu-1.4.10+dfsg && patch -p1 -s < "$here/occupancy-log.patch")
    fi
    if [ -n "${STARPU_THREADS_LOG:-}" ]; then
        (cd starpu-1.4.10+dfsg && patch -p1 -s < "$here/threads-log.patch")
    fi
    if [ -n "${STARPU_REUSE_LOG:-}" ]; then
        (cd starpu-1.4.10+dfsg && patch -p1 -s < "$here/reuse-log.patch")
    fi
    if [ -n "${STARPU_RECLAIM_LOG:-}" ]; then
        (cd starpu-1.4.10+dfsg && patch -p1 -s < "$here/reclaim-log.patch")
    fi
fi
cd starpu-1.4.10+dfsg
./configure -q --enable-simgrid --enable-maxcpus=64 --disable-mpi --disable-opencl \
    --disable-fortran --disable-openmp --disable-socl --disable-starpufft --disable-build-doc \
    --disable-starpupy --disable-build-tests --disable-starpurm --disable-hdf5 --disable-fxt \
    >/dev/null
make -s -j"$(nproc)" -C src >/dev/null
make -s -j"$(nproc)" -C examples cholesky/cholesky_implicit lu/lu_implicit_example_float >/dev/null
echo "built: $dest/starpu-1.4.10+dfsg/examples/{cholesky/cholesky_implicit,lu/lu_implicit_example_float}"
