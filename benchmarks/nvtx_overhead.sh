#!/usr/bin/env bash
# Cost of NVTX tracing per range (benchmarks/call_overhead.sh over
# nvtx_bench: NVTX 3 push/pop pairs, a domain's pushes of a registered
# string, marks; plain, NVTX has no injection and each call returns at
# once). Target: at most 200 ns added per push/pop pair.
#
#   benchmarks/nvtx_overhead.sh [BUILD_DIR] [RUNS] [INNER]
set -euo pipefail
build=${1:-build} runs=${2:-7} inner=${3:-20000}
[ -x "$build/bin/nvtx_bench" ] || { echo "nvtx_overhead.sh: no nvtx_bench in $build/bin (needs NVTX 3's headers)" >&2; exit 2; }
"$(dirname "$0")/call_overhead.sh" "$build" "$runs" "NVTX overhead, $inner calls a run" \
  "push_pop registered_push_pop mark" "$build/bin/nvtx_bench" "$inner"
echo "  (target: at most 200 ns added per push/pop pair)"
