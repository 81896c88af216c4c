#!/usr/bin/env bash
# Runs the SimGrid oracle programs of this folder (needs SimGrid: apt-get install
# libsimgrid-dev simgrid). Prints SimGrid's answers; the .cpp files say what they mean.
set -euo pipefail
cd "$(dirname "$0")"
out=$(mktemp -d)
g++ -O1 -o "$out/duplicate-link" duplicate-link.cpp -lsimgrid
for mode in dup split both; do
    "$out/duplicate-link" duplicate-link.xml "$mode" --cfg=network/model:CM02 \
        --cfg=network/latency-factor:1 --cfg=network/bandwidth-factor:1 \
        --cfg=network/weight-S:0 --cfg=network/crosstraffic:0 2>/dev/null
done
rm -rf "$out"
