#!/usr/bin/env bash
# convert_bench.sh [--build DIR] [--samples N] [--events N]: the speed and
# memory of hybridprof-convert --to chrome on synthetic archives (big_archive:
# 16 threads, 200 stacks 10-51 deep sharing their trunks) of N and N/5 samples: records read a second
# and peak memory (/usr/bin/time), which should not grow with the archive.
# Targets: at least 2 million records a second; memory flat in archive size.
set -euo pipefail
build=build samples=5000000 events=1000000
while [ $# -gt 0 ]; do
  case $1 in
    --build) build=$2; shift 2 ;;
    --samples) samples=$2; shift 2 ;;
    --events) events=$2; shift 2 ;;
    *) echo "usage: $0 [--build DIR] [--samples N] [--events N]" >&2; exit 2 ;;
  esac
done
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
for scale in 5 1; do
  s=$((samples / scale)) e=$((events / scale))
  "$build/bin/big_archive" "$work/a$scale" "$s" "$e" >/dev/null
  /usr/bin/time -f "%e %M" -o "$work/time" "$build/bin/hybridprof-convert" --to chrome "$work/a$scale" \
    -o "$work/out.json.gz" 2>/dev/null
  read -r seconds kib <"$work/time"
  records=$((s + 2 * e))
  awk -v s="$s" -v e="$e" -v t="$seconds" -v k="$kib" -v r="$records" -v b="$(stat -c %s "$work/out.json.gz")" \
    'BEGIN { printf "  %9d samples %8d calls: %6.1f s, %5.2f M records/s (target >= 2), peak %6.1f MiB, %.0f MiB gzip\n", s, e, t, r / t / 1e6, k / 1024, b / 1048576 }'
  rm -rf "$work/a$scale" "$work/out.json.gz"
done
