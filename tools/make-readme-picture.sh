#!/usr/bin/env bash
# Regenerates the README's picture, docs/images/flamegraph.svg: the bundled
# example job (split_workload: two threads whose three leaf functions share
# the CPU 50/30/20 under a 24-deep call chain) profiled by this build, and
# drawn by hybridprof-report's own flame graph writer.
#
#   tools/make-readme-picture.sh [BUILD_DIR]
set -euo pipefail
cd "$(dirname "$0")/.."
build=${1:-build}
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
"$build/bin/hybridprof" -F 1000 -o "$work/run" -- "$build/tests/fixtures/split_workload" 2 1 >/dev/null 2>&1
"$build/bin/hybridprof-report" --flamegraph docs/images/flamegraph.svg "$work/run" >/dev/null
echo "docs/images/flamegraph.svg ($(wc -c <docs/images/flamegraph.svg) bytes)"
