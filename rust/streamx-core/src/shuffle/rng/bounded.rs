//! Draws in a range (masked and Lemire rejection), `integers` and `choice`.

use super::{Pcg64, M32};
use crate::{Error, Result};

/// Smallest all-ones mask covering `x`.
fn mask_for(x: u64) -> u64 {
    if x == 0 {
        0
    } else {
        u64::MAX >> x.leading_zeros()
    }
}

impl Pcg64 {
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

    #[test]
    fn interval_zero_draws_nothing() {
        let mut a = Pcg64::new(7);
        let mut b = a.clone();
        assert_eq!(a.interval(0), 0);
        assert_eq!(a.next_u64(), b.next_u64());
    }
}
