#!/usr/bin/env bash
# periodic_shares.sh [--build DIR] [--runs N] [--hz HZ] [--round MS] [--cpu S]:
# periodicity bias on tests/fixtures/periodic_rounds (2 threads, rounds of
# exactly ROUND ms spent 5/3/2 in leaf_five / leaf_three / leaf_two, S
# seconds of CPU each). Interleaved runs of hybridprof with randomized
# periods (the default), with --fixed-period, and `perf record -g` (when
# it runs here), each at HZ on cpu-clock; each row prints the program's own
# CPU-time shares of its leaves, the profiler's, and the largest difference
# in points. Best on an idle machine: preemption breaks the lock-step that
# makes fixed periods wrong.
set -euo pipefail
build=build runs=3 hz=1000 round=2 cpu=2
while [ $# -gt 0 ]; do
  case $1 in
    --build) build=$2; shift 2 ;;
    --runs) runs=$2; shift 2 ;;
    --hz) hz=$2; shift 2 ;;
    --round) round=$2; shift 2 ;;
    --cpu) cpu=$2; shift 2 ;;
    *) echo "usage: $0 [--build DIR] [--runs N] [--hz HZ] [--round MS] [--cpu S]" >&2; exit 2 ;;
  esac
done
program=$build/tests/fixtures/periodic_rounds
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
have_perf=0
perf record -q -e cpu-clock -F "$hz" -g -o "$work/probe.data" -- true >/dev/null 2>&1 && have_perf=1

# The program's own shares from its "thread TID cpu S five S three S two S" lines.
own_shares() { awk '{f+=$6; t+=$8; w+=$10} END {printf "%.1f %.1f %.1f", 100*f/(f+t+w), 100*t/(f+t+w), 100*w/(f+t+w)}'; }
# Shares of samples whose stack holds each leaf, from folded stacks on stdin.
folded_shares() {
  awk '{n=$NF; if ($0 ~ /leaf_five/) f+=n; else if ($0 ~ /leaf_three/) t+=n; else if ($0 ~ /leaf_two/) w+=n}
       END {printf "%.1f %.1f %.1f", 100*f/(f+t+w), 100*t/(f+t+w), 100*w/(f+t+w)}'
}
row() {  # row NAME RUN "own shares" "sampled shares"
  echo "$3 $4" | awk -v name="$1" -v run="$2" '{
    d = 0; for (i = 1; i <= 3; ++i) { x = $(i + 3) - $i; if (x < 0) x = -x; if (x > d) d = x }
    printf "  %-26s run %d  program %4.1f/%4.1f/%4.1f  sampled %4.1f/%4.1f/%4.1f  worst %4.1f points\n",
           name, run, $1, $2, $3, $4, $5, $6, d }'
}

echo "periodic_rounds: 2 threads, ${round} ms rounds, ${cpu} s of CPU each, sampled at ${hz} Hz (cpu-clock)"
for i in $(seq "$runs"); do
  for mode in randomized fixed; do
    extra=()
    [ "$mode" = fixed ] && extra=(--fixed-period)
    rm -rf "$work/hp"
    own=$("$build/bin/hybridprof" -e cpu-clock -F "$hz" "${extra[@]}" -o "$work/hp" -- "$program" 2 "$cpu" "$round" 2>/dev/null | own_shares)
    row "hybridprof ($mode)" "$i" "$own" "$("$build/bin/hybridprof-report" --folded "$work/hp" 2>/dev/null | folded_shares)"
  done
  if [ $have_perf = 1 ]; then
    own=$(perf record -q -e cpu-clock -F "$hz" -g -o "$work/perf.data" -- "$program" 2 "$cpu" "$round" 2>/dev/null | own_shares)
    sampled=$(perf script -i "$work/perf.data" -F ip,sym 2>/dev/null |
              awk 'BEGIN {RS=""} {n = 1; s = $0; gsub(/\n/, ";", s); print s, n}' | folded_shares)
    row "perf record -g" "$i" "$own" "$sampled"
  fi
done
