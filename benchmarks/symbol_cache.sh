#!/usr/bin/env bash
# The symbol cache across runs: how long naming the frames takes a run
# with an empty cache and the runs of the same program after it (the
# launcher's "symbol cache: ... naming took N ms" line). Each round starts
# from a fresh cache ($XDG_CACHE_HOME in a temporary directory) and runs
# the command RUNS times; medians over the rounds. Target (issue 39): the
# second run at most 0.20x the cold one.
#
#   benchmarks/symbol_cache.sh [--build DIR] [--rounds N] [--runs N] [-- COMMAND ...]
#
# The default command is a short PyTorch job (python3 importing torch and
# multiplying matrices); it needs torch importable by /usr/bin/python3.
set -euo pipefail

build=build rounds=3 runs=3
while [ $# -gt 0 ]; do
  case $1 in
    --build) build=$2; shift 2 ;;
    --rounds) rounds=$2; shift 2 ;;
    --runs) runs=$2; shift 2 ;;
    --) shift; break ;;
    *) echo "usage: $0 [--build DIR] [--rounds N] [--runs N] [-- COMMAND ...]" >&2; exit 2 ;;
  esac
done
[ "$runs" -ge 2 ] && [ "$rounds" -ge 1 ] || { echo "symbol_cache.sh: --runs must be at least 2, --rounds at least 1" >&2; exit 2; }
launcher=$build/bin/hybridprof
[ -x "$launcher" ] || { echo "symbol_cache.sh: no $launcher (build first)" >&2; exit 2; }
if [ $# -eq 0 ]; then
  /usr/bin/python3 -c 'import torch' 2>/dev/null || { echo "symbol_cache.sh: /usr/bin/python3 cannot import torch; give a command after --" >&2; exit 2; }
  set -- /usr/bin/python3 -c 'import torch
x = torch.randn(256, 256)
for _ in range(200):
    x = torch.tanh(x @ x.T / 256)
print(float(x.sum()))'
fi

work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
declare -A ms  # ms[run,round]
for round in $(seq 1 "$rounds"); do
  rm -rf "$work/cache"
  for run in $(seq 1 "$runs"); do
    rm -rf "$work/out"
    line=$(XDG_CACHE_HOME=$work/cache "$launcher" -o "$work/out" -- "$@" 2>&1 >/dev/null | grep 'naming took' || true)
    value=$(sed -n 's/.*naming took \([0-9]*\) ms.*/\1/p' <<<"$line")
    [ -n "$value" ] || { echo "symbol_cache.sh: run $run of round $round printed no naming time" >&2; exit 1; }
    ms[$run,$round]=$value
  done
done

median() { sort -n | awk '{v[NR] = $1} END {print (NR % 2) ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2}'; }
echo "Symbol cache: naming time per run from a fresh cache, $rounds round(s) (medians)"
cold=$(for r in $(seq 1 "$rounds"); do echo "${ms[1,$r]}"; done | median)
printf '  run 1 (cold)   %6s ms\n' "$cold"
for run in $(seq 2 "$runs"); do
  value=$(for r in $(seq 1 "$rounds"); do echo "${ms[$run,$r]}"; done | median)
  ratio=$(awk -v a="$value" -v b="$cold" 'BEGIN {printf "%.2f", (b > 0) ? a / b : 0}')
  target=""
  [ "$run" -eq 2 ] && target="  (target <= 0.20x)"
  printf '  run %d          %6s ms  %sx cold%s\n' "$run" "$value" "$ratio" "$target"
done
