#!/usr/bin/env bash
# Overhead of hybridprof on a CPU-bound 2-thread program with ~30-frame
# stacks, measured in one run: plain vs `hybridprof -F 1000` vs `-F 10000`
# vs `hybridprof -F 1000 --fixed-period` (what randomized periods cost)
# vs `hybridprof -F 1000 --paused` with no window ever opened (what the
# runtime costs outside capture windows)
# vs `perf record -F 1000 -g`, interleaved (ABCD ABCD ...) so machine noise
# hits every variant alike; medians and their ratios are printed. Two more
# rows split the 1 kHz cost: the program alone under the preloaded runtime
# (no launcher, no archive writing at the end), and the floor: the same
# work with a bare 1 kHz perf signal to an empty handler.
# Then archive bytes per sample, and the profiled program's peak RSS for a
# run and a 10x longer run (the runtime's memory must stay flat).
#
#   benchmarks/overhead.sh [BUILD_DIR] [RUNS] [ROUNDS]
set -euo pipefail
build=${1:-build}
runs=${2:-5}
rounds=${3:-90000}
bin=$build/bin
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
have_perf=0
perf record -q -F 1000 -g -o "$work/probe.data" -- true >/dev/null 2>&1 && have_perf=1

now() { date +%s%N; }
# run NAME CMD...: wall time in ns appended to $work/NAME
run() {
  local name=$1; shift
  local t0 t1
  t0=$(now); "$@" >/dev/null 2>"$work/last.err"; t1=$(now)
  echo $((t1 - t0)) >>"$work/$name"
}
median() { sort -n "$1" | awk '{a[NR]=$1} END {print (NR%2) ? a[(NR+1)/2] : int((a[NR/2]+a[NR/2+1])/2)}'; }
ratio() { awk -v a="$1" -v b="$2" 'BEGIN {printf "%.3f", a / b}'; }

"$bin/overhead_workload" "$rounds" >/dev/null  # warm the page cache
for i in $(seq "$runs"); do
  run plain "$bin/overhead_workload" "$rounds"
  run hp1k "$bin/hybridprof" -F 1000 -o "$work/hp1k.$i" -- "$bin/overhead_workload" "$rounds"
  run hp10k "$bin/hybridprof" -F 10000 -o "$work/hp10k.$i" -- "$bin/overhead_workload" "$rounds"
  run hp1k_fixed "$bin/hybridprof" -F 1000 --fixed-period -o "$work/hp1kf.$i" -- "$bin/overhead_workload" "$rounds"
  run hp1k_paused "$bin/hybridprof" -F 1000 --paused -o "$work/hp1kp.$i" -- "$bin/overhead_workload" "$rounds"
  run preload env HYBRIDPROF_QUIET=1 HYBRIDPROF_OUTPUT_DIR="$work/pre.$i" LD_PRELOAD="$build/lib/libhybridprof.so" \
    "$bin/overhead_workload" "$rounds"
  run floor_plain "$bin/signal_floor" none "$rounds"
  run floor_arm "$bin/signal_floor" arm "$rounds"
  if [ $have_perf = 1 ]; then
    run perf perf record -q -F 1000 -g -o "$work/perf.$i.data" -- "$bin/overhead_workload" "$rounds"
  fi
done

plain=$(median "$work/plain"); hp1k=$(median "$work/hp1k"); hp10k=$(median "$work/hp10k")
echo "overhead on $(nproc) cores, $runs interleaved runs, median wall time"
printf "  plain                      %8.3f s\n" "$(ratio "$plain" 1e9)"
printf "  hybridprof -F 1000         %8.3f s  ratio %s (target <= 1.02)\n" "$(ratio "$hp1k" 1e9)" "$(ratio "$hp1k" "$plain")"
printf "  hybridprof -F 10000        %8.3f s  ratio %s\n" "$(ratio "$hp10k" 1e9)" "$(ratio "$hp10k" "$plain")"
paused=$(median "$work/hp1k_paused")
printf "  hybridprof -F 1000 --paused %8.3f s  ratio %s (outside any window; target <= 1.005)\n" \
  "$(ratio "$paused" 1e9)" "$(ratio "$paused" "$plain")"
fixed=$(median "$work/hp1k_fixed")
printf "  hybridprof -F 1000 --fixed-period %8.3f s  ratio %s; randomized / fixed %s (target <= 1.005)\n" \
  "$(ratio "$fixed" 1e9)" "$(ratio "$fixed" "$plain")" "$(ratio "$hp1k" "$fixed")"
pre=$(median "$work/preload")
printf "  program alone, preloaded   %8.3f s  ratio %s (1 kHz, without the launcher and the final archive writing)\n" \
  "$(ratio "$pre" 1e9)" "$(ratio "$pre" "$plain")"
printf "  floor: bare 1 kHz signal   ratio %s (kernel/hypervisor cost per sample, empty handler)\n" \
  "$(ratio "$(median "$work/floor_arm")" "$(median "$work/floor_plain")")"
if [ $have_perf = 1 ]; then
  perf_t=$(median "$work/perf")
  printf "  perf record -F 1000 -g     %8.3f s  ratio %s\n" "$(ratio "$perf_t" 1e9)" "$(ratio "$perf_t" "$plain")"
  printf "  hybridprof/perf at 1 kHz   ratio %s\n" "$(ratio "$hp1k" "$perf_t")"
else
  echo "  perf record: not available here (install linux-perf)"
fi

# Archive size per sample (the OTF2 archive, and the raw stream kept beside it).
"$bin/hybridprof" -F 1000 -o "$work/size" -- "$bin/overhead_workload" "$rounds" 2>"$work/size.err" >/dev/null
samples=$(awk '/samples/ {print $2; exit}' "$work/size.err")
archive=$(du -sb "$work/size/traces.otf2" "$work/size/traces.def" "$work/size/traces" | awk '{s+=$1} END {print s}')
rawb=$(du -sb "$work/size/raw" | awk '{print $1}')
echo "archive: $samples samples, $archive bytes OTF2 = $(ratio "$archive" "$samples") bytes/sample (target <= 24);" \
     "raw stream $(ratio "$rawb" "$samples") bytes/sample"

# Peak RSS of the profiled program, one run and a 10x longer run.
if [ -x /usr/bin/time ]; then
  short=$((rounds / 4)); long=$((short * 10))
  rss() { "$bin/hybridprof" -F 1000 -o "$work/rss.$1" -- /usr/bin/time -f %M "$bin/overhead_workload" "$1" 2>&1 >/dev/null | grep -E '^[0-9]+$' | tail -1; }
  plain_rss=$(/usr/bin/time -f %M "$bin/overhead_workload" "$short" 2>&1 >/dev/null | tail -1)
  r1=$(rss "$short"); r10=$(rss "$long")
  echo "peak RSS: plain $plain_rss KiB; profiled $r1 KiB ($short rounds), $r10 KiB (10x longer): growth $(ratio "$r10" "$r1")x (target flat)"
else
  echo "peak RSS: /usr/bin/time not installed"
fi
