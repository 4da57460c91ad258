#!/usr/bin/env bash
# Builds the release artifacts into dist/: abi3 wheels for x86_64 and aarch64 that satisfy
# manylinux2014 (glibc 2.17), and the sdist. No Docker: maturin links through zig, whose glibc
# stubs pin the symbol versions to 2.17. The aarch64 std comes from aarch64-std.sh (see there).
#
# Both wheels are built by Debian's rustc (the one the aarch64 std requires) into the one
# target dir, so the host-side units (build scripts, proc-macros: syn, serde_derive, pyo3's
# macros) are compiled once and serve both builds. Each step's seconds go to stderr.
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

sysroot=$(step "preparing the aarch64 std" scripts/release/aarch64-std.sh)
export RUSTC=/usr/bin/rustc

step "the x86_64 wheel" maturin build "${common[@]}" --target x86_64-unknown-linux-gnu

# RUSTFLAGS reach only target artifacts under --target, so the host units stay shared.
step "the aarch64 wheel" env RUSTFLAGS="--sysroot=$sysroot" \
  maturin build "${common[@]}" --target aarch64-unknown-linux-gnu

step "the sdist" maturin sdist --out "$out"
ls -l "$out"
