#!/usr/bin/env bash
# Real programs, plain and under `hybridprof` at its defaults (1 kHz),
# interleaved (plain, profiled, plain, profiled ...) so machine noise hits
# both alike; each program's own figure of merit, the median over runs,
# and the median and range of each run's profiled figure against the plain
# one just before it ("pairs": this VM changes speed for minutes at a
# time, and a pair shares its speed):
#
#   lulesh1   LULESH 2.0, 1 rank x 2 OpenMP threads, -s 30 -i 200: FOM (z/s)   target >= 0.93x plain
#   lulesh8   LULESH 2.0, 8 ranks x 1 thread, -s 12 -i 50: FOM (z/s)           target >= 0.85x plain
#   hpcg4     HPCG, 4 ranks, 16 16 16 --rt=5: GFLOP/s rating                    target >= 0.85x plain
#   osu_bw    OSU osu_bw, 2 ranks, 8-byte messages: MB/s                        target >= 0.5x plain
#   osu_lat   OSU osu_latency, 2 ranks, 8-byte messages, 100,000 of them: us   target <= plain + 0.08 us
#
# It fetches and builds nothing: point it at the programs where you built
# them (LULESH with MPI and OpenMP; HPCG's MPI build; OSU's pt2pt
# directory, or wherever osu_bw and osu_latency are; OSU 7.x, whose -m
# takes a size range). Programs not given are skipped.
#
#   benchmarks/real_codes.sh [--build DIR] [--runs N] [--lulesh BIN] [--hpcg BIN] [--osu DIR]
#
# The OSU programs run a third way too, "floor": preloaded with
# lib/mpi_clock_floor.so (benchmarks/mpi_clock_floor.c), which reads the
# clock around every point-to-point call and stores it, nothing more. What
# that costs (its ratio, printed beside the profiled one) is the least any
# tracer timing every message pays on this machine; what hybridprof adds
# beyond it is the profiler's own.
#
# lulesh1 runs without mpirun (Open MPI would bind its one rank, and both
# its threads, to one core); the others under mpirun with its default
# binding, as users run them. Ranks may outnumber cores (--oversubscribe,
# then only); as root, mpirun is allowed to run (--allow-run-as-root). Runs are long (LULESH 8 ranks and HPCG take
# tens of seconds each on 2 cores): RUNS 3 takes about 10 minutes.
set -euo pipefail
build=build runs=3 lulesh="" hpcg="" osu=""
while [ $# -gt 0 ]; do
  case "$1" in
    --build) build=$2; shift 2 ;;
    --runs) runs=$2; shift 2 ;;
    --lulesh) lulesh=$2; shift 2 ;;
    --hpcg) hpcg=$2; shift 2 ;;
    --osu) osu=$2; shift 2 ;;
    *) echo "usage: $0 [--build DIR] [--runs N] [--lulesh BIN] [--hpcg BIN] [--osu DIR]" >&2; exit 2 ;;
  esac
done
launcher=$(realpath "$build/bin/hybridprof")
[ -x "$launcher" ] || { echo "real_codes.sh: no hybridprof in $build/bin" >&2; exit 2; }
clock_floor=$(realpath "$build/lib/libmpi_clock_floor.so" 2>/dev/null || true)
for p in "$lulesh" "$hpcg" "${osu:+$osu/osu_bw}" "${osu:+$osu/osu_latency}"; do
  [ -z "$p" ] || [ -x "$p" ] || { echo "real_codes.sh: $p is not an executable" >&2; exit 2; }
done
[ -n "$lulesh$hpcg$osu" ] || { echo "real_codes.sh: name at least one of --lulesh, --hpcg, --osu" >&2; exit 2; }
mpirun=(mpirun --allow-run-as-root)
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

# figure NAME TEXT: the program's figure of merit from its output.
figure() {
  case "$1" in
    lulesh*) sed -n 's/^FOM *= *\([0-9.]*\).*/\1/p' <<<"$2" | tail -1 ;;
    hpcg*) sed -n 's/.*GFLOP\/s rating of=\([0-9.]*\).*/\1/p' "$work"/run/HPCG-Benchmark*.txt 2>/dev/null | tail -1 ;;
    osu_*) awk '$1 == "8" {print $2}' <<<"$2" | tail -1 ;;
  esac
}

# run NAME VARIANT RANKS THREADS PROGRAM ARGS...: one run (RANKS 0: no
# mpirun); its figure goes to $work/NAME.VARIANT
run() {
  local name=$1 variant=$2 ranks=$3 threads=$4; shift 4
  local prefix=() out
  [ "$ranks" = 0 ] || prefix=("${mpirun[@]}" -np "$ranks")
  # More ranks than cores: oversubscribed, which also leaves them unbound.
  [ "$ranks" -le "$(nproc)" ] || prefix+=(--oversubscribe)
  [ "$variant" = profiled ] && prefix+=("$launcher" -o "$work/archive" --)
  [ "$variant" = floor ] && prefix+=(-x LD_PRELOAD="$clock_floor")
  rm -rf "$work/archive" "$work/run" && mkdir -p "$work/run"
  out=$(cd "$work/run" && OMP_NUM_THREADS=$threads "${prefix[@]}" "$@" 2>&1) || {
    echo "real_codes.sh: $name ($variant) failed:" >&2; tail -20 <<<"$out" >&2; exit 1; }
  local f; f=$(figure "$name" "$out")
  [ -n "$f" ] || { echo "real_codes.sh: no figure in $name's output ($variant)" >&2; tail -20 <<<"$out" >&2; exit 1; }
  echo "$f" >>"$work/$name.$variant"
}

programs=()
[ -n "$lulesh" ] && programs+=(lulesh1 lulesh8)
[ -n "$hpcg" ] && programs+=(hpcg4)
[ -n "$osu" ] && programs+=(osu_bw osu_lat)
for i in $(seq "$runs"); do
  for name in "${programs[@]}"; do
    variants=(plain profiled)
    [[ "$name" == osu_* && -f "$clock_floor" ]] && variants+=(floor)
    for variant in "${variants[@]}"; do
      case "$name" in
        lulesh1) run "$name" $variant 0 2 "$lulesh" -s 30 -i 200 ;;
        lulesh8) run "$name" $variant 8 1 "$lulesh" -s 12 -i 50 ;;
        hpcg4) run "$name" $variant 4 1 "$hpcg" 16 16 16 --rt=5 ;;
        osu_bw) run "$name" $variant 2 1 "$osu/osu_bw" -m 8:8 ;;
        osu_lat) run "$name" $variant 2 1 "$osu/osu_latency" -m 8:8 -i 100000 -x 1000 ;;
      esac
    done
  done
done

median() { sort -g "$1" | awk '{a[NR]=$1} END {print (NR%2) ? a[(NR+1)/2] : (a[NR/2]+a[NR/2+1])/2}'; }
# Each run's profiled figure against the plain one just before it (the
# VM's speed changes for minutes at a time, and a pair shares it): ratios,
# or for osu_lat differences, one a line.
paired() {
  paste "$work/$1.plain" "$work/$1.profiled" | awk -v n="$1" '{print (n == "osu_lat") ? $2 - $1 : $2 / $1}' >"$work/$1.pairs"
}
echo "Real programs, plain vs hybridprof (1 kHz), $runs interleaved runs, $(nproc) cores (medians)"
for name in "${programs[@]}"; do
  floor=""
  [ -s "$work/$name.floor" ] && floor=$(median "$work/$name.floor")
  paired "$name"
  awk -v n="$name" -v p="$(median "$work/$name.plain")" -v q="$(median "$work/$name.profiled")" -v f="$floor" \
      -v pm="$(median "$work/$name.pairs")" -v lo="$(sort -g "$work/$name.pairs" | head -1)" \
      -v hi="$(sort -g "$work/$name.pairs" | tail -1)" 'BEGIN {
    if (n == "osu_lat") {
      printf "  %-8s plain %10.3f  profiled %10.3f  %+.3f us     (target <= +0.080 us)", n, p, q, q - p
      if (f != "") printf "  clock floor %+.3f us", f - p
      printf "  pairs %+.3f (%+.3f to %+.3f)", pm, lo, hi
    } else {
      t = n == "lulesh1" ? 0.93 : n == "osu_bw" ? 0.5 : 0.85
      printf "  %-8s plain %10.2f  profiled %10.2f  %.3fx plain  (target >= %.2fx)", n, p, q, q / p, t
      if (f != "") printf "  clock floor %.3fx", f / p
      printf "  pairs %.3fx (%.3f-%.3f)", pm, lo, hi
    }
    printf "\n"
  }'
done
