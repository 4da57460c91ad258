//! The samples at given ranks of a window's jittered positions, without sorting all of it.

use super::sort::{sort_by_position, total_order_bits};

/// Position units per bucket.
const FINE: usize = 4;

/// `sort_by_position` over the whole node, at the sorted `ranks`, given only the samples and
/// positions of the node's indices `start..start + len`, all other samples sorting entirely
/// before (indices below `start`) or after the wanted ranks. Bucket counts on
/// `floor(position) / FINE` give each bucket's first rank; only the buckets holding a wanted
/// rank are gathered (next to each other, so the keys stay few and in cache) and sorted. Window lengths must fit in `u32` for the bucketed path
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
    // Positions are never negative and lie below 2^53: one signed conversion, no saturation.
    let floor = |p: f64| (p as i64).max(0) as usize;
    let (mut low, mut high) = (usize::MAX, 0);
    for &p in positions {
        low = low.min(floor(p));
        high = high.max(floor(p));
    }
    let base = low / FINE;
    let bucket = |p: f64| floor(p) / FINE - base;
    let count = high / FINE - base + 1;
    let first_rank = first_ranks(positions.iter().map(|&p| bucket(p)), count);
    let runs = wanted_buckets(&first_rank, start, ranks);
    let spare = runs
        .last()
        .map_or(0, |&(b, at)| at + first_rank[b + 1] - first_rank[b]);
    // Per bucket, where its next key goes. A bucket without a wanted rank writes its keys to
    // one spare key past the others, again and again: the buckets of positions in node index
    // order are random, and a branch on them would be mispredicted about every other time.
    let mut next_slot = vec![spare; count];
    for &(b, at) in &runs {
        next_slot[b] = at;
    }
    let mut keys = vec![0_u128; spare as usize + 1];
    for ((i, &p), &sample) in (0..len32).zip(positions).zip(samples) {
        let b = bucket(p);
        let slot = next_slot[b];
        // Ordered by (position, index); the sample rides along in the low bits, sparing a
        // random read per rank later.
        let low = (u64::from(i) << 32) | if carried { sample as u64 } else { 0 };
        keys[slot as usize] = (u128::from(total_order_bits(p)) << 64) | u128::from(low);
        next_slot[b] = slot + u32::from(slot != spare);
    }
    let mut out = Vec::with_capacity(ranks.len());
    let mut ranks = ranks.iter().map(|&r| r - start).peekable();
    for (b, at) in runs {
        let (first, end) = (first_rank[b] as usize, first_rank[b + 1] as usize);
        let run = &mut keys[at as usize..at as usize + end - first];
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
    out
}

/// Per bucket holding a wanted rank (in order), the bucket and where its keys start among
/// those of the buckets before it; `ranks` are sorted.
fn wanted_buckets(first_rank: &[u32], start: usize, ranks: &[usize]) -> Vec<(usize, u32)> {
    let mut runs: Vec<(usize, u32)> = Vec::new();
    let (mut b, mut keys) = (0, 0);
    for &r in ranks {
        // The bucket whose ranks hold `r`: empty buckets are passed over.
        while first_rank[b + 1] as usize <= r - start {
            b += 1;
        }
        if runs.last().is_none_or(|&(last, _)| last != b) {
            runs.push((b, keys));
            keys += first_rank[b + 1] - first_rank[b];
        }
    }
    runs
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

    /// Runs of wanted ranks far apart, as a worker's batches are, over positions with empty
    /// buckets between them, and a window that starts past rank 0.
    #[test]
    fn sparse_ranks_over_gapped_positions_match_the_whole_sort() {
        let mut rng = Pcg64::new(26);
        let n = 20_000;
        let positions: Vec<f64> = rng
            .uniform(-30.0, 30.0, n)
            .iter()
            .enumerate()
            .map(|(i, d)| ((i / 50 * 90 + i % 50) as f64 + d).max(0.0))
            .collect();
        let samples: Vec<i64> = (0..n as i64).map(|i| (i * 7919) % n as i64).collect();
        let whole = sort_by_position(&samples, &positions);
        let start = 1_000_000;
        for (run, every) in [(32, 512), (1, 97), (5, 5), (300, 4000)] {
            let ranks: Vec<usize> = (0..n)
                .filter(|r| r % every < run)
                .map(|r| r + start)
                .collect();
            let want: Vec<i64> = ranks.iter().map(|&r| whole[r - start]).collect();
            let got = pick_in_window(&samples, &positions, start, &ranks);
            assert_eq!(got, want, "runs of {run} every {every}");
        }
    }
}
