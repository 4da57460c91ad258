//! `Generator.shuffle`'s Fisher-Yates, in bulk, partially, or only counting its draws.

use super::{Pcg64, CHUNK, M32};

impl Pcg64 {
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
    /// `out.len() <= top <= u32::MAX`.
    fn intervals_down(&mut self, top: u32, out: &mut [u32]) {
        self.scan_blocks(top, out.len(), Some(out));
    }

    /// Draws `interval(top - k)` for `k` in `0..count`, handing each candidate value to
    /// `sink(k, x)`; the last candidate handed over for a given `k` is its value. Rejection
    /// makes the draw count data-dependent, so this draws a batch of 64-bit values, scans their
    /// 32-bit halves without branching on the outcome, and rewinds past the halves left unused.
    pub(super) fn scan_intervals(
        &mut self,
        top: u32,
        count: usize,
        mut sink: impl FnMut(usize, u32),
    ) {
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

    /// `Generator.permutation(n)`.
    pub fn permutation(&mut self, n: usize) -> Vec<i64> {
        let mut out: Vec<i64> = (0..n as i64).collect();
        self.shuffle(&mut out);
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

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
}
