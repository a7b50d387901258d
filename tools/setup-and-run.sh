#!/usr/bin/env bash
# One command from a fresh Debian 12 machine (as root) to a working hybridprof:
# installs the Debian packages that are missing, builds, then
#   demo  profiles the bundled example job and prints the report and archive path
#   test  runs the whole test suite (what CI runs), then the unit tests
#         again under AddressSanitizer + UBSan, then the fuzzers (libFuzzer,
#         Clang) for a bounded time
set -euo pipefail
mode=${1:-demo}
case "$mode" in demo|test) ;; *) echo "usage: $0 [demo|test]" >&2; exit 2 ;; esac
cd "$(dirname "$0")/.."

packages=(g++ make cmake pkg-config patchelf help2man dpkg-dev file
          libpfm4-dev libunwind-dev libdw-dev libelf-dev
          libopen-trace-format2-dev otf2-tools
          libgtest-dev libgmock-dev googletest libbenchmark-dev
          vite linux-perf time procps strace openmpi-bin libopenmpi-dev gfortran libc6-dbg
          python3 python3-mpi4py python3-numpy python3-torch
          clang libclang-rt-dev libomp-dev)
# The browser tier of the tests: Chromium, driven by puppeteer-core (npm).
# A node or npm from elsewhere (NodeSource's nodejs bundles npm, and
# Debian's npm package conflicts with it) serves as well.
if [ "$mode" = test ]; then
  packages+=(chromium)
  command -v node >/dev/null || packages+=(nodejs)
  command -v npm >/dev/null || packages+=(npm)
fi
missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if [ ${#missing[@]} -gt 0 ]; then
  echo "installing: ${missing[*]}"
  export DEBIAN_FRONTEND=noninteractive
  apt-get update -qq
  apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
fi

build=${BUILD_DIR:-build}
cmake -S . -B "$build" -DCMAKE_BUILD_TYPE=RelWithDebInfo >/dev/null
cmake --build "$build" -j "$(nproc)"

if [ "$mode" = test ]; then
  # The browser tier's npm packages, into the build tree (no browser
  # download: Debian's chromium is the browser).
  # Without the npm registry (or trust in its certificate) the Browser
  # tests say why they skip; everything else runs.
  if [ ! -f "$build/browser/node_modules/speedscope/package.json" ]; then
    mkdir -p "$build/browser"
    if ! (cd "$build/browser" && PUPPETEER_SKIP_DOWNLOAD=1 timeout 600 npm install --no-audit --no-fund --silent \
            --fetch-retries=2 --fetch-timeout=60000 puppeteer-core@24.43.1 speedscope@1.25.0 >/dev/null); then
      echo "could not install puppeteer-core and speedscope from registry.npmjs.org: the Browser tests will skip"
    fi
  fi
  (cd "$build" && ctest --output-on-failure --timeout 600)
  # The sanitizer tier: libraries, tools and unit tests again under
  # AddressSanitizer + UBSan (HYBRIDPROF_SKIP_SANITIZE=1 skips it locally).
  if [ "${HYBRIDPROF_SKIP_SANITIZE:-0}" != 1 ]; then
    cmake -S . -B "$build-sanitize" -DCMAKE_BUILD_TYPE=RelWithDebInfo -DHYBRIDPROF_SANITIZE=ON >/dev/null
    cmake --build "$build-sanitize" -j "$(nproc)"
    (cd "$build-sanitize" && ctest --output-on-failure --timeout 600)
  fi
  # The fuzz tier: the raw stream decoder and the report's archive reading
  # under libFuzzer, 30 s each (HYBRIDPROF_SKIP_FUZZ=1 skips it locally).
  # Only the fuzzers are built. libFuzzer is in libclang-rt-dev, which the
  # clang packages only recommend.
  if [ "${HYBRIDPROF_SKIP_FUZZ:-0}" != 1 ]; then
    CC=clang CXX=clang++ cmake -S . -B "$build-fuzz" -DCMAKE_BUILD_TYPE=RelWithDebInfo -DHYBRIDPROF_FUZZ=ON >/dev/null
    cmake --build "$build-fuzz" --target fuzzers -j "$(nproc)"
    (cd "$build-fuzz" && ctest -L fuzz --output-on-failure)
  fi
  exit
fi

out=$(mktemp -d /tmp/hybridprof-demo.XXXXXX)
echo
echo "== profiling the example job: 2 threads, 3 leaf functions sharing the CPU 50/30/20"
"$build/bin/hybridprof" -F 1000 --enter-leave -o "$out/run" -- "$build/tests/fixtures/split_workload" 2 2
echo
"$build/bin/hybridprof-report" "$out/run"
echo
echo "archive: $out/run/traces.otf2"
echo "for ViTE: $out/run/enter-leave/traces.otf2"
