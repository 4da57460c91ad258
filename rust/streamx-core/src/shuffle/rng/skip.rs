//! Counting a shuffle's draws without the shuffle, for the parts of an order nobody reads.

use super::{Pcg64, M32};

/// Candidates decided per block (16 draws); measured best among 16 to 128.
const BLOCK: u32 = 32;
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
            self.skip_intervals(i as u32, i);
        }
    }

    /// `scan_intervals(top, count)` with no values kept, deciding whole blocks at once.
    ///
    /// Candidate `x` of step `k` is accepted iff `x <= top - k`. Within a block starting at
    /// step `k0`, the `m`-th candidate's step lies in `k0 ..= k0 + m`, so `x <= top - k0 - m`
    /// accepts it and `x > top - k0` rejects it whatever came before; when every candidate is
    /// decided so, the block's accepts are just counted, with no chain from one to the next.
    fn skip_intervals(&mut self, top: u32, count: usize) {
        let mut draws = [0_u64; BLOCK as usize / 2];
        let mut k = 0;
        while k < count {
            let bound = top - k as u32;
            let mask = mask_of(bound);
            if let Some(high) = self.buf32.take() {
                k += usize::from(high & mask <= bound);
                continue;
            }
            // A block must keep one mask (its bound stays above half of it) and be long.
            let to_next_mask = (bound - (mask >> 1)) as usize;
            if mask >= MIN_BLOCK_MASK
                && to_next_mask >= BLOCK as usize
                && count - k >= BLOCK as usize
            {
                self.fill_u64(&mut draws);
                k += block_accepts(&draws, mask, bound);
                continue;
            }
            let steps = if mask >= MIN_BLOCK_MASK {
                to_next_mask.min(count - k)
            } else {
                count - k
            };
            self.scan_intervals(bound, steps, |_, _| {});
            k += steps;
        }
    }
}

/// Smallest all-ones mask covering `x`.
fn mask_of(x: u32) -> u32 {
    u32::MAX >> x.leading_zeros()
}

/// The accepted candidates among a block's halves (low half first), starting from `bound`.
fn block_accepts(draws: &[u64; BLOCK as usize / 2], mask: u32, bound: u32) -> usize {
    let halves: [u32; BLOCK as usize] =
        std::array::from_fn(|m| (draws[m / 2] >> (32 * (m % 2))) as u32 & mask);
    // Every candidate accepted for sure is accepted at all, so equal counts leave none open.
    let (mut sure, mut maybe) = (0_u32, 0_u32);
    for (m, &x) in (0..BLOCK).zip(&halves) {
        sure += u32::from(x <= bound - m);
        maybe += u32::from(x <= bound);
    }
    if sure == maybe {
        return sure as usize;
    }
    let mut k = 0;
    for x in halves {
        k += u32::from(x <= bound - k);
    }
    k as usize
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
