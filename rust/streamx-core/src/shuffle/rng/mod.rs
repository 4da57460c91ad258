//! numpy's `default_rng(seed)` reproduced bit for bit: `SeedSequence` seeding, PCG64
//! (XSL-RR output) and the `Generator` methods streaming's epoch order relies on.
//!
//! Draw counts matter as much as values, because one generator is shared across many calls
//! (for example every shard's `choice` during resampling). Every method below consumes exactly
//! the raw 32/64-bit draws numpy 2.x does, including the buffered high half of a 64-bit draw
//! that `next_u32` keeps between calls.

mod blocks;
mod bounded;
// Set by build.rs where the compiler builds the AVX-512 kernel (x86-64, Rust 1.89+).
#[cfg(streamx_ifma)]
mod ifma;
#[cfg(streamx_ifma)]
mod ifma_uniform;
mod seed;
mod shuffle;
mod swaps;

pub use swaps::Swaps;

const M32: u64 = u32::MAX as u64;
/// Values drawn per batch by the bulk shuffle paths.
const CHUNK: usize = 256;
const PCG_MULT: u128 = (2_549_297_995_355_413_924_u128 << 64) + 4_865_540_595_714_422_341;

/// The PCG64 bit generator behind `numpy.random.default_rng(seed)`, with the `Generator`
/// methods used by streaming's shuffles, partitions and resampling.
#[derive(Clone, Debug)]
pub struct Pcg64 {
    state: u128,
    inc: u128,
    /// High half of the last 64-bit draw, pending for the next `next_u32`.
    buf32: Option<u32>,
}

/// numpy's `next_double`: the top 53 bits of a draw as a double in `[0, 1)`.
fn unit_double(v: u64) -> f64 {
    // Through `i64`: the value fits, and x86-64 converts a signed integer in one instruction.
    ((v >> 11) as i64) as f64 * (1.0 / 9_007_199_254_740_992.0)
}

/// PCG64's XSL-RR output function of a state.
fn output(state: u128) -> u64 {
    let rot = (state >> 122) as u32;
    (((state >> 64) as u64) ^ (state as u64)).rotate_right(rot)
}

/// `(mult, plus)` such that `delta` LCG steps map a state `s` to `mult * s + plus`.
fn lcg_jump(mut delta: u128, inc: u128) -> (u128, u128) {
    let (mut acc_mult, mut acc_plus) = (1_u128, 0_u128);
    let (mut cur_mult, mut cur_plus) = (PCG_MULT, inc);
    while delta > 0 {
        if delta & 1 == 1 {
            acc_mult = acc_mult.wrapping_mul(cur_mult);
            acc_plus = acc_plus.wrapping_mul(cur_mult).wrapping_add(cur_plus);
        }
        cur_plus = cur_mult.wrapping_add(1).wrapping_mul(cur_plus);
        cur_mult = cur_mult.wrapping_mul(cur_mult);
        delta >>= 1;
    }
    (acc_mult, acc_plus)
}

use seed::seed_sequence_words;

impl Pcg64 {
    /// Seeds exactly like `numpy.random.default_rng(seed)`.
    pub fn new(seed: u128) -> Self {
        let w = seed_sequence_words(seed);
        let init_state = (u128::from(w[0]) << 64) | u128::from(w[1]);
        let init_seq = (u128::from(w[2]) << 64) | u128::from(w[3]);
        let mut rng = Pcg64 {
            state: 0,
            inc: (init_seq << 1) | 1,
            buf32: None,
        };
        rng.step();
        rng.state = rng.state.wrapping_add(init_state);
        rng.step();
        rng
    }

    /// The generator's words `(state, inc, buffered half)`, for keeping it in a file.
    pub(crate) fn words(&self) -> (u128, u128, Option<u32>) {
        (self.state, self.inc, self.buf32)
    }

    /// The generator whose [`Pcg64::words`] these are.
    pub(crate) fn from_words(state: u128, inc: u128, buf32: Option<u32>) -> Self {
        Pcg64 { state, inc, buf32 }
    }

    fn step(&mut self) {
        self.state = self.state.wrapping_mul(PCG_MULT).wrapping_add(self.inc);
    }

    /// A raw 64-bit draw (`bitgen.next_uint64`).
    pub fn next_u64(&mut self) -> u64 {
        self.step();
        output(self.state)
    }

    /// `out.len()` raw 64-bit draws, as many `next_u64` calls would give. One serial chain on
    /// a local state: interleaved lanes of jumps measured slower, the multiplier being the
    /// bottleneck either way.
    pub fn fill_u64(&mut self, out: &mut [u64]) {
        let (mut state, inc) = (self.state, self.inc);
        for o in out.iter_mut() {
            state = state.wrapping_mul(PCG_MULT).wrapping_add(inc);
            *o = output(state);
        }
        self.state = state;
    }

    /// A raw 32-bit draw: the low half of a fresh 64-bit draw, then its buffered high half.
    pub fn next_u32(&mut self) -> u32 {
        if let Some(high) = self.buf32.take() {
            return high;
        }
        let v = self.next_u64();
        self.buf32 = Some((v >> 32) as u32);
        v as u32
    }

    /// A double in `[0, 1)` with 53 random bits; it does not touch the 32-bit buffer.
    pub fn next_double(&mut self) -> f64 {
        unit_double(self.next_u64())
    }

    /// Consumes exactly the draws `uniform(lo, hi, n)` makes (one 64-bit draw per value; the
    /// 32-bit buffer is untouched), in `O(log n)` steps.
    pub fn skip_uniform(&mut self, n: usize) {
        self.advance(n as u128);
    }

    /// Moves the generator `delta` 64-bit draws ahead (numpy's `PCG64.advance`): the LCG step
    /// composed `delta` times, by squaring.
    pub fn advance(&mut self, delta: u128) {
        let (mult, plus) = lcg_jump(delta, self.inc);
        self.state = mult.wrapping_mul(self.state).wrapping_add(plus);
    }

    /// `Generator.uniform(lo, hi, n)`.
    pub fn uniform(&mut self, lo: f64, hi: f64, n: usize) -> Vec<f64> {
        let mut out = Vec::with_capacity(n);
        self.uniform_chunks(lo, hi, n, |values| out.extend_from_slice(values));
        out
    }

    /// The values of `uniform(lo, hi, n)` with the same draws, handed to `sink` in order a
    /// few hundred at a time: for a caller that only compares them, nothing is stored.
    pub fn uniform_chunks(&mut self, lo: f64, hi: f64, n: usize, mut sink: impl FnMut(&[f64])) {
        #[cfg(streamx_ifma)]
        if n >= ifma_uniform::MIN_WIDE && ifma_uniform::available() {
            return self.uniform_chunks_wide(lo, hi, n, &mut sink);
        }
        self.uniform_chunks_scalar(lo, hi, n, &mut sink);
    }

    /// [`Pcg64::uniform_chunks`] one draw after the other.
    fn uniform_chunks_scalar(&mut self, lo: f64, hi: f64, n: usize, sink: &mut dyn FnMut(&[f64])) {
        let range = hi - lo;
        let mut draws = [0_u64; CHUNK];
        let mut values = [0.0; CHUNK];
        let mut left = n;
        while left > 0 {
            let len = left.min(CHUNK);
            // Drawn apart from the conversion: measured twice as fast as one loop doing both.
            self.fill_u64(&mut draws[..len]);
            for (value, &v) in values.iter_mut().zip(&draws[..len]) {
                *value = lo + range * unit_double(v);
            }
            sink(&values[..len]);
            left -= len;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fill_matches_single_draws() {
        for n in [0, 1, 7, 8, 9, 100, 1001] {
            let mut a = Pcg64::new(n as u128);
            let mut b = a.clone();
            let mut filled = vec![0; n];
            a.fill_u64(&mut filled);
            let single: Vec<u64> = (0..n).map(|_| b.next_u64()).collect();
            assert_eq!(filled, single);
            assert_eq!(a.next_u64(), b.next_u64());
        }
    }
}
