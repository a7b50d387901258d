#!/usr/bin/env bash
# Cost of OpenMP tracing per construct, measured in one run: the EPCC-style
# openmp_syncbench (empty parallel regions, barriers, critical sections;
# the program times each construct itself, start-up and archive writing
# are outside) on OMP_NUM_THREADS threads (default 2), for each runtime it
# was built against: GCC's libgomp (GOMP_ entry points intercepted) and
# LLVM's libomp (OMPT callbacks). Variants, interleaved (ABC ABC ...) so
# machine noise hits all alike:
#   plain     the program alone;
#   traced    under `hybridprof -F 1`: OpenMP tracing at its full cost,
#             sampling nearly none (one sample a second): the adapter's cost;
#   profiled  under `hybridprof -F 1000`: tracing and sampling, as used.
# Per construct: the median over runs of each run's median time per
# construct, and what tracing adds to it. Events must not be lost for the
# figures to mean anything: the script says how many were (must be 0).
# Target: at most 1 us added per parallel region on 2 threads, for both
# runtimes.
#
#   benchmarks/openmp_overhead.sh [BUILD_DIR] [RUNS] [INNER]
set -euo pipefail
build=${1:-build}
runs=${2:-7}
inner=${3:-2000}
bin=$build/bin
export OMP_NUM_THREADS=${OMP_NUM_THREADS:-2}
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

benches=()
[ -x "$bin/openmp_syncbench" ] && benches+=(openmp_syncbench)
[ -x "$bin/openmp_syncbench_clang" ] && benches+=(openmp_syncbench_clang)
[ ${#benches[@]} -gt 0 ] || { echo "openmp_overhead.sh: no openmp_syncbench in $bin (needs -fopenmp)" >&2; exit 2; }

constructs=(parallel barrier critical)
# run NAME CMD...: appends the program's figures (ns) to $work/NAME.<construct>
run() {
  local name=$1; shift
  local line c
  line=$("$@" 2>"$work/last.err" | grep '^threads=') || { cat "$work/last.err" >&2; exit 1; }
  for c in "${constructs[@]}"; do
    echo "$line" | tr ' ' '\n' | sed -n "s/^${c}_ns=//p" >>"$work/$name.$c"
  done
}
median() { sort -g "$1" | awk '{a[NR]=$1} END {print (NR%2) ? a[(NR+1)/2] : (a[NR/2]+a[NR/2+1])/2}'; }

for i in $(seq "$runs"); do
  for b in "${benches[@]}"; do
    run "$b.plain" "$bin/$b" "$inner"
    for v in traced:1 profiled:1000; do
      run "$b.${v%%:*}" "$bin/hybridprof" -F "${v#*:}" -o "$work/$b.$i" -- "$bin/$b" "$inner"
      "$bin/hybridprof-report" "$work/$b.$i" >"$work/report" 2>/dev/null || true
      awk '/traced events lost/ {n += $3} END {print n + 0}' "$work/report" >>"$work/lost"
      rm -rf "$work/$b.$i"
    done
  done
done

echo "OpenMP overhead on $OMP_NUM_THREADS threads ($(nproc) cores), $runs interleaved runs of $inner constructs"
echo "(medians over runs of each run's median time per construct)"
for b in "${benches[@]}"; do
  case $b in *_clang) echo " LLVM libomp (OMPT):" ;; *) echo " GCC libgomp (GOMP_ interception):" ;; esac
  for c in "${constructs[@]}"; do
    awk -v c="$c" -v p="$(median "$work/$b.plain.$c")" -v t="$(median "$work/$b.traced.$c")" \
        -v q="$(median "$work/$b.profiled.$c")" 'BEGIN {
      printf "  %-9s plain %8.0f ns  traced %8.0f ns (%+6.0f ns)  profiled %8.0f ns (%+6.0f ns)\n", c, p, t, t - p, q, q - p
    }'
  done
done
echo "  traced events lost over all runs: $(awk '{n += $1} END {print n + 0}' "$work/lost") (must be 0)"
echo "  (target: at most 1 us added per parallel region on 2 threads, both runtimes)"
