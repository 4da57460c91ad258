//! [`Found::add_shifted`] eight indices at a time with AVX-512, where the CPU has it: a
//! resume's pick compares some millions of positions with its bounds, and keeps one in ten.
#![allow(unsafe_code)]
// Built only where build.rs found the AVX-512 intrinsics stable (Rust 1.89+), like the
// generator's kernels: the crate's 1.85 MSRV does not apply to this module.
#![allow(clippy::incompatible_msrv)]

use super::found::{Found, LANE};
use std::arch::x86_64::{
    __m512d, __m512i, _mm512_add_epi64, _mm512_add_pd, _mm512_cmp_pd_mask, _mm512_loadu_pd,
    _mm512_maskz_compress_epi64, _mm512_maskz_compress_pd, _mm512_set1_epi64, _mm512_set1_pd,
    _mm512_set_epi64, _mm512_set_pd, _mm512_storeu_pd, _mm512_storeu_si512, _CMP_GE_OQ, _CMP_LT_OQ,
};

/// Whether this CPU runs [`Found::add_shifted_wide`].
pub(super) fn available() -> bool {
    is_x86_feature_detected!("avx512f")
}

impl Found {
    /// [`Found::add_shifted`] on one chunk of at most [`LANE`] shifts. The caller checked
    /// [`available`].
    pub(super) fn add_shifted_wide(&mut self, i: usize, d: &[f64], p0: f64, p1: f64) {
        // SAFETY: `available` said the CPU has AVX-512 F.
        unsafe { self.add_chunk(i, d, p0, p1) }
    }

    /// Each index's position is its index as a double (exact below 2^53, so the same as the
    /// scalar path's sum of two parts) plus its shift: one rounding, the same.
    #[target_feature(enable = "avx512f")]
    fn add_chunk(&mut self, i: usize, d: &[f64], p0: f64, p1: f64) {
        assert!(d.len() <= LANE);
        let mut kept = Kept::default();
        let mut indices = _mm512_add_epi64(
            _mm512_set1_epi64(i as i64),
            _mm512_set_epi64(7, 6, 5, 4, 3, 2, 1, 0),
        );
        let mut at = _mm512_add_pd(
            _mm512_set1_pd(i as f64),
            _mm512_set_pd(7.0, 6.0, 5.0, 4.0, 3.0, 2.0, 1.0, 0.0),
        );
        let (low, high) = (_mm512_set1_pd(p0), _mm512_set1_pd(p1));
        let mut before = 0;
        let whole = d.len() / 8 * 8;
        for d in d[..whole].chunks_exact(8) {
            // SAFETY: 8 f64 are read from `d`; the load is unaligned.
            let p = _mm512_add_pd(at, unsafe { _mm512_loadu_pd(d.as_ptr()) });
            before += _mm512_cmp_pd_mask::<_CMP_LT_OQ>(p, low).count_ones() as usize;
            let keep = _mm512_cmp_pd_mask::<_CMP_GE_OQ>(p, low)
                & _mm512_cmp_pd_mask::<_CMP_LT_OQ>(p, high);
            kept.push(keep, indices, p);
            indices = _mm512_add_epi64(indices, _mm512_set1_epi64(8));
            at = _mm512_add_pd(at, _mm512_set1_pd(8.0));
        }
        self.before += before;
        self.indices.extend_from_slice(&kept.indices[..kept.len]);
        self.positions
            .extend_from_slice(&kept.positions[..kept.len]);
        // The last few one at a time, as the scalar path takes them.
        self.add_scalar(i + whole, &d[whole..], p0, p1);
    }
}

/// The indices and positions a chunk keeps, gathered on the stack, then appended at once.
struct Kept {
    indices: [i64; LANE],
    positions: [f64; LANE],
    len: usize,
}

impl Default for Kept {
    fn default() -> Self {
        Kept {
            indices: [0; LANE],
            positions: [0.0; LANE],
            len: 0,
        }
    }
}

impl Kept {
    /// Appends the lanes of `indices` and `positions` that `keep` selects, in lane order.
    #[target_feature(enable = "avx512f")]
    fn push(&mut self, keep: u8, indices: __m512i, positions: __m512d) {
        // Room for 8 more: a chunk keeps at most one per index, and has at most LANE.
        let to_i = &mut self.indices[self.len..self.len + 8];
        let to_p = &mut self.positions[self.len..self.len + 8];
        // Compressed in a register, then all 8 lanes stored (those past the kept ones are
        // written over by the next push, or never read): a compressing store to memory is
        // microcoded on AMD's Zen 4, some 50 times slower there.
        // SAFETY: each store writes 8 values into its slice of 8; unaligned.
        unsafe {
            let (i, p) = (to_i.as_mut_ptr(), to_p.as_mut_ptr());
            _mm512_storeu_si512(i.cast(), _mm512_maskz_compress_epi64(keep, indices));
            _mm512_storeu_pd(p, _mm512_maskz_compress_pd(keep, positions));
        }
        self.len += keep.count_ones() as usize;
    }
}
