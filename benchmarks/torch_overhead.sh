#!/usr/bin/env bash
# Cost of sampling deep C++ stacks: a PyTorch training loop with oneDNN
# off (torch_deep_stack.py: native stacks of 100-190 frames through
# libtorch, no JIT code), measured in one run: plain, the program under the
# preloaded runtime at 1 kHz (no launcher start-up, no archive writing),
# and the floor under any in-process sampler: the same program with a bare
# 1 kHz perf signal into an empty handler (lib/libsignal_floor_preload.so).
# The runtime samples CPU time in the kernel too where the system lets it
# (a signal per millisecond of user plus system time), so the floor it is
# held to does the same (SIGNAL_FLOOR_KERNEL=1); the user-time-only floor is
# printed beside it. Runs are interleaved (ABC ABC ...) so machine noise
# hits every variant alike; medians of wall times and their ratios are
# printed, for the whole run and for the training loop after its first step
# (timed by the program itself: torch's import and the first step are where
# the unwinder meets every code address for the first time, and they weigh
# less the longer a job trains). The target: the runtime within 2% of the
# floor (runtime/floor <= 1.02).
# With perf installed, `perf record -F 1000 -g` and `--call-graph dwarf`
# are timed too, for comparison.
#
#   benchmarks/torch_overhead.sh [BUILD_DIR] [RUNS] [STEPS] [PYTHON]
set -euo pipefail
build=${1:-build}
runs=${2:-5}
steps=${3:-15}
python=${4:-/usr/bin/python3}
here=$(cd "$(dirname "$0")" && pwd)
program="$here/torch_deep_stack.py"
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
"$python" -c 'import torch' 2>/dev/null || { echo "torch_overhead: $python cannot import torch" >&2; exit 2; }
floor_lib="$build/lib/libsignal_floor_preload.so"
# The floor at kernel level too, unless the system refuses it (exit 3):
# then the runtime does not sample kernel mode with perf either.
kernel_floor=0
SIGNAL_FLOOR_KERNEL=1 LD_PRELOAD="$floor_lib" true 2>/dev/null && kernel_floor=1
have_perf=0
perf record -q -F 1000 -g -o "$work/probe.data" -- true >/dev/null 2>&1 && have_perf=1

. "$here/timing.sh"

"$python" "$program" 1 >/dev/null  # warm the page cache
for i in $(seq "$runs"); do
  run plain "$python" "$program" "$steps"
  run preload env HYBRIDPROF_QUIET=1 HYBRIDPROF_OUTPUT_DIR="$work/pre.$i" LD_PRELOAD="$build/lib/libhybridprof.so" \
    "$python" "$program" "$steps"
  run floor env LD_PRELOAD="$floor_lib" "$python" "$program" "$steps"
  [ $kernel_floor = 1 ] && run floor_kernel env SIGNAL_FLOOR_KERNEL=1 LD_PRELOAD="$floor_lib" "$python" "$program" "$steps"
  if [ $have_perf = 1 ]; then
    run perf_fp perf record -q -F 1000 -g -o "$work/perf.$i.data" -- "$python" "$program" "$steps"
    run perf_dwarf perf record -q -F 1000 --call-graph dwarf -o "$work/perfd.$i.data" -- "$python" "$program" "$steps"
    rm -f "$work/perf.$i.data" "$work/perfd.$i.data"
  fi
done

# Each variant's median: the whole run (start-up, torch's import, the first
# step: where the unwinder meets every instruction address for the first
# time) and the training loop after it (the program's own clock, loop_ns).
row() {  # LABEL NAME
  local whole loop
  whole=$(median "$work/$2"); loop=$(median "$work/$2.loop")
  printf "  %-32s %8.3f s  %8.3f s  %s  %s\n" "$1" "$(ratio "$whole" 1e9)" "$(ratio "$loop" 1e9)" \
    "$(ratio "$whole" "$(median "$work/plain")")" "$(ratio "$loop" "$(median "$work/plain.loop")")"
}
# RATIO NAME OVER: NAME's medians over OVER's, whole run and loop.
ratios() {
  printf "%s %s" "$(ratio "$(median "$work/$1")" "$(median "$work/$2")")" \
    "$(ratio "$(median "$work/$1.loop")" "$(median "$work/$2.loop")")"
}
echo "deep C++ stacks (PyTorch, oneDNN off, $steps steps), $runs interleaved runs, median wall times"
echo "                                   whole run  loop after   ratios to plain"
echo "                                              step 1       whole  loop"
row plain plain
row "runtime preloaded, 1 kHz" preload
row "floor: empty handler, user" floor
floor=floor
if [ $kernel_floor = 1 ]; then
  row "floor: empty handler, user+sys" floor_kernel
  read -r whole loop <<<"$(ratios preload floor)"
  echo "  runtime / user-time floor: whole run $whole, loop $loop"
  floor=floor_kernel
fi
read -r whole loop <<<"$(ratios preload $floor)"
echo "  runtime / the floor it samples like: whole run $whole, loop $loop (target <= 1.02)"
if [ $have_perf = 1 ]; then
  row "perf record -F 1000 -g" perf_fp
  row "perf record --call-graph dwarf" perf_dwarf
fi
