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
# printed. The target: the runtime within 2% of the floor (runtime/floor
# <= 1.02).
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

plain=$(median "$work/plain"); pre=$(median "$work/preload"); floor=$(median "$work/floor")
echo "deep C++ stacks (PyTorch, oneDNN off, $steps steps), $runs interleaved runs, median wall time"
printf "  plain                          %8.3f s\n" "$(ratio "$plain" 1e9)"
printf "  runtime preloaded, 1 kHz       %8.3f s  ratio %s\n" "$(ratio "$pre" 1e9)" "$(ratio "$pre" "$plain")"
printf "  floor: empty handler, user     %8.3f s  ratio %s\n" "$(ratio "$floor" 1e9)" "$(ratio "$floor" "$plain")"
if [ $kernel_floor = 1 ]; then
  floor_k=$(median "$work/floor_kernel")
  printf "  floor: empty handler, user+sys %8.3f s  ratio %s\n" "$(ratio "$floor_k" 1e9)" "$(ratio "$floor_k" "$plain")"
  printf "  runtime above the user-time floor          ratio %s\n" "$(ratio "$pre" "$floor")"
  floor=$floor_k
fi
printf "  runtime above the floor it samples like    ratio %s (target <= 1.02)\n" "$(ratio "$pre" "$floor")"
if [ $have_perf = 1 ]; then
  printf "  perf record -F 1000 -g         %8.3f s  ratio %s\n" "$(ratio "$(median "$work/perf_fp")" 1e9)" \
    "$(ratio "$(median "$work/perf_fp")" "$plain")"
  printf "  perf record --call-graph dwarf %8.3f s  ratio %s\n" "$(ratio "$(median "$work/perf_dwarf")" 1e9)" \
    "$(ratio "$(median "$work/perf_dwarf")" "$plain")"
fi
