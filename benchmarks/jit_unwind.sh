#!/usr/bin/env bash
# What a sample under JIT code costs the sample handler, by the depth of
# the JIT code's callers: tests/fixtures/jit_workload runs generated code
# (no unwind tables: every sample's callers are found by a stack scan) at
# 0 and DEPTH frames of recursion below main, profiled at 1 kHz. Prints the
# median over RUNS of the report's "Sample handler" mean (entry to return,
# switched-out handlers left out) and the share of samples recovered. The
# scan's callers are remembered per thread (src/unwind/recovered_callers.h):
# without that, each sample walked the whole depth with DWARF steps
# (29-38 us at 150 frames on the reference VM; 3.7-4.1 us with it).
#
#   benchmarks/jit_unwind.sh [BUILD_DIR] [RUNS] [DEPTH]
set -euo pipefail
build=${1:-build}
runs=${2:-5}
depth=${3:-150}
fixture=$build/tests/fixtures/jit_workload
[ -x "$fixture" ] || { echo "jit_unwind.sh: no $fixture (build the tests)" >&2; exit 2; }
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
median() { sort -n | awk '{a[NR]=$1} END {if (NR == 0) print "-"; else print (NR%2) ? a[(NR+1)/2] : (a[NR/2]+a[NR/2+1])/2}'; }

echo "JIT code under a deep caller, sample handler cost ($runs runs each, 1 kHz, 1 s of CPU)"
for d in 0 "$depth"; do
  : >"$work/us.$d"; : >"$work/recovered.$d"
  for i in $(seq "$runs"); do
    "$build/bin/hybridprof" -F 1000 -o "$work/run" -- "$fixture" 1 "$d" >/dev/null 2>&1
    report=$("$build/bin/hybridprof-report" "$work/run")
    rm -rf "$work/run"
    sed -n 's/^  Sample handler *\([0-9.]*\) us a sample.*/\1/p' <<<"$report" >>"$work/us.$d"
    sed -n 's/^  Recovered unwinds.*(\([0-9.]*\)% of samples.*/\1/p' <<<"$report" >>"$work/recovered.$d"
  done
  printf "  %4s frames below main: %6s us a sample (median), %5s%% of samples recovered\n" "$d" \
    "$(median <"$work/us.$d")" "$(median <"$work/recovered.$d")"
done
