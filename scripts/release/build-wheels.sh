#!/usr/bin/env bash
# Builds the release artifacts into dist/: abi3 wheels for x86_64 and aarch64 that satisfy
# manylinux2014 (glibc 2.17), and the sdist. No Docker: maturin links through zig, whose glibc
# stubs pin the symbol versions to 2.17. The aarch64 std comes from aarch64-std.sh (see there).
set -euo pipefail
cd "$(dirname "$0")/../.."
out=${DIST:-dist}
venv=${RELEASE_VENV:-build/release-venv}
# maturin finds zig through the ziglang package of the python next to it.
export PATH=$PWD/$venv/bin:$PATH
rm -rf "$out" && mkdir -p "$out"
common=(--release --zig --compatibility manylinux2014 --out "$out")

maturin build "${common[@]}" --target x86_64-unknown-linux-gnu

sysroot=$(scripts/release/aarch64-std.sh)
# RUSTFLAGS reach only target artifacts under --target, so build scripts use Debian's host std.
RUSTC=/usr/bin/rustc RUSTFLAGS="--sysroot=$sysroot" \
  maturin build "${common[@]}" --target aarch64-unknown-linux-gnu

maturin sdist --out "$out"
ls -l "$out"
