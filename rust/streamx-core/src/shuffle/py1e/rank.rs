//! The samples at given ranks of a window's jittered positions, without sorting all of it.

use super::sort::{sort_by_position, total_order_bits};

/// Position units per bucket.
const FINE: usize = 4;

/// `sort_by_position` over the whole node, at the sorted `ranks`, given only the samples and
/// positions of the node's indices `start..start + len`, all other samples sorting entirely
/// before (indices below `start`) or after the wanted ranks. Bucket counts on
/// `floor(position) / FINE` give each bucket's first rank; only the buckets holding a wanted
/// rank are gathered and sorted. Sample ids and window lengths must fit in `u32` for the
/// bucketed path; otherwise the window is sorted whole.
pub(super) fn pick_in_window(
    samples: &[i64],
    positions: &[f64],
    start: usize,
    ranks: &[usize],
) -> Vec<i64> {
    let fits = |&s: &i64| u32::try_from(s).is_ok();
    let (Ok(len32), true) = (u32::try_from(positions.len()), samples.iter().all(fits)) else {
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
    let (mut cursor, wanted) = wanted_buckets(&first_rank, ranks.iter().map(|&r| r - start));
    let mut keys = vec![0_u128; cursor.iter().map(|c| c.1).sum::<u32>() as usize];
    for ((i, &p), &sample) in (0..len32).zip(positions).zip(samples) {
        let (slot, left) = &mut cursor[bucket(p)];
        if *left > 0 {
            // Ordered by (position, index); the sample rides along in the low bits, sparing a
            // random read per rank later.
            let low = (u64::from(i) << 32) | sample as u64;
            keys[*slot as usize] = (u128::from(total_order_bits(p)) << 64) | u128::from(low);
            *slot += 1;
            *left -= 1;
        }
    }
    let mut out = Vec::with_capacity(ranks.len());
    let (mut at, mut next) = (0, 0);
    for b in wanted {
        let (first, end) = (first_rank[b] as usize, first_rank[b + 1] as usize);
        let run = &mut keys[at..at + end - first];
        run.sort_unstable();
        while next < ranks.len() && ranks[next] - start < end {
            let key = run[ranks[next] - start - first];
            out.push(i64::from(key as u32));
            next += 1;
        }
        at += end - first;
    }
    out
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

/// The buckets holding the sorted `ranks`, found in one walk over both, each given a compact
/// range of slots: per bucket, `(next free slot, slots left)`; and the wanted buckets in order.
fn wanted_buckets(
    first_rank: &[u32],
    ranks: impl Iterator<Item = usize>,
) -> (Vec<(u32, u32)>, Vec<usize>) {
    let mut cursor = vec![(0, 0); first_rank.len() - 1];
    let mut wanted = Vec::new();
    let (mut b, mut slots) = (0, 0);
    for r in ranks {
        while first_rank[b + 1] as usize <= r {
            b += 1;
        }
        if wanted.last() != Some(&b) {
            wanted.push(b);
            let size = first_rank[b + 1] - first_rank[b];
            cursor[b] = (slots, size);
            slots += size;
        }
    }
    (cursor, wanted)
}
