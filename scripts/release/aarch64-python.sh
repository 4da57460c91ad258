#!/usr/bin/env bash
# Prints a folder holding Debian's arm64 CPython 3.11 and the libraries it loads, preparing it
# (and qemu-user-static) on first use, so the release check can run the aarch64 wheel under
# qemu: `qemu-aarch64-static -L ROOT ROOT/usr/bin/python3.11`. Nothing arm64 is installed
# system-wide; the packages are unpacked under build/.
set -euo pipefail
cd "$(dirname "$0")/../.."
root=$PWD/build/aarch64-python
if ! command -v qemu-aarch64-static >/dev/null || [[ ! -x $root/usr/bin/python3.11 ]]; then
  echo "aarch64-python: preparing qemu-user-static and arm64 python3.11 under $root" >&2
  if ! dpkg --print-foreign-architectures | grep -qx arm64; then dpkg --add-architecture arm64; fi
  apt-get update -qq >&2
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends qemu-user-static >&2
  debs=$(mktemp -d)
  chown _apt "$debs" 2>/dev/null || true  # apt downloads as _apt where it can
  (cd "$debs" && apt-get download -qq libc6:arm64 libgcc-s1:arm64 libstdc++6:arm64 \
    python3.11-minimal:arm64 libpython3.11-minimal:arm64 libpython3.11-stdlib:arm64 \
    libexpat1:arm64 zlib1g:arm64 libffi8:arm64 libssl3:arm64 libbz2-1.0:arm64 liblzma5:arm64 \
    libsqlite3-0:arm64 libuuid1:arm64 libncursesw6:arm64 libtinfo6:arm64 libreadline8:arm64 \
    libcrypt1:arm64 libzstd1:arm64 >&2)
  rm -rf "$root" && mkdir -p "$root"
  for deb in "$debs"/*.deb; do dpkg-deb -x "$deb" "$root"; done
  rm -rf "$debs"
fi
echo "$root"
