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
# seen before ("first_"). Then, for each, what a traced call costs with
# the capture window closed (hybridprof_stop: the calls pass through,
# nothing samples), against plain and against the window open, measured
# in one process in turn (call_sites_bench's BENCH_ALTERNATE_WINDOWS), 9
# sites at 10 frames.
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

work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
median() { sort -g | awk '{a[NR]=$1} END {print (NR%2) ? a[(NR+1)/2] : (a[NR/2]+a[NR/2+1])/2}'; }
echo "Outside a capture window: ns a call, 9 sites at 10 frames, median of $runs runs"
for bench in call_sites_bench:NVTX call_sites_openmp_bench:OpenMP call_sites_mpi_bench:MPI; do
  program=$build/bin/${bench%%:*}
  [ -x "$program" ] || continue
  for i in $(seq "$runs"); do
    "$program" "$inner" 11 10 9 | sed -n 's/^s9_d10_ns=//p' >>"$work/plain"
    BENCH_ALTERNATE_WINDOWS=1 "$build/bin/hybridprof" -o "$work/run.$i" -- "$program" "$inner" 11 10 9 2>/dev/null \
      | tr ' ' '\n' >"$work/figures"
    sed -n 's/^s9_d10_ns=//p' "$work/figures" >>"$work/open"
    sed -n 's/^s9_d10_closed_ns=//p' "$work/figures" >>"$work/closed"
    rm -rf "$work/run.$i"
  done
  printf "  %-7s plain %8.1f   window closed %8.1f   window open %8.1f\n" "${bench#*:}" \
    "$(median <"$work/plain")" "$(median <"$work/closed")" "$(median <"$work/open")"
  rm -f "$work/plain" "$work/open" "$work/closed"
done
