#!/usr/bin/env bash
# Does profiling work on this GPU node? Runs a small PyTorch training job
# (benchmarks/gpu/train_step.py) plain, under torch.profiler and under the
# bundle's hybridprof, and prints one line per fact (PASS/FAIL and the
# figure): GPU locations, kernels against Kineto's count and time, copies
# both ways, synchronizations, each kernel's launching call and its Python
# context, NVTX ranges, dropped records, clock order, the wall-clock
# overhead, CUPTI's cost per operation, Python frames. See check.py.
#
#   benchmarks/gpu/check.sh BUNDLE_DIR [--work DIR] [--pairs N] [--steps N] [--run-timeout S]
#
# BUNDLE_DIR is what tools/make-bundle.sh made. Exits 0 when every fact
# passes, 1 when one fails, 2 on bad arguments, and 77 ("no GPU/driver:
# skipped") on a machine without an NVIDIA GPU and its driver, so it is
# safe to run anywhere. PYTHON names the interpreter with PyTorch
# (default: python3). --device cpu runs the plumbing on the CPU alone.
set -uo pipefail
here=$(cd "$(dirname "$0")" && pwd)
bundle=${1:-}
if [ -z "$bundle" ] || [ "${bundle#-}" != "$bundle" ]; then
  echo "usage: $0 BUNDLE_DIR [--work DIR] [--pairs N] [--steps N] [--run-timeout S]" >&2
  exit 2
fi
if [ ! -x "$bundle/bin/hybridprof" ]; then
  echo "check.sh: $bundle/bin/hybridprof is missing: make the bundle with tools/make-bundle.sh" >&2
  exit 2
fi
shift
python=${PYTHON:-python3}

cpu_dry_run=0 previous=
for a in "$@"; do
  [ "$previous" = --device ] && [ "$a" = cpu ] && cpu_dry_run=1
  [ "$a" = --device=cpu ] && cpu_dry_run=1
  previous=$a
done
# A GPU and its driver: the driver's device list, or nvidia-smi's.
gpu_present() {
  compgen -G "/proc/driver/nvidia/gpus/*" >/dev/null && return 0
  command -v nvidia-smi >/dev/null && nvidia-smi -L 2>/dev/null | grep -q '^GPU '
}
if [ "$cpu_dry_run" = 0 ] && ! gpu_present; then
  echo "no GPU/driver: skipped"
  exit 77
fi
if ! "$python" -c 'import torch' 2>/dev/null; then
  echo "check.sh: $python cannot import torch (PYTHON names the interpreter that has PyTorch)" >&2
  exit 1
fi
exec "$python" "$here/check.py" "$bundle" "$@"
