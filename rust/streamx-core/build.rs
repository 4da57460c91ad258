//! Sets `streamx_ifma` where the compiler can build the AVX-512 IFMA shuffle kernel
//! (`src/shuffle/rng/ifma.rs`): x86-64 targets and Rust 1.89 or later, where its intrinsics and
//! target features are stable. Older compilers (the crate supports 1.85) and other targets build
//! the scalar path only. The probe compiles the kernel's constructs instead of comparing version
//! numbers, so it follows the target and the flags cargo passes.

// Lints allowed: under clippy (and `-D warnings`) the probe is linted too, and a lint must not
// turn the kernel off.
const PROBE: &str = r#"
#![allow(warnings)]
use std::arch::x86_64::{__m512i, _mm512_madd52lo_epu64};

#[target_feature(enable = "avx512f,avx512ifma,avx512bw")]
pub fn probe(a: __m512i, b: __m512i, c: __m512i) -> __m512i {
    _mm512_madd52lo_epu64(a, b, c)
}

pub fn available() -> bool {
    is_x86_feature_detected!("avx512ifma")
}
"#;

fn main() {
    autocfg::emit_possibility("streamx_ifma");
    if autocfg::new().probe_raw(PROBE).is_ok() {
        autocfg::emit("streamx_ifma");
    }
    autocfg::rerun_path("build.rs");
}
