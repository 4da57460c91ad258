//! The samples at given ranks of a window's jittered positions, without sorting all of it.

use super::sort::{sort_by_position, total_order_bits};

/// Position units per bucket.
const FINE: usize = 4;

/// `sort_by_position` over the whole node, at the sorted `ranks`, given only the samples and
/// positions of the node's indices `start..start + len`, all other samples sorting entirely
/// before (indices below `start`) or after the wanted ranks. Bucket counts on
/// `floor(position) / FINE` give each bucket's first rank; only the buckets holding a wanted
/// rank are gathered and sorted. Window lengths must fit in `u32` for the bucketed path
/// (otherwise the window is sorted whole); sample ids that fit in `u32` ride in the sort keys,
/// larger ones (epochs past 2^32 samples) are read back by their index.
pub(super) fn pick_in_window(
    samples: &[i64],
    positions: &[f64],
    start: usize,
    ranks: &[usize],
) -> Vec<i64> {
    let fits = |&s: &i64| u32::try_from(s).is_ok();
    let carried = samples.iter().all(fits);
    let Ok(len32) = u32::try_from(positions.len()) else {
        let all = sort_by_position(samples, positions);
        return ranks.iter().map(|&r| all[r - start]).collect();
    };
    let floor = |p: f64| p as usize; // saturating; positions are never negative
    let (mut low, mut high) = (usize::MAX, 0);
    for &p in positions {
        low = low.min(floor(p));
        high = high.max(floor(p));
    }
    let base = low / FINE;
    let bucket = |p: f64| floor(p) / FINE - base;
    let first_rank = first_ranks(positions.iter().map(|&p| bucket(p)), high / FINE - base + 1);
    // Only the buckets from the first wanted rank's to the last one's are laid out.
    let bucket_of = |r: usize| first_rank.partition_point(|&f| f as usize <= r - start) - 1;
    let (lo_b, hi_b) = (bucket_of(ranks[0]), bucket_of(ranks[ranks.len() - 1]));
    let offset = first_rank[lo_b];
    let mut next_slot: Vec<u32> = first_rank[lo_b..=hi_b].iter().map(|f| f - offset).collect();
    let mut keys = vec![0_u128; (first_rank[hi_b + 1] - offset) as usize];
    for ((i, &p), &sample) in (0..len32).zip(positions).zip(samples) {
        if let Some(slot) = bucket(p)
            .checked_sub(lo_b)
            .and_then(|b| next_slot.get_mut(b))
        {
            // Ordered by (position, index); the sample rides along in the low bits, sparing a
            // random read per rank later.
            let low = (u64::from(i) << 32) | if carried { sample as u64 } else { 0 };
            keys[*slot as usize] = (u128::from(total_order_bits(p)) << 64) | u128::from(low);
            *slot += 1;
        }
    }
    let mut out = Vec::with_capacity(ranks.len());
    let mut ranks = ranks.iter().map(|&r| r - start).peekable();
    for b in lo_b..=hi_b {
        let (first, end) = (first_rank[b] as usize, first_rank[b + 1] as usize);
        if ranks.peek().is_some_and(|&r| r < end) {
            let run = &mut keys[first - offset as usize..end - offset as usize];
            sort_small(run);
            while let Some(r) = ranks.next_if(|&r| r < end) {
                let key = run[r - first];
                out.push(if carried {
                    i64::from(key as u32)
                } else {
                    samples[(key >> 32) as u32 as usize]
                });
            }
        }
    }
    out
}

/// Insertion sort: a bucket holds a few keys.
fn sort_small(run: &mut [u128]) {
    for i in 1..run.len() {
        let key = run[i];
        let mut j = i;
        while j > 0 && run[j - 1] > key {
            run[j] = run[j - 1];
            j -= 1;
        }
        run[j] = key;
    }
}

/// Per bucket, the rank of its first element (prefix sums of the counts), plus the total.
fn first_ranks(buckets: impl Iterator<Item = usize>, count: usize) -> Vec<u32> {
    let mut first = vec![0_u32; count + 1];
    for b in buckets {
        first[b + 1] += 1;
    }
    for b in 1..=count {
        first[b] += first[b - 1];
    }
    first
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::shuffle::rng::Pcg64;

    /// Sample ids below and past `u32::MAX` pick the same ranks as the whole sort.
    #[test]
    fn wide_and_narrow_ids_match_the_whole_sort() {
        let mut rng = Pcg64::new(24);
        let n = 5000;
        let positions: Vec<f64> = rng
            .uniform(-40.0, 40.0, n)
            .iter()
            .enumerate()
            .map(|(i, d)| (i as f64 + d).max(0.0))
            .collect();
        for base in [0_i64, 1 << 33] {
            let samples: Vec<i64> = (0..n as i64)
                .map(|i| base + (i * 7919) % n as i64)
                .collect();
            let whole = sort_by_position(&samples, &positions);
            for ranks in [vec![0, 1, 2], vec![100, 2500, 2501, 4999], (0..n).collect()] {
                let want: Vec<i64> = ranks.iter().map(|&r| whole[r]).collect();
                assert_eq!(
                    pick_in_window(&samples, &positions, 0, &ranks),
                    want,
                    "{base}"
                );
            }
        }
    }
}
