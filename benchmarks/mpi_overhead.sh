#!/usr/bin/env bash
# Cost of MPI tracing per call, measured in one run: an OSU-style ping-pong
# (8-byte messages) and a barrier loop on shared memory, 2 ranks,
# `mpirun ... mpi_pingpong` plain vs `mpirun ... hybridprof -F 1000 --
# mpi_pingpong`, interleaved (ABC ABC ...) so machine noise hits all alike.
# The program times itself (start-up and archive writing are outside the
# timed loops), each iteration on its own and each loop as a whole, and
# gives two figures per loop:
#   - the median iteration: what a typical call costs;
#   - the mean iteration (OSU's figure): also the rare slow ones, where the
#     profiler's sample interrupted a rank or its drain thread took the
#     rank's core. In a ping-pong or a barrier every rank waits for the
#     others, so any rank's stall stalls the pair.
# Per call: one MPI_Send and one MPI_Recv (on two ranks) lie on the path
# of a one-way message, so the added time per call is half of it; every
# rank makes one MPI_Barrier call per barrier.
# A third variant, "floor", is the plain program with a bare 1 kHz perf
# sampling signal into an empty handler in each rank (signal_floor.h): what
# the kernel (and hypervisor) charge for sampling at 1 kHz before any
# profiler runs; it shows how much of the mean is that.
# Target: at most 100 ns per MPI call at the median, sampling at 1 kHz.
#
# Every event must be recorded for the figures to mean anything: the loops
# make millions of MPI calls a second, which the drain thread must store
# while both cores are busy-polling ranks. The profiler runs with its
# defaults (HYBRIDPROF_RING_KB, when set, is passed on for every thread),
# and the script says how many events were lost (it must be 0).
# A fourth variant, "flushing", forces the full-ring path: 16 KiB rings and
# no timed drain passes (HYBRIDPROF_FLUSH_MS=60000), so a rank's ring fills
# faster than the early passes it asks for empty it, and the rank writes
# it out itself (Drain::write_or_flush). Its added cost per call, and how
# often and how long the ranks waited for that, show what a flush costs.
#
# A fifth variant, "deferred", leaves the drain's work until the timed loops
# are over: 256 MiB rings and no timed passes, so no pass (nor a rank's
# early wake, at a quarter full) runs during them. Its mean against the
# default profiled run's is what the drain's passes cost the ranks while
# they run (on 2 busy cores a pass takes a rank's core); what it keeps is
# the traced calls' own cost, and the first touches of its large rings.
#
#   benchmarks/mpi_overhead.sh [BUILD_DIR] [RUNS] [ITERS]
set -euo pipefail
build=${1:-build}
runs=${2:-9}
iters=${3:-50000}
bin=$build/bin
pingpong=$build/tests/fixtures/mpi_pingpong
floor_lib=$build/lib/libsignal_floor_preload.so
[ -x "$pingpong" ] || { echo "mpi_overhead.sh: $pingpong not built (needs Open MPI)" >&2; exit 2; }
[ -f "$floor_lib" ] || { echo "mpi_overhead.sh: $floor_lib not built" >&2; exit 2; }
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1  # harmless when not root
ring_args=()
[ -n "${HYBRIDPROF_RING_KB:-}" ] && ring_args=(-x HYBRIDPROF_RING_KB="$HYBRIDPROF_RING_KB")

figures=(pingpong_median pingpong_latency barrier_median barrier)
# run NAME CMD...: appends the program's figures (microseconds) to $work/NAME.<figure>
run() {
  local name=$1; shift
  local line f
  line=$("$@" 2>"$work/last.err" | grep '^pingpong_latency_us=') || { cat "$work/last.err" >&2; exit 1; }
  for f in "${figures[@]}"; do
    echo "$line" | tr ' ' '\n' | sed -n "s/^${f}_us=//p" >>"$work/$name.$f"
  done
}
median() { sort -g "$1" | awk '{a[NR]=$1} END {print (NR%2) ? a[(NR+1)/2] : (a[NR/2]+a[NR/2+1])/2}'; }

for i in $(seq "$runs"); do
  run plain mpirun -np 2 "$pingpong" 8 "$iters"
  run floor mpirun -np 2 -x LD_PRELOAD="$floor_lib" "$pingpong" 8 "$iters"
  run profiled mpirun -np 2 "${ring_args[@]}" "$bin/hybridprof" -F 1000 -o "$work/job.$i" -- \
    "$pingpong" 8 "$iters"
  run flushing mpirun -np 2 -x HYBRIDPROF_RING_KB=16 -x HYBRIDPROF_FLUSH_MS=60000 "$bin/hybridprof" -F 1000 \
    -o "$work/flush.$i" -- "$pingpong" 8 "$iters"
  run deferred mpirun -np 2 -x HYBRIDPROF_RING_KB=262144 -x HYBRIDPROF_FLUSH_MS=60000 "$bin/hybridprof" -F 1000 \
    -o "$work/deferred.$i" -- "$pingpong" 8 "$iters"
  for job in job flush deferred; do
    "$bin/hybridprof-report" "$work/$job.$i" >"$work/report" 2>/dev/null || true
    awk '/traced events lost/ {n += $3} END {print n + 0}' "$work/report" >>"$work/lost"
    rm -rf "$work/$job.$i"
    # "thread T: its ring was full N times; it waited X ms while ..."
    [ "$job" = flush ] && awk '/its ring was full/ {n += $7; ms += $11} END {print n + 0, ms + 0}' "$work/report" >>"$work/flushes"
  done
done

# row LABEL FIGURE CALLS_PER_ITERATION: medians over the runs of one figure.
row() {
  awk -v label="$1" -v per="$3" -v p="$(median "$work/plain.$2")" -v f="$(median "$work/floor.$2")" \
      -v q="$(median "$work/profiled.$2")" 'BEGIN {
    printf "  %-28s plain %7.3f us  profiled %7.3f us  added %4.0f ns per call  (bare 1 kHz sampling: %4.0f ns)\n",
           label, p, q, (q - p) * 1000 / per, (f - p) * 1000 / per
  }'
}
echo "MPI overhead, 2 ranks on shared memory, $runs interleaved runs of $iters iterations (medians over runs)"
echo " per iteration, median (the target's figure):"
row "ping-pong one-way latency" pingpong_median 2
row "barrier" barrier_median 1
echo " per iteration, mean (OSU's figure; includes the rare stalls):"
row "ping-pong one-way latency" pingpong_latency 2
row "barrier" barrier 1
echo "  events lost to full rings over all runs: $(awk '{n += $1} END {print n + 0}' "$work/lost") (must be 0)"
echo " forced full-ring flushes (16 KiB rings, no timed passes), median iteration:"
awk -v p="$(median "$work/profiled.pingpong_median")" -v q="$(median "$work/flushing.pingpong_median")" \
    -v bp="$(median "$work/profiled.barrier_median")" -v bq="$(median "$work/flushing.barrier_median")" 'BEGIN {
  printf "  ping-pong %+5.0f ns per call, barrier %+5.0f ns per call, over the default profiled run\n",
         (q - p) * 1000 / 2, (bq - bp) * 1000
}'
awk '{n += $1; ms += $2} END {
  printf "  %.0f flushes a run, %.2f ms waited a run (%.1f us a flush)\n", n / NR, ms / NR, n ? ms * 1000 / n : 0
}' "$work/flushes"
echo " the drain's passes left until after the loops (256 MiB rings, no timed passes), mean iteration:"
awk -v p="$(median "$work/profiled.pingpong_latency")" -v q="$(median "$work/deferred.pingpong_latency")" \
    -v bp="$(median "$work/profiled.barrier")" -v bq="$(median "$work/deferred.barrier")" 'BEGIN {
  printf "  ping-pong %+5.0f ns per call, barrier %+5.0f ns per call, over the default profiled run\n",
         (q - p) * 1000 / 2, (bq - bp) * 1000
}'
echo "  (target: at most 100 ns per MPI call at the median, sampling at 1 kHz)"
