#!/usr/bin/env bash
# What tracing adds to each call of a benchmark that times its own calls
# and prints "CALL_ns=<median> ..." (nvtx_bench, cuda_bench; start-up and
# archive writing are outside its timing). Variants, interleaved (ABC ABC
# ...) so machine noise hits all alike:
#   plain     the program alone;
#   traced    under `hybridprof -F 1`: every call traced, sampling nearly
#             none: the adapter's cost;
#   profiled  under `hybridprof -F 1000`, as used;
#   without   (when BASELINE_ARGS is set) under `hybridprof -F 1
#             $BASELINE_ARGS`: the profiler with the adapter switched off,
#             so that `traced` less `without` is the adapter's own cost.
# Per call: the median over runs of each run's median, and what tracing
# adds. Events must not be lost for the figures to mean anything: the
# script says how many were (must be 0).
#
#   benchmarks/call_overhead.sh BUILD_DIR RUNS "TITLE" "CALL..." BENCH [ARGS...]
set -euo pipefail
build=$1 runs=$2 title=$3
read -r -a calls <<<"$4"
shift 4
bin=$build/bin
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

# run NAME CMD...: appends the program's figures (ns) to $work/NAME.<call>
run() {
  local name=$1; shift
  local line c
  line=$("$@" 2>"$work/last.err" | grep "^${calls[0]}_ns=") || { cat "$work/last.err" >&2; exit 1; }
  for c in "${calls[@]}"; do
    echo "$line" | tr ' ' '\n' | sed -n "s/^${c}_ns=//p" >>"$work/$name.$c"
  done
}
median() { sort -g "$1" | awk '{a[NR]=$1} END {print (NR%2) ? a[(NR+1)/2] : (a[NR/2]+a[NR/2+1])/2}'; }

for i in $(seq "$runs"); do
  run plain "$@"
  for v in traced:1 profiled:1000 ${BASELINE_ARGS:+without:1}; do
    extra=()
    [ "${v%%:*}" = without ] && read -r -a extra <<<"$BASELINE_ARGS"
    run "${v%%:*}" "$bin/hybridprof" -F "${v#*:}" "${extra[@]}" -o "$work/run.$i" -- "$@"
    "$bin/hybridprof-report" "$work/run.$i" >"$work/report" 2>/dev/null || true
    awk '/traced events lost/ {n += $3} END {print n + 0}' "$work/report" >>"$work/lost"
    rm -rf "$work/run.$i"
  done
done

echo "$title ($(nproc) cores), $runs interleaved runs"
echo "(medians over runs of each run's median time per call)"
for c in "${calls[@]}"; do
  awk -v c="$c" -v p="$(median "$work/plain.$c")" -v t="$(median "$work/traced.$c")" \
      -v q="$(median "$work/profiled.$c")" 'BEGIN {
    printf "  %-20s plain %7.1f ns  traced %7.1f ns (%+7.1f ns)  profiled %7.1f ns (%+7.1f ns)\n", c, p, t, t - p, q, q - p
  }'
  [ -n "${BASELINE_ARGS:-}" ] && awk -v c="$c" -v w="$(median "$work/without.$c")" -v t="$(median "$work/traced.$c")" 'BEGIN {
    printf "  %-20s adapter off (%s) %7.1f ns: the adapter adds %+7.1f ns\n", c, ENVIRON["BASELINE_ARGS"], w, t - w
  }'
done
echo "  traced events lost over all runs: $(awk '{n += $1} END {print n + 0}' "$work/lost") (must be 0)"
