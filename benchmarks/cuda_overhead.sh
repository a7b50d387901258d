#!/usr/bin/env bash
# Cost of CUDA tracing per GPU operation, ON A MACHINE WITH AN NVIDIA GPU
# AND ITS DRIVER (benchmarks/call_overhead.sh over cuda_bench: queued
# cudaMemsetAsync operations, each an API call traced through CUPTI's
# callbacks and a memset CUPTI records as activity, as it records a
# kernel; and cudaMemsetAsync + cudaStreamSynchronize round trips). Without
# a GPU, cuda_bench says so and the script stops.
#
#   benchmarks/cuda_overhead.sh [BUILD_DIR] [RUNS] [INNER]
set -euo pipefail
build=${1:-build} runs=${2:-7} inner=${3:-20000}
[ -x "$build/bin/cuda_bench" ] || { echo "cuda_overhead.sh: no cuda_bench in $build/bin (needs the CUDA toolkit)" >&2; exit 2; }
"$build/bin/cuda_bench" 1 1 >/dev/null || { echo "cuda_overhead.sh: cuda_bench cannot use a GPU here" >&2; exit 2; }
"$(dirname "$0")/call_overhead.sh" "$build" "$runs" "CUDA overhead, $inner operations a run" \
  "async_op round_trip" "$build/bin/cuda_bench" "$inner"
