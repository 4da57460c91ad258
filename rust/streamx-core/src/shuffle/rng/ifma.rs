//! A shuffle's draws counted 16 at a time with AVX-512 IFMA, where the CPU has it.
//!
//! One 128-bit LCG step is a chain of three dependent 64-bit multiplies, and counting a prefix
//! of 10^10 samples is little else. Here 16 lanes each hold one position of the stream and jump
//! 16 steps at once (`state * A16 + C16`), in 52-bit limbs multiplied by IFMA, so the whole
//! block of 32 candidates is drawn and decided in vector registers. Draws and decisions are
//! exactly those of [`Pcg64::scan_blocks`]'s scalar blocks.
#![allow(unsafe_code)]
// Built only where build.rs found these intrinsics stable (Rust 1.89+): the crate's 1.85 MSRV
// does not apply to this module.
#![allow(clippy::incompatible_msrv)]

use super::{lcg_jump, Pcg64, PCG_MULT};
use std::arch::x86_64::{
    __m512i, _mm512_add_epi32, _mm512_add_epi64, _mm512_and_si512, _mm512_cmple_epu32_mask,
    _mm512_loadu_si512, _mm512_madd52hi_epu64, _mm512_madd52lo_epu64, _mm512_maskz_compress_epi32,
    _mm512_ror_epi64, _mm512_rorv_epi64, _mm512_set1_epi32, _mm512_set1_epi64, _mm512_set_epi32,
    _mm512_set_epi64, _mm512_shuffle_epi8, _mm512_srli_epi64, _mm512_storeu_si512,
    _mm512_sub_epi32, _mm512_ternarylogic_epi64,
};

const M52: u64 = (1 << 52) - 1;
/// Lanes, and so the jump of each lane per block.
pub(super) const LANES: usize = 16;
/// Candidates per block: the two 32-bit halves of each lane's draw.
const BLOCK: u32 = 32;

/// Whether this CPU runs the kernel (checked once by std, then a load).
pub(super) fn available() -> bool {
    is_x86_feature_detected!("avx512f")
        && is_x86_feature_detected!("avx512ifma")
        && is_x86_feature_detected!("avx512bw")
        && is_x86_feature_detected!("popcnt")
}

/// A 128-bit value as limbs of 52, 52 and 24 bits.
pub(super) fn limbs(x: u128) -> [u64; 3] {
    [
        (x as u64) & M52,
        ((x >> 52) as u64) & M52,
        (x >> 104) as u64,
    ]
}

impl Pcg64 {
    /// Counts `room` steps of `interval(bound - k)` (`k` from 0), all of them, and leaves the
    /// generator exactly where the plain loop leaves it, buffered half included. The caller
    /// checked [`available`], that no half is buffered, and that `room >= BLOCK` and `room <=
    /// bound`. The lanes run once through every mask below `bound`: a block across a mask
    /// change, or the count's end, is taken one candidate after the other. With `out` (at
    /// least `room` long), step `k`'s value is kept in `out[k]`.
    pub(super) fn count_wide(&mut self, bound: u32, room: usize, out: Option<&mut [u32]>) -> usize {
        let words = self.first_row();
        let jump = lcg_jump(LANES as u128, self.inc);
        let out = out.map(|o| &mut o[..room]);
        let end = {
            // SAFETY: `available` said the CPU has every feature `count_blocks` enables.
            unsafe { count_blocks(&words, (limbs(jump.0), limbs(jump.1)), bound, room, out) }
        };
        self.state = end.state;
        self.buf32 = end.buf32;
        room
    }

    /// The states of the next 16 draws, as limbs (limb-major).
    pub(super) fn first_row(&self) -> [u64; 3 * LANES] {
        let mut words = [0_u64; 3 * LANES];
        let mut state = self.state;
        for lane in 0..LANES {
            state = state.wrapping_mul(PCG_MULT).wrapping_add(self.inc);
            for (limb, value) in limbs(state).into_iter().enumerate() {
                words[limb * LANES + lane] = value;
            }
        }
        words
    }
}

/// Eight lanes' states, one vector per limb.
#[derive(Clone, Copy)]
pub(super) struct Lanes(pub(super) [__m512i; 3]);

/// The jump `(A16, C16)` broadcast by limb.
pub(super) struct Jump {
    pub(super) mult: [__m512i; 3],
    pub(super) plus: [__m512i; 3],
}

/// Where the count left the generator.
struct End {
    state: u128,
    buf32: Option<u32>,
}

/// The kernel: `words` holds the 16 lanes' limbs (limb-major), `jump` the 16-step jump.
/// Takes all `room` steps from `bound` down, keeping each step's value in `out` when given. `popcnt` counts a block's accepted candidates in
/// one instruction, where the baseline target counts bits in some 20 (measured ~9% of the
/// kernel's time).
#[target_feature(enable = "avx512f,avx512ifma,avx512bw,popcnt")]
fn count_blocks(
    words: &[u64; 3 * LANES],
    (mult, plus): ([u64; 3], [u64; 3]),
    bound: u32,
    room: usize,
    mut out: Option<&mut [u32]>,
) -> End {
    let load = |at: usize| {
        // SAFETY: `at + 8 <= words.len()` for every call below; the load is unaligned.
        unsafe { _mm512_loadu_si512(words[at..at + 8].as_ptr().cast()) }
    };
    let mut lanes = [
        Lanes([load(0), load(LANES), load(2 * LANES)]),
        Lanes([load(8), load(LANES + 8), load(2 * LANES + 8)]),
    ];
    let jump = Jump {
        mult: mult.map(|x| _mm512_set1_epi64(x as i64)),
        plus: plus.map(|x| _mm512_set1_epi64(x as i64)),
    };
    let steps = _mm512_set_epi32(15, 14, 13, 12, 11, 10, 9, 8, 7, 6, 5, 4, 3, 2, 1, 0);
    let steps_high = _mm512_add_epi32(steps, _mm512_set1_epi32(16));
    // `b` is the bound of the next step; `last` the bound after the last one.
    let (mut b, last) = (bound, bound - room as u32);
    let mut mask = mask_of(b);
    let mut masks = _mm512_set1_epi32(mask as i32);
    loop {
        let raw = lanes.map(|l| output(l));
        // A block keeps one mask while the bound stays above half of it, for all 32
        // candidates, and must not reach the count's end.
        if b - (mask >> 1) >= BLOCK && b - last >= BLOCK {
            let xs = raw.map(|x| _mm512_and_si512(x, masks));
            let accepted = block_taken(xs, b, [steps, steps_high]);
            if let Some(out) = out.as_deref_mut() {
                keep_accepted(&mut out[(bound - b) as usize..], xs, accepted);
            }
            b -= accepted.count_ones();
        } else {
            let halves = halves(raw);
            let used = serial(
                &halves,
                &mut b,
                last,
                out.as_deref_mut().map(|o| (o, bound)),
            );
            if b == last {
                return end_at(&lanes, &halves, used);
            }
            mask = mask_of(b);
            masks = _mm512_set1_epi32(mask as i32);
        }
        if b == last {
            return end_at(&lanes, &[0; BLOCK as usize], BLOCK as usize);
        }
        lanes = lanes.map(|l| step(l, &jump));
    }
}

/// The accepted candidates of a block of masked candidates `xs` (one bit each, in stream
/// order), under one mask, from bound `b`; `steps` holds each candidate's place in the block.
#[target_feature(enable = "avx512f,avx512bw,popcnt")]
fn block_taken(xs: [__m512i; 2], b: u32, steps: [__m512i; 2]) -> u32 {
    let bounds = _mm512_set1_epi32(b as i32);
    let maybe = xs.map(|x| _mm512_cmple_epu32_mask(x, bounds));
    let sure = [0, 1].map(|i| _mm512_cmple_epu32_mask(xs[i], _mm512_sub_epi32(bounds, steps[i])));
    // One 32-bit mask per test: one compare and one count for the block.
    let join = |[low, high]: [u16; 2]| u32::from(low) | u32::from(high) << 16;
    let (maybe, sure) = (join(maybe), join(sure));
    if maybe == sure {
        maybe
    } else {
        resolve(halves(xs), b, sure, maybe)
    }
}

/// Smallest all-ones mask covering `x`.
fn mask_of(x: u32) -> u32 {
    u32::MAX >> x.leading_zeros()
}

/// A block's 32 candidates in stream order (each lane's low half, then its high half).
#[target_feature(enable = "avx512f")]
fn halves(xs: [__m512i; 2]) -> [u32; BLOCK as usize] {
    let mut halves = [0_u32; BLOCK as usize];
    for (at, x) in [0, LANES].into_iter().zip(xs) {
        // SAFETY: 16 u32 fit from `at`; the store is unaligned.
        unsafe { _mm512_storeu_si512(halves[at..at + LANES].as_mut_ptr().cast(), x) };
    }
    halves
}

/// The accepted candidates of a block (one mask, `xs` masked) some of which the bound alone
/// cannot decide: those `open` ones are decided in order, each by the candidates accepted
/// before it. Usually one or two are open.
#[target_feature(enable = "popcnt")]
fn resolve(halves: [u32; BLOCK as usize], bound: u32, sure: u32, maybe: u32) -> u32 {
    let (mut accepted, mut open) = (sure, maybe & !sure);
    while open != 0 {
        let at = open.trailing_zeros();
        let before = (accepted & !(u32::MAX << at)).count_ones();
        accepted |= u32::from(halves[at as usize] <= bound - before) << at;
        open &= open - 1;
    }
    accepted
}

/// Writes a block's accepted candidates, in order, to the start of `out` (which has room for
/// all 32); what follows them in those 32 is overwritten with other values.
#[target_feature(enable = "avx512f")]
fn keep_accepted(out: &mut [u32], xs: [__m512i; 2], accepted: u32) {
    let low = accepted as u16;
    let out = &mut out[..BLOCK as usize];
    let at = low.count_ones() as usize;
    // Compressed in registers, then stored whole: a compressing store to memory is
    // microcoded on AMD's Zen 4, some 50 times slower there.
    // SAFETY: each store writes 16 u32 inside `out`: at 0, and at `at <= 16`.
    unsafe {
        let first = _mm512_maskz_compress_epi32(low, xs[0]);
        let second = _mm512_maskz_compress_epi32((accepted >> 16) as u16, xs[1]);
        _mm512_storeu_si512(out.as_mut_ptr().cast(), first);
        _mm512_storeu_si512(out[at..].as_mut_ptr().cast(), second);
    }
}

/// Raw candidates taken one after the other, each with its bound's own mask, until the
/// bound reaches `last`; returns how many candidates were used. With `out` and the count's
/// first bound, each step's value is kept at its step.
fn serial(
    halves: &[u32; BLOCK as usize],
    b: &mut u32,
    last: u32,
    mut out: Option<(&mut [u32], u32)>,
) -> usize {
    for (used, &x) in halves.iter().enumerate() {
        if *b == last {
            return used;
        }
        let x = x & mask_of(*b);
        if let Some((out, bound)) = out.as_mut() {
            // A rejected value is overwritten by the next candidate of the same step.
            out[(*bound - *b) as usize] = x;
        }
        *b -= u32::from(x <= *b);
    }
    halves.len()
}

/// The generator after the first `used` candidates of the block `lanes` holds (`used >= 1`):
/// the state of the lane of the last draw used, and its high half when only the low was used.
#[target_feature(enable = "avx512f")]
fn end_at(lanes: &[Lanes; 2], halves: &[u32; BLOCK as usize], used: usize) -> End {
    let lane = used.div_ceil(2) - 1;
    let (part, at) = (lane / 8, lane % 8);
    let mut limb = [[0_u64; 8]; 3];
    for (out, v) in limb.iter_mut().zip(lanes[part].0) {
        // SAFETY: 8 u64 fit in `out`; the store is unaligned.
        unsafe { _mm512_storeu_si512(out.as_mut_ptr().cast(), v) };
    }
    // The top limb carries bits above its 24 (see `step`).
    let top = u128::from(limb[2][at] & ((1 << 24) - 1));
    End {
        state: u128::from(limb[0][at]) | u128::from(limb[1][at]) << 52 | top << 104,
        buf32: (used % 2 == 1).then(|| halves[used]),
    }
}

/// PCG64's XSL-RR output of eight states held in limbs, `(high ^ low).rotate_right(state >>
/// 122)`. `high ^ low` is the XOR of four parts with disjoint bits: `l0` and `l1 << 52` (the
/// low word), `l1 >> 12` and `l2 << 40` (the high word). The two parts of `l1` are `l1`
/// rotated by 12, and `l2 << 40` a byte shuffle, which leaves the shift port to the rest. The
/// rotation reads its count modulo 64, so `l2`'s bits above 24 drop out there too.
#[target_feature(enable = "avx512f,avx512bw")]
pub(super) fn output(Lanes([l0, l1, l2]): Lanes) -> __m512i {
    let word = _mm512_ternarylogic_epi64::<XOR3>(
        l0,
        _mm512_ror_epi64::<12>(l1),
        _mm512_shuffle_epi8(l2, bytes_to_top()),
    );
    _mm512_rorv_epi64(word, _mm512_srli_epi64::<18>(l2))
}

/// `vpternlogq`'s table for `a ^ b ^ c`.
const XOR3: i32 = 0x96;

/// A `vpshufb` control moving each 64-bit lane's bytes 0..3 to bytes 5..8 (`<< 40`); a set
/// high bit clears a byte. The shuffle indexes bytes within 128 bits: odd lanes start at 8.
#[target_feature(enable = "avx512f")]
fn bytes_to_top() -> __m512i {
    let (even, odd) = (
        0x0201_0080_8080_8080_u64 as i64,
        0x0a09_0880_8080_8080_u64 as i64,
    );
    _mm512_set_epi64(odd, even, odd, even, odd, even, odd, even)
}

/// `state * A16 + C16` modulo 2^128 on eight states: the limb products that reach below bit
/// 128, low and high halves, summed by column, then carried. Each column's products add into
/// one chain (IFMA adds into its first operand): the loop is bound by its vector operations,
/// and chains measured ~6% faster than products summed by separate adds. `l2` keeps the bits
/// above its 24: a product reads them only into bits above 24 of the result's, and the output
/// drops them.
#[target_feature(enable = "avx512f,avx512ifma")]
pub(super) fn step(Lanes([l0, l1, l2]): Lanes, jump: &Jump) -> Lanes {
    let ([a0, a1, a2], [c0, c1, c2]) = (jump.mult, jump.plus);
    let t0 = _mm512_madd52lo_epu64(c0, l0, a0);
    let t1 = _mm512_madd52hi_epu64(c1, l0, a0);
    let t1 = _mm512_madd52lo_epu64(_mm512_madd52lo_epu64(t1, l0, a1), l1, a0);
    let t2 = _mm512_madd52hi_epu64(c2, l0, a1);
    let t2 = _mm512_madd52hi_epu64(_mm512_madd52lo_epu64(t2, l0, a2), l1, a0);
    let t2 = _mm512_madd52lo_epu64(_mm512_madd52lo_epu64(t2, l1, a1), l2, a0);
    let t1 = _mm512_add_epi64(t1, _mm512_srli_epi64::<52>(t0));
    let t2 = _mm512_add_epi64(t2, _mm512_srli_epi64::<52>(t1));
    let m52 = _mm512_set1_epi64(M52 as i64);
    Lanes([_mm512_and_si512(t0, m52), _mm512_and_si512(t1, m52), t2])
}

#[cfg(test)]
mod tests {
    use super::*;

    /// `rows` rows of 16 draws, from lanes stepped and output as the kernel does.
    #[target_feature(enable = "avx512f,avx512ifma,avx512bw")]
    fn draw_rows(g: &Pcg64, rows: usize) -> Vec<u64> {
        let words = g.first_row();
        let (mult, plus) = lcg_jump(LANES as u128, g.inc);
        let jump = Jump {
            mult: limbs(mult).map(|x| _mm512_set1_epi64(x as i64)),
            plus: limbs(plus).map(|x| _mm512_set1_epi64(x as i64)),
        };
        // SAFETY: each load reads 8 of the 48 words; the loads are unaligned.
        let load = |at: usize| unsafe { _mm512_loadu_si512(words[at..at + 8].as_ptr().cast()) };
        let mut lanes = [0, 8].map(|at| Lanes([load(at), load(LANES + at), load(2 * LANES + at)]));
        let mut out = vec![0_u64; rows * LANES];
        for row in out.chunks_mut(LANES) {
            for (half, lanes) in row.chunks_mut(8).zip(&mut lanes) {
                // SAFETY: 8 u64 fit in `half`; the store is unaligned.
                unsafe { _mm512_storeu_si512(half.as_mut_ptr().cast(), output(*lanes)) };
                *lanes = step(*lanes, &jump);
            }
        }
        out
    }

    #[test]
    fn stepped_lanes_draw_what_the_generator_draws() {
        // Skipped in effect where the CPU lacks the kernel (see `blocks`' tests).
        if !available() {
            return;
        }
        for seed in [0, 3, (1 << 100) + 17] {
            let g = Pcg64::new(seed);
            // SAFETY: `available` said the CPU has every feature `draw_rows` enables.
            let drawn = unsafe { draw_rows(&g, 300) };
            let mut plain = g.clone();
            let want: Vec<u64> = (0..drawn.len()).map(|_| plain.next_u64()).collect();
            assert_eq!(drawn, want, "seed {seed}");
        }
    }
}
