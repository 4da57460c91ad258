#!/usr/bin/env bash
# Builds the release artifacts into dist/: abi3 wheels for x86_64 and aarch64 that satisfy
# manylinux2014 (glibc 2.17), and the sdist. No Docker: maturin links through zig, whose glibc
# stubs pin the symbol versions to 2.17. The aarch64 std comes from aarch64-std.sh (see there).
# Each step's seconds go to stderr. Both builds use the one target dir but share almost no
# units, even with one rustc for both (tried: the aarch64 build still compiled 78 of its 81
# units, host-side proc-macros included; --zig sets the linker of the x86_64 build, which is
# the host triple's), so each builds with the compiler its std needs.
set -euo pipefail
cd "$(dirname "$0")/../.."
out=${DIST:-dist}
venv=${RELEASE_VENV:-build/release-venv}
# maturin finds zig through the ziglang package of the python next to it.
export PATH=$PWD/$venv/bin:$PATH
rm -rf "$out" && mkdir -p "$out"
common=(--release --zig --compatibility manylinux2014 --out "$out")

step() {  # step NAME CMD...: runs CMD and reports how long it took
  local name=$1 start=$SECONDS
  shift
  "$@"
  echo "build-wheels: $name took $((SECONDS - start)) s" >&2
}

# ARCHES="x86_64" (CI's `make release-ci`) skips the aarch64 build, the slowest step.
arches=${ARCHES:-x86_64 aarch64}
step "the x86_64 wheel" maturin build "${common[@]}" --target x86_64-unknown-linux-gnu

if [[ " $arches " == *" aarch64 "* ]]; then
  sysroot=$(step "preparing the aarch64 std" scripts/release/aarch64-std.sh)
  # RUSTFLAGS reach only target artifacts under --target, so build scripts use Debian's host std.
  step "the aarch64 wheel" env RUSTC=/usr/bin/rustc RUSTFLAGS="--sysroot=$sysroot" \
    maturin build "${common[@]}" --target aarch64-unknown-linux-gnu
fi

step "the sdist" maturin sdist --out "$out"
ls -l "$out"
