#!/usr/bin/env bash
# The runtime's resident memory and the archive's size, at 1x, 10x and 100x
# a run's length (issue: memory stays flat; the archive grows linearly with
# samples).
#
# The program is split_workload: 2 threads, each LENGTH s of CPU (default
# 1 s) times 1, 10 and 100, through the same bounded set of stacks, at
# FREQ Hz (default 1000). Its peak resident set (/usr/bin/time's %M of the
# program itself, run under the launcher) plain and profiled, one after the
# other at each length; the runtime's share is the difference. Then the
# raw stream's and the archive's bytes per sample.
#
#   benchmarks/memory.sh [BUILD_DIR] [LENGTH] [FREQ]
set -euo pipefail
build=${1:-build} length=${2:-1} freq=${3:-1000}
program="$build/tests/fixtures/split_workload"
[ -x "$program" ] || { echo "memory.sh: no $program (build the fixtures)" >&2; exit 2; }
[ -x /usr/bin/time ] || { echo "memory.sh: needs /usr/bin/time (Debian: time)" >&2; exit 2; }
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

# Peak RSS in KiB of `program ARGS` (under whatever runs this).
peak_kib() { /usr/bin/time -f '%M' -o "$work/rss" "$@" >/dev/null && cat "$work/rss"; }
bytes() { du -cb "$@" | tail -1 | cut -f1; }

printf '%-8s %12s %12s %12s %10s %14s %16s\n' length plain profiled runtime samples "raw B/sample" "archive B/sample"
for scale in 1 10 100; do
  seconds=$(awk -v l="$length" -v s="$scale" 'BEGIN {print l * s}')
  plain=$(peak_kib "$program" 2 "$seconds")
  out="$work/run$scale"
  "$build/bin/hybridprof" -F "$freq" -o "$out" -- /usr/bin/time -f '%M' -o "$work/rss" "$program" 2 "$seconds" \
    2>"$work/launcher.err" >/dev/null || { cat "$work/launcher.err" >&2; exit 1; }
  profiled=$(cat "$work/rss")
  samples=$(sed -n 's/^hybridprof: \([0-9]*\) samples.*/\1/p' "$work/launcher.err")
  raw=$(bytes "$out"/raw/*.hpr)
  archive=$(bytes "$out"/traces.otf2 "$out"/traces.def "$out"/traces)
  printf '%-8s %9s KiB %9s KiB %9s KiB %10s %14s %16s\n' "${scale}x" "$plain" "$profiled" $((profiled - plain)) \
    "$samples" "$(awk -v b="$raw" -v n="$samples" 'BEGIN {printf "%.1f", b / n}')" \
    "$(awk -v b="$archive" -v n="$samples" 'BEGIN {printf "%.1f", b / n}')"
  rm -rf "$out"
done
echo "(2 threads x $length s of CPU per 1x, $freq Hz; runtime = profiled - plain peak RSS; samples include the /usr/bin/time process's few)"
