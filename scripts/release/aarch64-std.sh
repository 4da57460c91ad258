#!/usr/bin/env bash
# Prints a Rust sysroot that holds the aarch64-unknown-linux-gnu standard library, preparing it
# on first use. rustup cannot add targets here (no network but the package registries), so the
# std comes from Debian: libstd-rust-web-dev:arm64, unpacked under build/ (nothing arm64 is
# installed system-wide), used with the same-version compiler, Debian's rustc-web (amd64).
# Rust std rlibs load only in the exact rustc that built them, so both come from one apt state.
set -euo pipefail
cd "$(dirname "$0")/../.."
root=$PWD/build/aarch64-std
rustc=/usr/bin/rustc

have_rustc_web() { dpkg-query -W -f='${Status}' rustc-web 2>/dev/null | grep -q 'install ok installed'; }

if ! have_rustc_web || [[ ! -d $root/usr/lib/rustlib/aarch64-unknown-linux-gnu/lib ]]; then
  echo "aarch64-std: preparing Debian's rustc-web and its arm64 std under $root" >&2
  if ! dpkg --print-foreign-architectures | grep -qx arm64; then dpkg --add-architecture arm64; fi
  apt-get update -qq >&2
  # bookworm keeps the newer rustc-web in its security suite; -t picks it where it exists.
  suite=$(. /etc/os-release && echo "${VERSION_CODENAME}-security")
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends -t "$suite" rustc-web >&2 \
    || DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends rustc-web >&2
  version=$(dpkg-query -W -f='${Version}' rustc-web)
  major_minor=$(sed -E 's/^([0-9]+\.[0-9]+).*/\1/' <<<"$version")
  debs=$(mktemp -d)
  chown _apt "$debs" 2>/dev/null || true  # apt downloads as _apt where it can
  (cd "$debs" && apt-get download -qq "libstd-rust-web-dev:arm64=$version" \
    "libstd-rust-web-$major_minor:arm64=$version" >&2)
  rm -rf "$root" && mkdir -p "$root"
  for deb in "$debs"/*.deb; do dpkg-deb -x "$deb" "$root"; done
  rm -rf "$debs"
fi
echo "$root/usr"
