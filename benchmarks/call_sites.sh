#!/usr/bin/env bash
# What a traced call adds as real programs make them: from 1, 8, 9, 64 and
# 4,096 call sites called in turn, at 10, 50 and 200 frames
# (benchmarks/call_overhead.sh over call_sites_bench, whose traced call is
# an NVTX push/pop pair: an adapter's enter and leave, each with its
# calling context, as MPI, OpenMP and CUDA calls are). Also the first call
# from each of 64 and 4,096 stacks never seen before ("first_").
# Targets: at most 150 ns added per traced call in steady state at every
# shape; at most 3 us for a first call at 50 frames.
#
#   benchmarks/call_sites.sh [BUILD_DIR] [RUNS] [INNER]
set -euo pipefail
build=${1:-build} runs=${2:-5} inner=${3:-20000}
[ -x "$build/bin/call_sites_bench" ] || { echo "call_sites.sh: no call_sites_bench in $build/bin (needs NVTX 3's headers)" >&2; exit 2; }
calls=""
for d in 10 50 200; do
  for s in 1 8 9 64 4096; do calls+="s${s}_d${d} "; done
  calls+="first_s64_d${d} first_s4096_d${d} "
done
"$(dirname "$0")/call_overhead.sh" "$build" "$runs" "Traced calls by call sites and depth, $inner calls a run" \
  "${calls% }" "$build/bin/call_sites_bench" "$inner"
echo "  (targets: at most +150 ns a call in steady state, +3000 ns for first_*_d50)"
