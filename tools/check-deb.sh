#!/usr/bin/env bash
# The Debian package on a fresh Debian 12: makes it (`cpack -G DEB` in the
# build directory), makes a minimal Debian 12 root with debootstrap (no
# compiler, no libraries), installs the package there with apt-get, which
# brings its dependencies from Debian's archive, and runs the tools from
# /usr/bin: `hybridprof -- /bin/true`, a report of that run, --version, and
# the man pages' presence. Prints each step; exit 0 when all passed.
#
#   tools/check-deb.sh [BUILD_DIR]
#
# Needs root, debootstrap and Debian's archive (the mirror this machine's
# apt uses). The pristine root is made once and kept as a tarball in
# ${CHECK_DEB_CACHE:-/var/tmp/hybridprof-check-deb}; every run installs
# into a new copy of it.
set -euo pipefail
build=$(realpath "${1:-build}")
[ "$(id -u)" = 0 ] || { echo "check-deb.sh: run as root (debootstrap, chroot)" >&2; exit 2; }
[ -f "$build/CPackConfig.cmake" ] || { echo "check-deb.sh: no CPackConfig.cmake in $build (build first)" >&2; exit 2; }
command -v debootstrap >/dev/null || apt-get install -y -qq debootstrap >/dev/null
cache=${CHECK_DEB_CACHE:-/var/tmp/hybridprof-check-deb}
work=$(mktemp -d)
root=$work/root
mounted=()
cleanup() {
  for m in "${mounted[@]}"; do umount -l "$m" 2>/dev/null || true; done
  rm -rf "$work"
}
trap cleanup EXIT

echo "== the package"
(cd "$build" && cpack -G DEB -B "$work/deb" >"$work/cpack.log" 2>&1) || { cat "$work/cpack.log" >&2; exit 1; }
deb=$(ls "$work"/deb/*.deb)
dpkg-deb --field "$deb" Package Version Depends

echo "== a fresh Debian 12 root"
mkdir -p "$cache"
if [ ! -f "$cache/bookworm.tar" ]; then
  mirror=$(awk '/^URIs:/ {print $2; exit}' /etc/apt/sources.list.d/debian.sources 2>/dev/null || true)
  debootstrap --variant=minbase bookworm "$work/pristine" ${mirror:+"$mirror"} >"$work/debootstrap.log" 2>&1 ||
    { tail -20 "$work/debootstrap.log" >&2; exit 1; }
  if [ -f /etc/apt/sources.list.d/debian.sources ]; then
    cp /etc/apt/sources.list.d/debian.sources "$work/pristine/etc/apt/sources.list.d/"
    rm -f "$work/pristine/etc/apt/sources.list"
  fi
  tar -C "$work/pristine" -cf "$cache/bookworm.tar.part" . && mv "$cache/bookworm.tar.part" "$cache/bookworm.tar"
  rm -rf "$work/pristine"
fi
mkdir -p "$root"
tar -C "$root" -xf "$cache/bookworm.tar"
for d in proc sys dev; do mount --bind "/$d" "$root/$d" && mounted+=("$root/$d"); done
cp "$deb" "$root/tmp/"
in_root() { chroot "$root" /bin/bash -c "$1"; }

echo "== apt-get install ./$(basename "$deb")"
in_root "export DEBIAN_FRONTEND=noninteractive; apt-get update -qq && apt-get install -y -qq /tmp/$(basename "$deb") >/tmp/apt.log 2>&1 || { tail -20 /tmp/apt.log; exit 1; }"
in_root "dpkg -s hybridprof | sed -n 's/^Status: //p'"

echo "== the tools from /usr/bin"
in_root "command -v hybridprof && hybridprof --version && hybridprof-report --version"
in_root "cd /tmp && hybridprof -o /tmp/run -- /bin/true && test -f /tmp/run/traces.otf2"
in_root "hybridprof-report /tmp/run | sed -n 1,12p"
in_root "for t in hybridprof hybridprof-report hybridprof-merge hybridprof-convert; do test -f /usr/share/man/man1/\$t.1 || { echo \"no man page of \$t\"; exit 1; }; done; echo 'man pages: 4'"
echo "check-deb.sh: the package installs on a fresh Debian 12 and its tools run"
