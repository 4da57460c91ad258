//! `uniform`'s doubles drawn 16 at a time with AVX-512 IFMA, where the CPU has it.
//!
//! A resume's pick draws the shifts of some millions of node indices to count the positions
//! before its piece; one after the other, each draw waits on the previous 128-bit multiply.
//! Here the 16 lanes of [`super::ifma`] (each lane one position of the stream, all jumping 16
//! steps at once) draw whole rows, and each draw becomes its double in the same vector, with
//! the very operations (and so the very roundings) of [`Pcg64::uniform_chunks`].
#![allow(unsafe_code)]
// Built only where build.rs found these intrinsics stable (Rust 1.89+), like `ifma`.
#![allow(clippy::incompatible_msrv)]

use super::ifma::{self, output, step, Jump, Lanes, LANES};
use super::{lcg_jump, Pcg64, CHUNK};
use std::arch::x86_64::{
    _mm512_add_pd, _mm512_cvtepi64_pd, _mm512_loadu_si512, _mm512_mul_pd, _mm512_set1_epi64,
    _mm512_set1_pd, _mm512_srli_epi64, _mm512_storeu_pd,
};

/// Fewer values than this are drawn one after the other: setting the lanes up costs about
/// as much as drawing 16 values.
pub(super) const MIN_WIDE: usize = 4 * LANES;

/// Whether this CPU runs the kernel: the count kernel's features, and AVX-512 DQ for the
/// conversion of 64-bit integers to doubles.
pub(super) fn available() -> bool {
    ifma::available() && is_x86_feature_detected!("avx512dq")
}

impl Pcg64 {
    /// [`Pcg64::uniform_chunks`] with the lanes: the same values in the same chunks, and the
    /// generator moved past the `n` draws. The caller checked [`available`].
    pub(super) fn uniform_chunks_wide(
        &mut self,
        lo: f64,
        hi: f64,
        n: usize,
        sink: &mut dyn FnMut(&[f64]),
    ) {
        let words = self.first_row();
        let (mult, plus) = lcg_jump(LANES as u128, self.inc);
        let jump = (ifma::limbs(mult), ifma::limbs(plus));
        // SAFETY: `available` said the CPU has every feature `uniform_rows` enables.
        unsafe { uniform_rows(&words, jump, (lo, hi), n, sink) };
        // The lanes ran past the last draw used (to the row's end): the state is jumped to it.
        self.advance(n as u128);
    }
}

/// The kernel: `words` holds the 16 lanes' limbs (limb-major), `jump` the 16-step jump; hands
/// the `n` values of `uniform(lo, hi, n)` to `sink`, `CHUNK` at a time.
#[target_feature(enable = "avx512f,avx512ifma,avx512bw,avx512dq")]
fn uniform_rows(
    words: &[u64; 3 * LANES],
    (mult, plus): ([u64; 3], [u64; 3]),
    (lo, hi): (f64, f64),
    n: usize,
    sink: &mut dyn FnMut(&[f64]),
) {
    let load = |at: usize| {
        // SAFETY: `at + 8 <= words.len()` for every call below; the load is unaligned.
        unsafe { _mm512_loadu_si512(words[at..at + 8].as_ptr().cast()) }
    };
    let mut lanes = [0, 8].map(|at| Lanes([load(at), load(LANES + at), load(2 * LANES + at)]));
    let jump = Jump {
        mult: mult.map(|x| _mm512_set1_epi64(x as i64)),
        plus: plus.map(|x| _mm512_set1_epi64(x as i64)),
    };
    // `lo + (hi - lo) * unit_double(v)`: each operation rounds as the scalar one does (no
    // fused multiply-add), and the conversion and scaling are exact.
    let (low, range) = (_mm512_set1_pd(lo), _mm512_set1_pd(hi - lo));
    let unit = _mm512_set1_pd(1.0 / 9_007_199_254_740_992.0);
    let mut values = [0.0; CHUNK];
    let mut left = n;
    while left > 0 {
        let len = left.min(CHUNK);
        for row in values[..len.next_multiple_of(LANES)].chunks_exact_mut(LANES) {
            for (half, l) in row.chunks_exact_mut(8).zip(&mut lanes) {
                let top = _mm512_srli_epi64::<11>(output(*l));
                let u = _mm512_mul_pd(_mm512_cvtepi64_pd(top), unit);
                let value = _mm512_add_pd(low, _mm512_mul_pd(range, u));
                // SAFETY: 8 f64 fit in `half`; the store is unaligned.
                unsafe { _mm512_storeu_pd(half.as_mut_ptr(), value) };
                *l = step(*l, &jump);
            }
        }
        sink(&values[..len]);
        left -= len;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Values, chunks and the generator after them equal the scalar path's, across row and
    /// chunk edges, from a generator with a buffered half (which `uniform` leaves alone).
    #[test]
    fn wide_uniform_matches_the_scalar_draws() {
        // Skipped in effect where the CPU lacks the kernel (see `blocks`' tests).
        if !available() {
            return;
        }
        let ranges = [
            (-3.0, 4.5),
            (-1_950_000.0, 2_010_000.0),
            (0.0, 1.0),
            (-0.0, 7e-300),
        ];
        let mut seed = 0;
        for n in [64, 65, 79, 80, 255, 256, 257, 511, 4095, 100_003] {
            for &(lo, hi) in &ranges {
                seed += 1;
                let mut scalar = Pcg64::new(seed << 70 | seed);
                if seed % 2 == 1 {
                    scalar.next_u32();
                }
                let mut wide = scalar.clone();
                let (mut want, mut got) = (Vec::new(), Vec::new());
                let bits = |d: &[f64]| d.iter().map(|x| x.to_bits()).collect::<Vec<_>>();
                scalar.uniform_chunks_scalar(lo, hi, n, &mut |d| want.push(bits(d)));
                wide.uniform_chunks_wide(lo, hi, n, &mut |d| got.push(bits(d)));
                let at = format!("seed {seed} n {n} lo {lo} hi {hi}");
                assert_eq!(want, got, "{at}");
                assert_eq!(wide.words(), scalar.words(), "{at}");
            }
        }
    }
}
