//! The whole node laid out: every span shuffled and jittered, then sorted by position.

use super::shift_range;
use crate::shuffle::rng::Pcg64;
use crate::shuffle::spans::Span;
use crate::Result;

/// The node's sample ids, span by span, each span shuffled.
pub(super) fn node_samples(rng: &mut Pcg64, node: &[Span]) -> Vec<i64> {
    let mut samples = Vec::new();
    for &(begin, end) in node {
        let at = samples.len();
        samples.extend(begin..end);
        rng.shuffle(&mut samples[at..]);
    }
    samples
}

/// Positions `0..n` plus, per span, a uniform shift confined to the node and to a random block.
pub(super) fn jittered_positions(
    rng: &mut Pcg64,
    node: &[Span],
    bounds: (i64, i64),
    small_block: &mut bool,
) -> Result<Vec<f64>> {
    let total = node.iter().map(|&(b, e)| (e - b) as usize).sum::<usize>();
    let mut positions: Vec<f64> = (0..total).map(|i| i as f64).collect();
    let mut offset = 0;
    for &(begin, end) in node {
        let size = (end - begin) as usize;
        let (low, high) = shift_range(rng, bounds, offset, size, total, small_block)?;
        let shifts = rng.uniform(low, high, size);
        for (p, d) in positions[offset..offset + size].iter_mut().zip(shifts) {
            *p += d;
        }
        offset += size;
    }
    Ok(positions)
}

/// `samples[argsort(positions)]`. numpy's argsort is unstable, but exact ties have probability
/// about zero; ordering ties by index makes the port deterministic.
///
/// Every position lies in `[0, n)` (a span's shift never leaves the node) and sits within a
/// block of its index, so a two-level bucket sort on `floor(position)` does the work in linear
/// time with cache-sized tables: coarse buckets of `COARSE` positions, then fine buckets of
/// `FINE` within each, each holding a few elements. Bucketing is monotone in the position, and
/// the elements are sorted on one integer key each, (position in total order, index), which is
/// unique, so the result is exactly the stable (position, index) order.
pub(super) fn sort_by_position(samples: &[i64], positions: &[f64]) -> Vec<i64> {
    const COARSE: usize = 1 << 14;
    const FINE: usize = 4;
    let n = positions.len();
    // `as` saturates (and maps NaN to 0); the `min` only guards rounding at the top end.
    let floor = |p: f64| (p as usize).min(n.saturating_sub(1));
    let keys: Vec<u128> = (0_u128..)
        .zip(positions)
        .map(|(i, &p)| (u128::from(total_order_bits(p)) << 64) | i)
        .collect();
    let (coarse, coarse_ends) =
        bucket_sort(&keys, n / COARSE + 1, |k| floor(key_position(k)) / COARSE);
    drop(keys);
    let mut out = Vec::with_capacity(n);
    let mut start = 0;
    for (c, &end) in coarse_ends.iter().enumerate() {
        let base = c * COARSE;
        let slice = &coarse[start..end];
        start = end;
        let (mut fine, fine_ends) = bucket_sort(slice, COARSE / FINE, |k| {
            (floor(key_position(k)) - base) / FINE
        });
        let mut from = 0;
        for to in fine_ends {
            let run = &mut fine[from..to];
            if run.len() > 1 {
                run.sort_unstable();
            }
            from = to;
        }
        out.extend(fine.iter().map(|&k| samples[(k as u64) as usize]));
    }
    out
}

/// A stable counting sort of `keys` into `buckets` buckets; returns the sorted keys and where
/// each bucket ends.
fn bucket_sort(
    keys: &[u128],
    buckets: usize,
    bucket: impl Fn(u128) -> usize,
) -> (Vec<u128>, Vec<usize>) {
    let mut next = vec![0_usize; buckets + 1];
    for &k in keys {
        next[bucket(k) + 1] += 1;
    }
    for i in 1..=buckets {
        next[i] += next[i - 1];
    }
    let mut out = vec![0_u128; keys.len()];
    for &k in keys {
        let slot = &mut next[bucket(k)];
        out[*slot] = k;
        *slot += 1;
    }
    // Each bucket's cursor now rests at its end.
    next.truncate(buckets);
    (out, next)
}

/// The position a key was made from.
fn key_position(key: u128) -> f64 {
    let bits = (key >> 64) as u64;
    f64::from_bits(if bits >> 63 == 1 {
        bits & !(1 << 63)
    } else {
        !bits
    })
}

/// Maps an `f64` to a `u64` whose unsigned order is `f64::total_cmp`'s order.
pub(super) fn total_order_bits(x: f64) -> u64 {
    let bits = x.to_bits();
    if bits >> 63 == 1 {
        !bits
    } else {
        bits | (1 << 63)
    }
}
