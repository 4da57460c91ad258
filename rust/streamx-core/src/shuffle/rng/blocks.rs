//! A shuffle's bounded draws decided a block at a time, and counted without the shuffle for
//! the parts of an order nobody reads.

use super::{Pcg64, M32};

/// Candidates decided per block (16 draws); measured best among 16 to 128.
const BLOCK: usize = 32;
/// Below this mask a block too often holds a candidate the bound alone cannot decide.
const MIN_BLOCK_MASK: u32 = (1 << 14) - 1;
/// The same for entering the vector kernel, whose blocks cost far less to draw (below it, a
/// range holds too few steps for a block anyway); once in, it runs to the count's end.
const MIN_WIDE_MASK: u32 = (1 << 8) - 1;

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
    pub(super) fn scan_blocks(&mut self, top: u32, count: usize, out: Option<&mut [u32]>) {
        self.scan_blocks_with(top, count, out, wide_available());
    }

    /// [`Pcg64::scan_blocks`], counting with the vector kernel when `wide`: its blocks pay
    /// off down to far smaller masks than the scalar ones.
    fn scan_blocks_with(
        &mut self,
        top: u32,
        count: usize,
        mut out: Option<&mut [u32]>,
        wide: bool,
    ) {
        let min_mask = if wide { MIN_WIDE_MASK } else { MIN_BLOCK_MASK };
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
            // The kernel takes every step left, across the masks below this one.
            if wide && mask >= min_mask && count - k >= BLOCK {
                k += self.count_wide(bound, count - k, rest);
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
            let steps = if mask >= min_mask {
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

/// Whether [`Pcg64::count_wide`] runs on this CPU.
fn wide_available() -> bool {
    #[cfg(streamx_ifma)]
    return super::ifma::available();
    #[cfg(not(streamx_ifma))]
    return false;
}

#[cfg(not(streamx_ifma))]
impl Pcg64 {
    #[allow(clippy::unused_self)] // the kernel's signature, never called here
    fn count_wide(&mut self, _bound: u32, _room: usize, _out: Option<&mut [u32]>) -> usize {
        unreachable!("the vector kernel is only chosen where it is available")
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

    /// Draws `interval(top - k)` for `k` in `0..count`, one plain rejection loop each; returns
    /// the values.
    fn plain_count(g: &mut Pcg64, top: u32, count: usize) -> Vec<u32> {
        (0..count)
            .map(|k| g.interval(u64::from(top) - k as u64) as u32)
            .collect()
    }

    /// Both block paths against the plain loop, counting and keeping values: each ends at the
    /// same draw, buffered half included, and keeps the same values. Where the CPU lacks
    /// AVX-512 IFMA, `wide` falls back to the scalar blocks.
    fn assert_counts_match(seed: u128, top: u32, count: usize, buffered: bool) {
        let mut plain = Pcg64::new(seed);
        if buffered {
            plain.next_u32();
        }
        let start = plain.clone();
        let want = plain_count(&mut plain, top, count);
        let at = format!("seed {seed} top {top} count {count} buffered {buffered}");
        for wide in [false, wide_available()] {
            let mut g = start.clone();
            g.scan_blocks_with(top, count, None, wide);
            assert_eq!(g.words(), plain.words(), "{at} wide {wide}");
            let (mut g, mut got) = (start.clone(), vec![u32::MAX; count]);
            g.scan_blocks_with(top, count, Some(&mut got), wide);
            assert_eq!(g.words(), plain.words(), "{at} wide {wide} values");
            assert!(got == want, "{at} wide {wide}: values differ");
        }
    }

    #[test]
    fn counts_match_the_plain_loop_at_edge_bounds() {
        // Ranges starting at, just above and just below a power of two, where the mask changes.
        let mut seed = 0;
        for bits in [1, 2, 5, 7, 8, 9, 13, 14, 15, 17, 19] {
            for top in [
                (1_u32 << bits) - 1,
                1 << bits,
                (1 << bits) + 1,
                (1 << bits) + 40,
            ] {
                for buffered in [false, true] {
                    seed += 1;
                    assert_counts_match(seed, top, top as usize, buffered);
                }
            }
        }
    }

    #[test]
    fn counts_match_the_plain_loop_at_many_seeds_and_sizes() {
        let mut x = 0x9e37_79b9_u64;
        for seed in 0..60 {
            // A cheap spread of sizes up to 2^18, and counts that stop short of the range.
            x = x
                .wrapping_mul(6_364_136_223_846_793_005)
                .wrapping_add(1_442_695_040_888_963_407);
            let top = (x >> 46) as u32 + 1;
            let count = if seed % 3 == 0 {
                top as usize
            } else {
                (x % u64::from(top)) as usize
            };
            assert_counts_match(seed, top, count, seed % 2 == 1);
        }
        // The top of the 32-bit range, where `top - k` stays near u32::MAX.
        assert_counts_match(61, u32::MAX, 5_000, false);
        assert_counts_match(62, u32::MAX - 7, 70_000, true);
    }

    #[test]
    fn the_kernel_alone_ends_where_the_plain_loop_ends() {
        // Skipped in effect where the CPU lacks the kernel: the tests above then cover the
        // scalar blocks only.
        if !wide_available() {
            return;
        }
        let mut seed = 100;
        // Counts ending in the first block, a block's length from its end, mid-range, one
        // step short of the range and at its end; ranges from one block to many masks.
        for top in [
            32, 33, 63, 64, 95, 255, 256, 257, 1000, 1023, 1024, 4097, 65_535, 100_000,
        ] {
            for room in [32, 33, 34, 47, 63, 64, 65, top / 2, top - 1, top] {
                let room = room as usize;
                if room < 32 || room > top as usize {
                    continue;
                }
                for _ in 0..6 {
                    seed += 1;
                    let mut g = Pcg64::new(seed);
                    let (mut plain, mut kept) = (g.clone(), g.clone());
                    assert_eq!(g.count_wide(top, room, None), room);
                    let want = plain_count(&mut plain, top, room);
                    let at = format!("seed {seed} top {top} room {room}");
                    assert_eq!(g.words(), plain.words(), "{at}");
                    // With values, into a slice longer than the count: nothing past it written.
                    let mut got = vec![u32::MAX; room + 40];
                    assert_eq!(kept.count_wide(top, room, Some(&mut got)), room);
                    assert_eq!(kept.words(), plain.words(), "{at} values");
                    assert!(got[..room] == want[..], "{at}: values differ");
                    assert!(got[room..].iter().all(|&x| x == u32::MAX), "{at}");
                }
            }
        }
    }
}
