#!/usr/bin/env bash
# Overhead of profiling a pure-Python CPU-bound program, measured in one
# run: plain vs `hybridprof -F 1000` (Python frames read at every sample)
# vs `python3 -m cProfile`, interleaved (ABC ABC ...) so machine noise hits
# every variant alike; medians of whole-command wall times and their ratios.
# Also the program alone under the preloaded runtime (no launcher start-up,
# no archive writing at the end), which is the per-sample cost, and the
# floor under any in-process sampler: the same program with a 1 kHz perf
# signal into an empty handler (lib/libsignal_floor_preload.so). On a VM
# the floor alone can cost several percent (timer interrupts and signal
# delivery go through the hypervisor); "above the floor" is what the
# profiler's own work costs.
# Target: at most 3% at 1 kHz (cProfile costs far more).
#
#   benchmarks/python_overhead.sh [BUILD_DIR] [RUNS] [ROUNDS] [PYTHON]
set -euo pipefail
build=${1:-build}
runs=${2:-7}
rounds=${3:-2000}
python=${4:-/usr/bin/python3}
bin=$build/bin
here=$(cd "$(dirname "$0")" && pwd)
program="$here/python_workload.py"
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

. "$here/timing.sh"

"$python" "$program" 1 >/dev/null  # warm the page cache
for i in $(seq "$runs"); do
  run plain "$python" "$program" "$rounds"
  run hp "$bin/hybridprof" -F 1000 -o "$work/hp.$i" -- "$python" "$program" "$rounds"
  run preload env HYBRIDPROF_QUIET=1 HYBRIDPROF_OUTPUT_DIR="$work/pre.$i" LD_PRELOAD="$build/lib/libhybridprof.so" \
    "$python" "$program" "$rounds"
  run floor env LD_PRELOAD="$build/lib/libsignal_floor_preload.so" "$python" "$program" "$rounds"
  run cprofile "$python" -m cProfile -o "$work/cprofile.$i" "$program" "$rounds"
done

plain=$(median "$work/plain"); hp=$(median "$work/hp"); pre=$(median "$work/preload"); floor=$(median "$work/floor"); cp=$(median "$work/cprofile")
echo "Python overhead ($("$python" -c 'import sys; print(sys.version.split()[0])'), $runs interleaved runs, median wall time)"
printf "  plain                          %8.3f s\n" "$(ratio "$plain" 1e9)"
printf "  hybridprof -F 1000             %8.3f s  ratio %s (whole command)\n" "$(ratio "$hp" 1e9)" "$(ratio "$hp" "$plain")"
printf "  program alone, preloaded       %8.3f s  ratio %s (target <= 1.03)\n" "$(ratio "$pre" 1e9)" "$(ratio "$pre" "$plain")"
printf "  floor: empty 1 kHz handler     %8.3f s  ratio %s\n" "$(ratio "$floor" 1e9)" "$(ratio "$floor" "$plain")"
printf "  preloaded above the floor                  ratio %s\n" "$(ratio "$pre" "$floor")"
printf "  python3 -m cProfile            %8.3f s  ratio %s\n" "$(ratio "$cp" 1e9)" "$(ratio "$cp" "$plain")"
