//! A shuffle's bounded draws decided a block at a time, and counted without the shuffle for
//! the parts of an order nobody reads.

use super::{Pcg64, M32};

/// Candidates decided per block (16 draws); measured best among 16 to 128.
const BLOCK: usize = 32;
/// Below this mask a block too often holds a candidate the bound alone cannot decide.
const MIN_BLOCK_MASK: u32 = (1 << 14) - 1;

impl Pcg64 {
    /// Consumes exactly the draws `shuffle` makes on a slice of `len` elements, without the
    /// slice: for a part of the order nobody needs, only the generator's position matters.
    pub fn skip_shuffle(&mut self, len: usize) {
        let mut i = len.saturating_sub(1);
        while i as u64 > M32 {
            self.interval(i as u64);
            i -= 1;
        }
        if i >= 1 {
            self.scan_blocks(i as u32, i, None);
        }
    }

    /// [`Pcg64::scan_intervals`] deciding whole blocks of candidates at once where it can,
    /// keeping each step's value in `out` (of length `count`) when given.
    ///
    /// Candidate `x` of step `k` is accepted iff `x <= top - k`. Within a block starting at
    /// step `k0`, the `m`-th candidate's step lies in `k0 ..= k0 + m`, so `x <= top - k0 - m`
    /// accepts it and `x > top - k0` rejects it whatever came before; when every candidate is
    /// decided so, no step waits on the previous one's outcome.
    pub(super) fn scan_blocks(&mut self, top: u32, count: usize, mut out: Option<&mut [u32]>) {
        let mut draws = [0_u64; BLOCK / 2];
        let mut k = 0;
        while k < count {
            let bound = top - k as u32;
            let mask = mask_of(bound);
            let rest = out.as_deref_mut().map(|o| &mut o[k..]);
            if let Some(high) = self.buf32.take() {
                let x = high & mask;
                if let Some(rest) = rest {
                    rest[0] = x;
                }
                k += usize::from(x <= bound);
                continue;
            }
            // A block must keep one mask (its bound stays above half of it) and be long.
            let to_next_mask = (bound - (mask >> 1)) as usize;
            if mask >= MIN_BLOCK_MASK && to_next_mask >= BLOCK && count - k >= BLOCK {
                self.fill_u64(&mut draws);
                let halves =
                    std::array::from_fn(|m| (draws[m / 2] >> (32 * (m % 2))) as u32 & mask);
                k += match rest {
                    None => decided(&halves, bound).unwrap_or_else(|| serial(&halves, bound, None)),
                    Some(rest) => block_values(&halves, bound, rest),
                };
                continue;
            }
            let steps = if mask >= MIN_BLOCK_MASK {
                to_next_mask.min(count - k)
            } else {
                count - k
            };
            match rest {
                None => self.scan_intervals(bound, steps, |_, _| {}),
                Some(rest) => self.scan_intervals(bound, steps, |j, x| rest[j] = x),
            }
            k += steps;
        }
    }
}

/// Smallest all-ones mask covering `x`.
fn mask_of(x: u32) -> u32 {
    u32::MAX >> x.leading_zeros()
}

/// How many of a block's (masked) candidates are accepted from `bound` on, if the bound alone
/// decides every one: each one accepted for sure is accepted at all, so equal counts leave
/// none open.
fn decided(halves: &[u32; BLOCK], bound: u32) -> Option<usize> {
    let (mut sure, mut maybe) = (0_u32, 0_u32);
    for (m, &x) in (0..BLOCK as u32).zip(halves) {
        sure += u32::from(x <= bound - m);
        maybe += u32::from(x <= bound);
    }
    (sure == maybe).then_some(sure as usize)
}

/// The block's accepted values written to `out` in order; returns how many.
fn block_values(halves: &[u32; BLOCK], bound: u32, out: &mut [u32]) -> usize {
    if decided(halves, bound).is_none() {
        return serial(halves, bound, Some(out));
    }
    let mut k = 0;
    for (m, &x) in (0..BLOCK as u32).zip(halves) {
        // A rejected value is overwritten by the next candidate of the same step.
        out[k] = x;
        k += usize::from(x <= bound - m);
    }
    k
}

/// The block's candidates taken one after the other.
fn serial(halves: &[u32; BLOCK], bound: u32, mut out: Option<&mut [u32]>) -> usize {
    let mut k = 0;
    for &x in halves {
        if let Some(out) = out.as_deref_mut() {
            out[k] = x;
        }
        k += usize::from(x <= bound - k as u32);
    }
    k
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn skips_match_scalar_draws_over_many_masks() {
        for (seed, len) in [(1, 40_000), (2, 65_537), (3, 1_000_003), (4, 131_073)] {
            let mut a = Pcg64::new(seed);
            if seed % 2 == 0 {
                a.next_u32(); // start from a buffered half
            }
            let mut b = a.clone();
            for i in (1..len).rev() {
                a.interval(i);
            }
            b.skip_shuffle(len as usize);
            assert_eq!(a.next_u32(), b.next_u32(), "len {len}");
            assert_eq!(a.next_u64(), b.next_u64(), "len {len}");
        }
    }
}
