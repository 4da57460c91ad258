//! One node's order at a few ranks, laying out only a window of its samples.

use super::shift_range;
use super::sort::{sort_by_position, total_order_bits};
use crate::shuffle::rng::Pcg64;
use crate::shuffle::spans::Span;
use crate::Result;

/// Samples per bucket of [`pick_in_window`].
const FINE: usize = 4;

/// The node's order at the sorted, unique, non-empty `ranks`, drawing exactly what the whole
/// node draws but laying out only a window of it.
///
/// A sample's shift never exceeds its span's largest possible cutoff, `reach`, so the sample
/// of rank `r` has an index within `2 * reach` of `r`. Only the samples whose index lies within
/// a few `reach` of the wanted ranks are shuffled into place and jittered; every sample before
/// the window is known to sort before every wanted one, and every sample after it, after.
pub(super) fn pick_node(
    rng: &mut Pcg64,
    node: &[Span],
    (lo, hi): (i64, i64),
    small_block: &mut bool,
    ranks: &[usize],
) -> Result<Vec<i64>> {
    let n = node.iter().map(|&(b, e)| (e - b) as usize).sum::<usize>();
    // The cutoff is (block - size) / 2 with block < hi; +1 covers rounding.
    let reach = node
        .iter()
        .map(|&(b, e)| (hi - 1 - (e - b)).max(0) as usize / 2 + 1)
        .max()
        .unwrap_or(1);
    let margin = 4 * reach + 2 * FINE;
    let (first, last) = (ranks[0], ranks[ranks.len() - 1]);
    let window = first.saturating_sub(margin)..(last + margin + 1).min(n);
    // Each span's part of the window, as offsets into the span.
    let mut offset = 0;
    let parts: Vec<(usize, usize)> = node
        .iter()
        .map(|&(b, e)| {
            let size = (e - b) as usize;
            let from = window.start.clamp(offset, offset + size) - offset;
            let to = window.end.clamp(offset, offset + size) - offset;
            offset += size;
            (from, to)
        })
        .collect();
    let mut samples = Vec::with_capacity(window.len());
    let mut buf = Vec::new();
    for (&(begin, end), &(from, to)) in node.iter().zip(&parts) {
        if from < to {
            buf.clear();
            buf.extend(begin..end);
            rng.shuffle_from(&mut buf, from);
            samples.extend_from_slice(&buf[from..to]);
        } else {
            rng.skip_shuffle((end - begin) as usize);
        }
    }
    let mut positions = Vec::with_capacity(window.len());
    let mut offset = 0_usize;
    // Whether every shift in the window is zero (blocks no larger than their spans, or shifts
    // clamped at the node's ends): then the positions are the indices and so is the order.
    let mut unshifted = true;
    for (&(begin, end), &(from, to)) in node.iter().zip(&parts) {
        let size = (end - begin) as usize;
        let (low, high) = shift_range(rng, (lo, hi), offset, size, n, small_block)?;
        rng.skip_uniform(from);
        if from < to {
            unshifted &= low == 0.0 && high == 0.0;
            let shifts = rng.uniform(low, high, to - from);
            positions.extend((offset + from..).zip(shifts).map(|(i, d)| i as f64 + d));
        }
        rng.skip_uniform(size - to.max(from));
        offset += size;
    }
    if unshifted {
        return Ok(ranks.iter().map(|&r| samples[r - window.start]).collect());
    }
    Ok(pick_in_window(&samples, &positions, window.start, ranks))
}

/// `sort_by_position` over the whole node, at the sorted `ranks`, given only the samples and
/// positions of the node's indices `start..start + len`, all other samples sorting entirely
/// before (indices below `start`) or after the wanted ranks. Bucket counts on
/// `floor(position) / FINE` give each bucket's first rank; only the buckets holding a wanted
/// rank are gathered and sorted.
fn pick_in_window(samples: &[i64], positions: &[f64], start: usize, ranks: &[usize]) -> Vec<i64> {
    let len = positions.len();
    let Ok(len32) = u32::try_from(len) else {
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
    let buckets = high / FINE - base + 1;
    let bucket = |p: f64| floor(p) / FINE - base;
    // Ranks within the window (the samples before it all come first).
    let mut first_rank = vec![0_u32; buckets + 1];
    for &p in positions {
        first_rank[bucket(p) + 1] += 1;
    }
    for b in 1..=buckets {
        first_rank[b] += first_rank[b - 1];
    }
    // The wanted buckets, each given a compact slot range; `cursor[b]` is the next free slot.
    let mut cursor = vec![u32::MAX; buckets];
    let mut wanted = Vec::new();
    let mut slots = 0;
    for &r in ranks {
        let b = first_rank.partition_point(|&f| f as usize <= r - start) - 1;
        if wanted.last() != Some(&b) {
            wanted.push(b);
            cursor[b] = slots;
            slots += first_rank[b + 1] - first_rank[b];
        }
    }
    let mut keys = vec![0_u128; slots as usize];
    for (i, &p) in (0..len32).zip(positions) {
        let slot = &mut cursor[bucket(p)];
        if *slot != u32::MAX {
            keys[*slot as usize] = (u128::from(total_order_bits(p)) << 64) | u128::from(i);
            *slot += 1;
        }
    }
    let mut out = Vec::with_capacity(ranks.len());
    let (mut at, mut next) = (0, 0);
    for &b in &wanted {
        let (first, end) = (
            first_rank[b] as usize + start,
            first_rank[b + 1] as usize + start,
        );
        let run = &mut keys[at..at + end - first];
        run.sort_unstable();
        while next < ranks.len() && ranks[next] < end {
            let key = run[ranks[next] - first];
            out.push(samples[(key as u64) as usize]);
            next += 1;
        }
        at += end - first;
    }
    out
}
