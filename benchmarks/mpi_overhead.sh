#!/usr/bin/env bash
# Cost of MPI tracing per call, measured in one run: an OSU-style ping-pong
# (8-byte messages) and a barrier loop on shared memory, 2 ranks,
# `mpirun ... mpi_pingpong` plain vs `mpirun ... hybridprof -F 1000 --
# mpi_pingpong`, interleaved (ABAB...) so machine noise hits both alike.
# The program times itself with MPI_Wtime (start-up and archive writing
# are outside the timed loops). Prints the medians and the added time:
#   - per one-way message: one MPI_Send and one MPI_Recv (on two ranks) lie
#     on its path, so the added time per call is half of it;
#   - per barrier: every rank makes one MPI_Barrier call at a time.
# Target: at most 100 ns per MPI call at the median, sampling at 1 kHz.
#
# Every event must be recorded for the figure to mean anything: at 8 bytes
# the loop makes millions of MPI calls a second, which the drain thread must
# store while both cores are busy-polling ranks. The profiler runs with its
# defaults (a rank's main thread has a 4 MiB ring; HYBRIDPROF_RING_KB, when
# set, is passed on for every thread), and the script says how many events
# were lost (it must be 0). A ring sized for the whole run would hide the
# drain's cost but add its own: every record would land in memory never
# touched before (~20 ns per 32 bytes on this VM).
#
#   benchmarks/mpi_overhead.sh [BUILD_DIR] [RUNS] [ITERS]
set -euo pipefail
build=${1:-build}
runs=${2:-9}
iters=${3:-50000}
bin=$build/bin
pingpong=$build/tests/fixtures/mpi_pingpong
[ -x "$pingpong" ] || { echo "mpi_overhead.sh: $pingpong not built (needs Open MPI)" >&2; exit 2; }
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1  # harmless when not root
ring_args=()
[ -n "${HYBRIDPROF_RING_KB:-}" ] && ring_args=(-x HYBRIDPROF_RING_KB="$HYBRIDPROF_RING_KB")

# run NAME CMD...: appends the program's two figures (microseconds) to $work/NAME.{pingpong,barrier}
run() {
  local name=$1; shift
  local line
  line=$("$@" 2>"$work/last.err" | grep '^pingpong_latency_us=') || { cat "$work/last.err" >&2; exit 1; }
  echo "$line" | sed 's/.*pingpong_latency_us=\([0-9.]*\).*/\1/' >>"$work/$name.pingpong"
  echo "$line" | sed 's/.*barrier_us=\([0-9.]*\).*/\1/' >>"$work/$name.barrier"
}
median() { sort -g "$1" | awk '{a[NR]=$1} END {print (NR%2) ? a[(NR+1)/2] : (a[NR/2]+a[NR/2+1])/2}'; }
minimum() { sort -g "$1" | head -1; }

for i in $(seq "$runs"); do
  run plain mpirun -np 2 "$pingpong" 8 "$iters"
  run profiled mpirun -np 2 "${ring_args[@]}" "$bin/hybridprof" -F 1000 -o "$work/job.$i" -- \
    "$pingpong" 8 "$iters"
  lost=$("$bin/hybridprof-report" "$work/job.$i" 2>/dev/null |
         awk '/traced events lost/ {n += $3} END {print n + 0}')
  echo "$lost" >>"$work/lost"
  rm -rf "$work/job.$i"
done

# report STAT: one block of figures, STAT = median or minimum over the runs.
report() {
  awk -v stat="$1" -v p1="$($1 "$work/plain.pingpong")" -v q1="$($1 "$work/profiled.pingpong")" \
      -v p2="$($1 "$work/plain.barrier")" -v q2="$($1 "$work/profiled.barrier")" 'BEGIN {
    printf "  %s\n", stat
    printf "    ping-pong one-way latency  plain %7.3f us  profiled %7.3f us  added %5.0f ns = %4.0f ns per call\n",
           p1, q1, (q1 - p1) * 1000, (q1 - p1) * 500
    printf "    barrier                    plain %7.3f us  profiled %7.3f us  added %5.0f ns per call\n",
           p2, q2, (q2 - p2) * 1000
  }'
}
echo "MPI overhead, 2 ranks on shared memory, $runs interleaved runs of $iters iterations"
report median
report minimum  # the least disturbed run of each: less sensitive to other load on the machine
echo "  events lost to full rings over all runs: $(awk '{n += $1} END {print n + 0}' "$work/lost") (must be 0)"
echo "  (target: at most 100 ns per MPI call at the median)"
