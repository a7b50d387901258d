#!/usr/bin/env bash
# A relocatable hybridprof: the launcher, the runtime, the report and merge
# tools, the GPU check, and every shared library they need that is not
# glibc's or the C++ runtime's, in one directory that runs from any path on
# another x86-64 Linux whose glibc is at least as new as the one named in
# its BUNDLE-INFO.
#
#   tools/make-bundle.sh OUT_DIR [BUILD_DIR=build]
#
#   OUT_DIR/bin/      hybridprof, hybridprof-report, hybridprof-merge,
#                     gpu_archive_facts, cuda_bench and cuda_static_window (where built)
#   OUT_DIR/lib/      libhybridprof.so, libhybridprof_job_archive.so and the
#                     libraries they need
#   OUT_DIR/share/hybridprof/benchmarks/gpu/check.sh   the GPU node check
#   OUT_DIR/BUNDLE-INFO                  what it holds and what it needs
#
# The libraries are those the dynamic loader picks for the built programs
# (ldd), not a list kept by hand. Each copy gets a soname of its own
# (hybridprof-libunwind.so.8, ...) and our programs name those: a program
# being profiled keeps its own libunwind, libz or liblzma, whatever their
# version, and the runtime's never shadow them. Left to the system: glibc's
# libraries, libstdc++ and libgcc_s (every C++ program's, and a newer one
# runs what an older one built; a bundled older one would be loaded first
# and break the program's newer needs), and MPI (the job's own libmpi, which
# only an MPI program ever loads). Programs and libraries find the copies
# through RUNPATH $ORIGIN, so LD_LIBRARY_PATH plays no part.
set -euo pipefail
usage() { echo "usage: $0 OUT_DIR [BUILD_DIR=build]" >&2; exit 2; }
[ $# -ge 1 ] && [ $# -le 2 ] || usage
out=$1 build=${2:-build}
source_dir=$(cd "$(dirname "$0")/.." && pwd)
for tool in patchelf ldd strip; do
  command -v "$tool" >/dev/null || { echo "make-bundle.sh: needs $tool (Debian: apt-get install patchelf binutils)" >&2; exit 2; }
done
[ -f "$build/CMakeCache.txt" ] || { echo "make-bundle.sh: no configured build in $build (./tools/setup-and-run.sh demo makes one)" >&2; exit 2; }
# An existing OUT_DIR is replaced only when it is an earlier bundle.
if [ -e "$out" ] && { [ ! -d "$out" ] || { [ -n "$(ls -A "$out")" ] && [ ! -f "$out/BUNDLE-INFO" ]; }; }; then
  echo "make-bundle.sh: $out exists and is not an earlier bundle: not touching it" >&2
  exit 2
fi

targets=(hybridprof hybridprof-report hybridprof-merge hybridprof_runtime gpu_archive_facts)
grep -q '^HYBRIDPROF_HAVE_CUPTI:INTERNAL=ON' "$build/CMakeCache.txt" && targets+=(cuda_bench cuda_static_window)
grep -q '^MPI_C_FOUND:BOOL=TRUE' "$build/CMakeCache.txt" && targets+=(hybridprof_job_archive)
cmake --build "$build" -j "$(nproc)" --target "${targets[@]}" >/dev/null

rm -rf "$out/bin" "$out/lib" "$out/share" "$out/BUNDLE-INFO"
mkdir -p "$out/bin" "$out/lib" "$out/share/hybridprof/benchmarks/gpu"
programs=()
for p in hybridprof hybridprof-report hybridprof-merge gpu_archive_facts cuda_bench cuda_static_window; do
  [ -x "$build/bin/$p" ] && programs+=("$build/bin/$p")
done
ours=("$build/lib/libhybridprof.so")
[ -f "$build/lib/libhybridprof_job_archive.so" ] && ours+=("$build/lib/libhybridprof_job_archive.so")

# needs FILE: "soname path" of each library the loader finds for FILE.
needs() { ldd "$1" | awk '$2 == "=>" && $3 ~ /^\// {print $1, $3}'; }
left_to_system() {
  case "$1" in
    ld-linux*|libc.so.*|libm.so.*|libmvec.so.*|libpthread.so.*|libdl.so.*|librt.so.*|libresolv.so.*|libutil.so.*|\
    libanl.so.*|libnsl.so.*|libBrokenLocale.so.*|libstdc++.so.*|libgcc_s.so.*) return 0 ;;
  esac
  return 1
}
# What our files need, MPI's library and its own aside: the job brings its
# MPI (libhybridprof_job_archive.so is loaded only into MPI programs).
declare -A wanted=()  # soname -> path
for f in "${programs[@]}" "$build/lib/libhybridprof.so"; do
  while read -r soname path; do left_to_system "$soname" || wanted[$soname]=$path; done < <(needs "$f")
done
mpi=0
if [ -f "$build/lib/libhybridprof_job_archive.so" ]; then
  # Its own needs come straight from its dynamic section; what libmpi needs is MPI's.
  for soname in $(patchelf --print-needed "$build/lib/libhybridprof_job_archive.so"); do
    case "$soname" in libmpi*) mpi=1; continue ;; esac
    left_to_system "$soname" && continue
    [ -n "${wanted[$soname]:-}" ] || wanted[$soname]=$(needs "$build/lib/libhybridprof_job_archive.so" | awk -v s="$soname" '$1 == s {print $2}')
  done
fi

private_name() { echo "hybridprof-$1"; }
for soname in "${!wanted[@]}"; do
  cp -L "${wanted[$soname]}" "$out/lib/$(private_name "$soname")"
done
for f in "${programs[@]}"; do cp "$f" "$out/bin/"; done
for f in "${ours[@]}"; do cp "$f" "$out/lib/"; done
chmod u+w "$out"/bin/* "$out"/lib/*

# Our files: debug sections off (the profiler reads the program's, not its
# own); every file: the private sonames, RUNPATH beside itself.
for f in "$out"/bin/* "$out"/lib/*; do
  case "$(basename "$f")" in hybridprof-lib*) ;; *) strip --strip-debug "$f" ;; esac
  replace=()
  for needed in $(patchelf --print-needed "$f"); do
    [ -n "${wanted[$needed]:-}" ] && replace+=(--replace-needed "$needed" "$(private_name "$needed")")
  done
  [ ${#replace[@]} -gt 0 ] && patchelf "${replace[@]}" "$f"
  case "$f" in
    "$out"/bin/*) patchelf --set-rpath '$ORIGIN/../lib' "$f" ;;
    *) patchelf --set-rpath '$ORIGIN' "$f" ;;
  esac
done
for soname in "${!wanted[@]}"; do patchelf --set-soname "$(private_name "$soname")" "$out/lib/$(private_name "$soname")"; done

# The check, runnable from the bundle: share/hybridprof/benchmarks/gpu/check.sh BUNDLE.
cp "$source_dir"/benchmarks/gpu/{check.sh,check.py,stack_scan.py,hang_hunt.py,train_step.py,input_bound.py} "$out/share/hybridprof/benchmarks/gpu/"
cp "$source_dir"/benchmarks/{call_overhead.sh,cuda_overhead.sh} "$out/share/hybridprof/benchmarks/"

# Every file must load from here: nothing "not found", nothing of ours from
# outside the bundle.
for f in "$out"/bin/* "$out"/lib/*; do
  if ldd "$f" | grep -q "not found"; then
    echo "make-bundle.sh: $(basename "$f") does not load from the bundle:" >&2
    ldd "$f" | grep "not found" >&2
    exit 1
  fi
done

glibc=$(for f in "$out"/bin/* "$out"/lib/*; do objdump -T "$f" 2>/dev/null; done |
        grep -o 'GLIBC_[0-9][0-9.]*' | sed 's/GLIBC_//' | sort -uV | tail -1)
glibcxx=$(for f in "$out"/bin/* "$out"/lib/*; do objdump -T "$f" 2>/dev/null; done |
          grep -o 'GLIBCXX_[0-9][0-9.]*' | sed 's/GLIBCXX_//' | sort -uV | tail -1)
{
  echo "hybridprof $(sed -n 's/^CMAKE_PROJECT_VERSION:STATIC=//p' "$build/CMakeCache.txt")" \
       "($(git -C "$source_dir" rev-parse --short HEAD 2>/dev/null || echo "no git"))," \
       "made $(date -u +%Y-%m-%d) on $(. /etc/os-release 2>/dev/null && echo "$PRETTY_NAME"), $(uname -m)"
  echo "needs: x86-64 Linux, glibc >= $glibc, libstdc++ with GLIBCXX_$glibcxx (GCC's C++ runtime, as every C++ program has)"
  echo "libraries bundled (private sonames): $(printf '%s\n' "${!wanted[@]}" | sort | tr '\n' ' ')"
  echo "left to the system: glibc, libstdc++, libgcc_s$([ "$mpi" = 1 ] && echo ", MPI (libmpi and its own libraries)")"
  echo "CUDA: $(if [ -x "$out/bin/cuda_bench" ]; then echo "CUPTI is loaded at run time from the program's CUDA"; else echo "built without CUPTI: GPU activity is not traced"; fi)"
} >"$out/BUNDLE-INFO"
echo "bundle: $out ($(du -sh "$out" | cut -f1))"
cat "$out/BUNDLE-INFO"
