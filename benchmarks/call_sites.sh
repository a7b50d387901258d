#!/usr/bin/env bash
# What a traced call adds as real programs make them: from 1, 8, 9, 64 and
# 4,096 call sites called in turn, at 10, 50 and 200 frames
# (benchmarks/call_overhead.sh over call_sites_bench, whose traced call is
# an NVTX push/pop pair: an adapter's enter and leave, each with its
# calling context, as MPI, OpenMP and CUDA calls are; and over
# call_sites_openmp_bench, whose traced call is a one-thread OpenMP
# parallel region; and over call_sites_mpi_bench, whose traced call is an
# MPI_Allreduce of one int on MPI_COMM_SELF, one process). Also the first
# call from each of 64 and 4,096 stacks never seen before, through code
# seen before ("first_").
# Targets: at most 150 ns added per traced call in steady state at every
# shape; at most 3 us for a first call at 50 frames.
#
#   benchmarks/call_sites.sh [BUILD_DIR] [RUNS] [INNER]
set -euo pipefail
build=${1:-build} runs=${2:-5} inner=${3:-20000}
calls=""
for d in 10 50 200; do
  for s in 1 8 9 64 4096; do calls+="s${s}_d${d} "; done
  calls+="first_s64_d${d} first_s4096_d${d} "
done
ran=0
for bench in call_sites_bench:NVTX call_sites_openmp_bench:OpenMP call_sites_mpi_bench:MPI; do
  [ -x "$build/bin/${bench%%:*}" ] || { echo "call_sites.sh: no ${bench%%:*} in $build/bin" >&2; continue; }
  "$(dirname "$0")/call_overhead.sh" "$build" "$runs" "${bench#*:} traced calls by call sites and depth, $inner calls a run" \
    "${calls% }" "$build/bin/${bench%%:*}" "$inner"
  ran=1
done
[ "$ran" = 1 ] || exit 2
echo "  (targets: at most +150 ns a call in steady state, +3000 ns for first_*_d50)"
