#!/usr/bin/env bash
# What writing one archive per job costs as ranks grow: an MPI job of N
# ranks (oversubscribed on this machine) under hybridprof, for N in RANKS,
# and from the job's result file (JOB/job-archive.result, written by the
# ranks at the end of the job) each phase's time (the slowest rank's),
# the largest rank's peak resident memory, the calling contexts' tables
# (the largest rank's own, and the job's, unified up a tree of ranks: what
# every rank receives) and the other definitions' bytes (the largest
# rank's own, and what rank 0 gathers, all ranks', to define every process;
# the other ranks keep their own and adopt rank 0's refs: recv_def_B, the
# most bytes of refs one was handed). Per-rank memory
# should stay flat as ranks grow and the time grow at most like log N;
# this prints the growth against the smallest job.
#
#   benchmarks/scale.sh [--build DIR] [--ranks "4 8 16 32 64"] [-- PROGRAM ARGS...]
#
# The default program is Debian's Python importing mpi4py and NumPy (each rank
# loads some 60 shared libraries); name a heavier one after "--" (PyTorch:
# about 4 MB of definitions a rank, more memory than 64 ranks of it fit in
# on a small machine). The symbol cache is the job's own (a fresh
# directory), so every run names its libraries cold.
set -euo pipefail
build=build ranks="4 8 16 32 64"
program=(/usr/bin/python3 -c "from mpi4py import MPI; import numpy; MPI.COMM_WORLD.Barrier()")
while [ $# -gt 0 ]; do
  case "$1" in
    --build) build=$2; shift 2 ;;
    --ranks) ranks=$2; shift 2 ;;
    --) shift; program=("$@"); break ;;
    *) echo "usage: $0 [--build DIR] [--ranks \"4 8 ...\"] [-- PROGRAM ARGS...]" >&2; exit 2 ;;
  esac
done
launcher=$(realpath "$build/bin/hybridprof")
[ -x "$launcher" ] || { echo "scale.sh: no hybridprof in $build/bin" >&2; exit 2; }
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
field() { awk -v k="$1" '$1 == k {print $2}' "$2"; }

printf "%6s %8s %8s %8s %8s %8s %8s %8s %8s %8s %8s %8s %8s\n" ranks read_ms name_ms symb_ms unify_ms exch_ms write_ms rss_MiB \
  own_ctx_KiB job_ctx_KiB own_def_KiB all_def_KiB recv_def_B
first_rss="" first_write=""
for n in $ranks; do
  rm -rf "$work/job" "$work/cache"
  if ! XDG_CACHE_HOME="$work/cache" OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 \
      mpirun --oversubscribe -x XDG_CACHE_HOME -np "$n" "$launcher" -F 100 -o "$work/job" -- "${program[@]}" \
      >"$work/out" 2>&1; then
    echo "scale.sh: the job of $n ranks failed:" >&2; tail -20 "$work/out" >&2; exit 1
  fi
  r="$work/job/job-archive.result"
  [ -f "$r" ] || { echo "scale.sh: no $r (the ranks did not write the archive)" >&2; tail -20 "$work/out" >&2; exit 1; }
  rss=$(( $(field rank_peak_rss_kib "$r") / 1024 ))
  write=$(field phase_write_ms "$r")
  printf "%6d %8d %8d %8d %8d %8d %8d %8d %8d %8d %8d %8d %8d\n" "$n" "$(field phase_read_ms "$r")" \
    "$(field phase_node_naming_ms "$r")" "$(field phase_symbolize_ms "$r")" "$(field phase_unify_ms "$r")" \
    "$(field phase_exchange_ms "$r")" "$write" "$rss" \
    $(( $(field context_bytes_rank_max "$r") / 1024 )) $(( $(field context_bytes_job "$r") / 1024 )) \
    $(( $(field definitions_bytes_rank_max "$r") / 1024 )) $(( $(field definitions_bytes_job "$r") / 1024 )) \
    "$(field definitions_bytes_received_max "$r")"
  [ -n "$first_rss" ] || { first_rss=$rss first_write=$write first_n=$n; }
  last_rss=$rss last_write=$write last_n=$n
done
awk -v a="$first_rss" -v b="$last_rss" -v ta="$first_write" -v tb="$last_write" -v na="$first_n" -v nb="$last_n" 'BEGIN {
  printf "from %d to %d ranks: peak memory a rank x%.2f (target: within 1.2), archive write x%.2f (log-like: at most x%.2f)\n",
         na, nb, b / a, tb / (ta > 0 ? ta : 1), log(nb) / log(na) }'
