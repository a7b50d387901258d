#!/usr/bin/env bash
# Cost of the OS-runtime adapter on calls that do not wait
# (benchmarks/call_overhead.sh over os_wait_bench): an uncontended mutex
# lock/unlock pair (one interposed call) and a 1-byte pipe write and read
# (two). Target: at most 60 ns added per interposed call. "traced" less
# "adapter off" is the adapter's own cost: the profiler's presence alone
# makes system calls dearer in a virtual machine (its perf event).
#
#   benchmarks/os_wait_overhead.sh [BUILD_DIR] [RUNS] [INNER]
set -euo pipefail
build=${1:-build} runs=${2:-7} inner=${3:-20000}
BASELINE_ARGS=--no-os-waits "$(dirname "$0")/call_overhead.sh" "$build" "$runs" "OS-runtime adapter overhead, $inner pairs a run" \
  "mutex pipe" "$build/bin/os_wait_bench" "$inner"
echo "  (target: at most 60 ns added per interposed call: the mutex pair has one, the pipe pair two)"
