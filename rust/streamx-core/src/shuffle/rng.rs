//! numpy's `default_rng(seed)` reproduced bit for bit: `SeedSequence` seeding, PCG64
//! (XSL-RR output) and the `Generator` methods streaming's epoch order relies on.
//!
//! Draw counts matter as much as values, because one generator is shared across many calls
//! (for example every shard's `choice` during resampling). Every method below consumes exactly
//! the raw 32/64-bit draws numpy 2.x does, including the buffered high half of a 64-bit draw
//! that `next_u32` keeps between calls.

use crate::{Error, Result};

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

/// One round of `SeedSequence`'s hash, threading the running hash constant.
fn hashmix(value: u32, hash_const: &mut u32) -> u32 {
    let mut v = value ^ *hash_const;
    *hash_const = hash_const.wrapping_mul(0x931E_8875);
    v = v.wrapping_mul(*hash_const);
    v ^ (v >> 16)
}

fn mix(x: u32, y: u32) -> u32 {
    let r = 0xCA01_F9DD_u32
        .wrapping_mul(x)
        .wrapping_sub(0x4973_F715_u32.wrapping_mul(y));
    r ^ (r >> 16)
}

/// `SeedSequence(seed).generate_state(4, np.uint64)` for a non-negative integer seed.
fn seed_sequence_words(seed: u128) -> [u64; 4] {
    // numpy splits the integer into little-endian 32-bit words, always at least one.
    let mut entropy = Vec::with_capacity(4);
    let mut s = seed;
    loop {
        entropy.push((s & u128::from(u32::MAX)) as u32);
        s >>= 32;
        if s == 0 {
            break;
        }
    }
    let mut hash_const = 0x43B0_D7E5_u32;
    let mut pool = [0_u32; 4];
    for (i, slot) in pool.iter_mut().enumerate() {
        *slot = hashmix(entropy.get(i).copied().unwrap_or(0), &mut hash_const);
    }
    for src in 0..4 {
        for dst in 0..4 {
            if src != dst {
                let h = hashmix(pool[src], &mut hash_const);
                pool[dst] = mix(pool[dst], h);
            }
        }
    }
    for &word in entropy.iter().skip(4) {
        for slot in &mut pool {
            let h = hashmix(word, &mut hash_const);
            *slot = mix(*slot, h);
        }
    }
    let mut out_const = 0x8B51_F9DD_u32;
    let mut out = [0_u32; 8];
    for (i, o) in out.iter_mut().enumerate() {
        let mut v = pool[i % 4] ^ out_const;
        out_const = out_const.wrapping_mul(0x58F3_8DED);
        v = v.wrapping_mul(out_const);
        *o = v ^ (v >> 16);
    }
    std::array::from_fn(|i| u64::from(out[2 * i]) | (u64::from(out[2 * i + 1]) << 32))
}

/// numpy's `next_double`: the top 53 bits of a draw as a double in `[0, 1)`.
fn unit_double(v: u64) -> f64 {
    (v >> 11) as f64 * (1.0 / 9_007_199_254_740_992.0)
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

/// Smallest all-ones mask covering `x`.
fn mask_for(x: u64) -> u64 {
    if x == 0 {
        0
    } else {
        u64::MAX >> x.leading_zeros()
    }
}

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

    fn step(&mut self) {
        self.state = self.state.wrapping_mul(PCG_MULT).wrapping_add(self.inc);
    }

    /// A raw 64-bit draw (`bitgen.next_uint64`).
    pub fn next_u64(&mut self) -> u64 {
        self.step();
        output(self.state)
    }

    /// `out.len()` raw 64-bit draws, as many `next_u64` calls would give. The LCG is run as
    /// `LANES` interleaved chains of `LANES`-step jumps, so the multiplications of consecutive
    /// draws do not wait on each other.
    pub fn fill_u64(&mut self, out: &mut [u64]) {
        const LANES: usize = 4;
        let rounds = out.len() / LANES;
        if rounds < 2 {
            for o in out.iter_mut() {
                *o = self.next_u64();
            }
            return;
        }
        let start = self.state;
        let mut lanes = [0_u128; LANES];
        for lane in &mut lanes {
            self.step();
            *lane = self.state;
        }
        let (jump_mult, jump_plus) = lcg_jump(LANES as u128, self.inc);
        for chunk in out.chunks_exact_mut(LANES) {
            for (o, lane) in chunk.iter_mut().zip(&mut lanes) {
                *o = output(*lane);
                *lane = lane.wrapping_mul(jump_mult).wrapping_add(jump_plus);
            }
        }
        self.state = start;
        self.advance((rounds * LANES) as u128);
        for o in out.chunks_exact_mut(LANES).into_remainder() {
            *o = self.next_u64();
        }
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

    /// A value in `[0, max]` by masked rejection (numpy's `random_interval`), as used by
    /// `Generator.shuffle` and `Generator.permutation`.
    pub fn interval(&mut self, max: u64) -> u64 {
        let mask = mask_for(max);
        if max == 0 {
            return 0;
        }
        if max <= M32 {
            loop {
                let v = u64::from(self.next_u32()) & mask;
                if v <= max {
                    return v;
                }
            }
        }
        loop {
            let v = self.next_u64() & mask;
            if v <= max {
                return v;
            }
        }
    }

    /// A value in `[0, max]` by Lemire's multiply-shift rejection, as used by
    /// `Generator.integers` and `Generator.choice`.
    pub fn bounded(&mut self, max: u64) -> u64 {
        if max == 0 {
            return 0;
        }
        if max <= M32 {
            return u64::from(self.lemire32(max as u32));
        }
        if max == u64::MAX {
            return self.next_u64();
        }
        let excl = u128::from(max) + 1;
        let mut m = u128::from(self.next_u64()) * excl;
        if (m as u64 as u128) < excl {
            let threshold = (u128::from(u64::MAX - max) % excl) as u64;
            while (m as u64) < threshold {
                m = u128::from(self.next_u64()) * excl;
            }
        }
        (m >> 64) as u64
    }

    fn lemire32(&mut self, max: u32) -> u32 {
        if max == u32::MAX {
            return self.next_u32();
        }
        let excl = u64::from(max) + 1;
        let mut m = u64::from(self.next_u32()) * excl;
        if (m & M32) < excl {
            let threshold = (M32 - u64::from(max)) % excl;
            while (m & M32) < threshold {
                m = u64::from(self.next_u32()) * excl;
            }
        }
        (m >> 32) as u32
    }

    /// `Generator.integers(low, high)`: one int64 in `[low, high)`.
    pub fn integers(&mut self, low: i64, high: i64) -> Result<i64> {
        if low >= high {
            let msg = if low == 0 { "high <= 0" } else { "low >= high" };
            return Err(Error::InvalidArgument(msg.to_string()));
        }
        let span = high.wrapping_sub(low).wrapping_sub(1) as u64;
        Ok(low.wrapping_add(self.bounded(span) as i64))
    }

    /// `Generator.shuffle` on a 1-D array or list: Fisher-Yates from the back, masked rejection.
    pub fn shuffle<T>(&mut self, x: &mut [T]) {
        self.shuffle_from(x, 0);
    }

    /// [`Pcg64::shuffle`] with the same draws, but only `x[from..]` is left as the full shuffle
    /// leaves it: Fisher-Yates from the back fixes `x[i]` at step `i`, so the steps below
    /// `from` are drawn without swapping.
    pub fn shuffle_from<T>(&mut self, x: &mut [T], from: usize) {
        let stop = from.max(1);
        let mut i = x.len().saturating_sub(1);
        while i as u64 > M32 && i >= stop {
            let j = self.interval(i as u64) as usize;
            x.swap(i, j);
            i -= 1;
        }
        let mut js = [0_u32; CHUNK];
        while i >= stop {
            let js = &mut js[..(i + 1 - stop).min(CHUNK)];
            self.intervals_down(i as u32, js);
            for (k, &j) in js.iter().enumerate() {
                x.swap(i - k, j as usize);
            }
            i -= js.len();
        }
        self.skip_shuffle(i + 1);
    }

    /// `out[k] = interval(top - k)` for each `k`, with exactly the same draws, for
    /// `out.len() <= top <= u32::MAX`. Rejection makes the draw count data-dependent, so this
    /// draws a batch of 64-bit values, scans their 32-bit halves without branching on the
    /// outcome, and rewinds the generator past the halves left unused.
    fn intervals_down(&mut self, top: u32, out: &mut [u32]) {
        self.scan_intervals(top, out.len(), |k, x| out[k] = x);
    }

    /// Draws `interval(top - k)` for `k` in `0..count`, handing each candidate value to
    /// `sink(k, x)`; the last candidate handed over for a given `k` is its value.
    fn scan_intervals(&mut self, top: u32, count: usize, mut sink: impl FnMut(usize, u32)) {
        if count == 0 {
            return;
        }
        // `x <= top - k` is tested as `x + k <= top` with the mask held while the bound stays
        // in one power-of-two range, so the loop-carried chain through `k` is an add and a
        // compare.
        let regime = |k: usize| {
            let mask = u32::MAX >> (top - k as u32).leading_zeros();
            (mask, (top - (mask >> 1) - 1) as usize)
        };
        let (mut mask, mut last_k) = regime(0);
        let mut k = 0;
        let mut take = |v: u32, k: &mut usize| {
            let x = v & mask;
            sink(*k, x);
            *k += usize::from(u64::from(x) + *k as u64 <= u64::from(top));
            if *k > last_k && *k < count {
                (mask, last_k) = regime(*k);
            }
        };
        if let Some(high) = self.buf32.take() {
            take(high, &mut k);
        }
        let mut draws = [0_u64; CHUNK / 2];
        while k < count {
            // About 0.7 draws per value are needed; a few spare keep it to one batch mostly.
            let batch = (count - k + 4).min(draws.len());
            let saved = self.state;
            self.fill_u64(&mut draws[..batch]);
            let mut used = 0;
            while used < 2 * batch && k < count {
                take((draws[used / 2] >> (32 * (used % 2))) as u32, &mut k);
                used += 1;
            }
            if k == count {
                self.state = saved;
                self.advance(used.div_ceil(2) as u128);
                if used % 2 == 1 {
                    self.buf32 = Some((draws[used / 2] >> 32) as u32);
                }
            }
        }
    }

    /// Consumes exactly the draws `shuffle` makes on a slice of `len` elements, without the
    /// slice: for a part of the order nobody needs, only the generator's position matters.
    pub fn skip_shuffle(&mut self, len: usize) {
        let mut i = len.saturating_sub(1);
        while i as u64 > M32 {
            self.interval(i as u64);
            i -= 1;
        }
        if i >= 1 {
            self.scan_intervals(i as u32, i, |_, _| {});
        }
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

    /// `Generator.permutation(n)`.
    pub fn permutation(&mut self, n: usize) -> Vec<i64> {
        let mut out: Vec<i64> = (0..n as i64).collect();
        self.shuffle(&mut out);
        out
    }

    /// `Generator.uniform(lo, hi, n)`.
    pub fn uniform(&mut self, lo: f64, hi: f64, n: usize) -> Vec<f64> {
        let range = hi - lo;
        let mut out = Vec::with_capacity(n);
        let mut draws = [0_u64; CHUNK];
        while out.len() < n {
            let draws = &mut draws[..(n - out.len()).min(CHUNK)];
            self.fill_u64(draws);
            out.extend(draws.iter().map(|&v| lo + range * unit_double(v)));
        }
        out
    }

    /// Fisher-Yates with Lemire draws over `data[first..]` from the back (numpy's `_shuffle_int`).
    fn shuffle_lemire(&mut self, data: &mut [i64], first: usize) {
        for i in (first.max(1)..data.len()).rev() {
            let j = self.bounded(i as u64) as usize;
            data.swap(i, j);
        }
    }

    /// `Generator.choice(pop, size, replace=False)` (shuffled result), including numpy's switch
    /// to a partial tail shuffle for large populations.
    pub fn choice_noreplace(&mut self, pop: u64, size: u64) -> Result<Vec<i64>> {
        if size > pop {
            return Err(Error::InvalidArgument(
                "Cannot take a larger sample than population when replace is False".to_string(),
            ));
        }
        if pop > 10_000 && size > pop / 50 {
            let mut idx: Vec<i64> = (0..pop as i64).collect();
            let first = (pop - size).max(1) as usize;
            for i in (first..idx.len()).rev() {
                let j = self.bounded(i as u64) as usize;
                idx.swap(i, j);
            }
            return Ok(idx.split_off((pop - size) as usize));
        }
        let mut idx = self.floyd(pop, size);
        self.shuffle_lemire(&mut idx, 1);
        Ok(idx)
    }

    /// Floyd's sampling with numpy's open-addressing set (the probe order affects nothing but
    /// membership, yet the table size must match to reproduce it exactly).
    fn floyd(&mut self, pop: u64, size: u64) -> Vec<i64> {
        let set_size = (1.2 * size as f64) as u64;
        let mask = mask_for(set_size);
        let mut table: Vec<Option<u64>> = vec![None; (mask + 1) as usize];
        let mut out = Vec::with_capacity(size as usize);
        for j in pop - size..pop {
            let val = self.bounded(j);
            let mut loc = val & mask;
            while let Some(v) = table[loc as usize] {
                if v == val {
                    break;
                }
                loc = (loc + 1) & mask;
            }
            if table[loc as usize].is_none() {
                table[loc as usize] = Some(val);
                out.push(val as i64);
                continue;
            }
            // `val` was already picked: take `j` itself, which cannot have been picked yet.
            loc = j & mask;
            while table[loc as usize].is_some() {
                loc = (loc + 1) & mask;
            }
            table[loc as usize] = Some(j);
            out.push(j as i64);
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn seed_sequence_matches_numpy() {
        // np.random.SeedSequence(0).generate_state(4, np.uint64)
        let want = [
            0xdb2c_d7e7_b0f4_78be,
            0xabf4_641a_2c71_ba49,
            0x20c6_ed6d_9d7b_8d41,
            0x2c40_99de_223c_39d4,
        ];
        assert_eq!(seed_sequence_words(0), want);
    }

    #[test]
    fn integers_and_permutation_match_numpy() {
        let mut g = Pcg64::new(42);
        let got: Vec<i64> = (0..3).map(|_| g.integers(0, i64::MAX).unwrap()).collect();
        // [int(default_rng(42).integers(0, 2**63 - 1)) for _ in range(3)]
        let want = [
            7_138_484_576_005_690_179,
            4_047_939_128_787_533_792,
            7_919_168_045_412_322_065,
        ];
        assert_eq!(got, want);
        let mut g = Pcg64::new((1_u128 << 70) + 3);
        assert_eq!(g.permutation(10), [3, 6, 7, 8, 4, 1, 9, 5, 0, 2]);
    }

    /// The plain Fisher-Yates the bulk path must reproduce draw for draw.
    fn reference_shuffle<T>(g: &mut Pcg64, x: &mut [T]) {
        for i in (1..x.len()).rev() {
            let j = g.interval(i as u64) as usize;
            x.swap(i, j);
        }
    }

    #[test]
    fn bulk_shuffle_matches_scalar_fisher_yates() {
        let mut a = Pcg64::new(3);
        let mut b = a.clone();
        for len in [0, 1, 2, 3, 5, 64, 255, 256, 257, 1000, 70_000, 3, 129] {
            a.next_u32(); // alternate the buffered half between calls
            b.next_u32();
            let mut x: Vec<usize> = (0..len).collect();
            let mut y = x.clone();
            a.shuffle(&mut x);
            reference_shuffle(&mut b, &mut y);
            assert_eq!(x, y, "len {len}");
            assert_eq!(a.next_u32(), b.next_u32(), "len {len}");
        }
    }

    #[test]
    fn shuffle_from_keeps_the_top_and_the_draws() {
        for (len, from) in [
            (0, 0),
            (1, 0),
            (5, 3),
            (300, 0),
            (300, 1),
            (300, 299),
            (300, 300),
            (70_000, 1234),
        ] {
            let mut a = Pcg64::new(len as u128 + 9);
            let mut b = a.clone();
            let mut x: Vec<usize> = (0..len).collect();
            let mut y = x.clone();
            a.shuffle(&mut x);
            b.shuffle_from(&mut y, from);
            assert_eq!(
                x[from.min(len)..],
                y[from.min(len)..],
                "len {len} from {from}"
            );
            assert_eq!(a.next_u32(), b.next_u32(), "len {len} from {from}");
        }
    }

    #[test]
    fn skips_consume_the_same_draws() {
        let mut a = Pcg64::new(11);
        let mut b = a.clone();
        a.next_u32(); // leave a buffered half behind
        b.next_u32();
        for len in [0, 1, 2, 3, 100, 5000] {
            let mut v: Vec<u32> = (0..len).collect();
            a.shuffle(&mut v);
            b.skip_shuffle(len as usize);
            drop(a.uniform(-3.0, 4.5, len as usize));
            b.skip_uniform(len as usize);
            assert_eq!(a.next_u32(), b.next_u32());
        }
        let mut c = Pcg64::new(5);
        let mut d = c.clone();
        for _ in 0..1000 {
            c.next_u64();
        }
        d.advance(1000);
        assert_eq!(c.next_u64(), d.next_u64());
    }

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

    #[test]
    fn interval_zero_draws_nothing() {
        let mut a = Pcg64::new(7);
        let mut b = a.clone();
        assert_eq!(a.interval(0), 0);
        assert_eq!(a.next_u64(), b.next_u64());
    }
}
