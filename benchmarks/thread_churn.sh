#!/usr/bin/env bash
# Per-thread cost (at most 2x, for the threads' loop and for the whole
# command): N short threads created and joined one after the other, plain
# vs under hybridprof, interleaved runs.
# Prints the median per-thread time of each and their ratio, for the
# threads' loop alone and for the whole command (start, archive included).
#
#   benchmarks/thread_churn.sh [BUILD_DIR] [RUNS] [THREADS]
set -euo pipefail
build=${1:-build} runs=${2:-5} threads=${3:-10000}
bench="$build/bin/thread_churn"
[ -x "$bench" ] || { echo "thread_churn.sh: no $bench (build the benchmarks)" >&2; exit 2; }
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
. "$(dirname "$0")/timing.sh"
for ((i = 0; i < runs; ++i)); do
  run plain "$bench" "$threads"
  rm -rf "$work/profile"
  run profiled "$build/bin/hybridprof" -o "$work/profile" -- "$bench" "$threads"
done
per_thread() { awk -v ns="$1" -v n="$threads" 'BEGIN {printf "%.1f us", ns / n / 1000}'; }
pl=$(median "$work/plain.loop") pr=$(median "$work/profiled.loop")
echo "thread churn, $threads threads, $runs interleaved runs ($(nproc) cores), medians"
echo "  per thread   plain $(per_thread "$pl")  profiled $(per_thread "$pr")  ratio $(ratio "$pr" "$pl") (target: at most 2)"
echo "  whole run    plain $(ratio "$(median "$work/plain")" 1000000000) s  profiled $(ratio "$(median "$work/profiled")" 1000000000) s  ratio $(ratio "$(median "$work/profiled")" "$(median "$work/plain")") (target: at most 2; start and archive included: threads that recorded nothing get no location)"
