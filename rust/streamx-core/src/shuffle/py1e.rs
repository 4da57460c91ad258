//! `py1e` (streaming's default): per canonical node, shuffle each span, then spread every
//! span's samples by a bounded uniform offset and sort by the jittered positions.

use super::py1br::block_bounds;
use super::rng::Pcg64;
use super::spans::{NodeSpans, Span};
use super::{Parts, Want};
use crate::warning::{Warning, Warnings};
use crate::{Error, Result};

const EMPTY_NODE: &str = "The number of samples assigned to a canonical node is 0. This very \
likely indicates that the number of samples in this stream is less than the number of canonical \
nodes, which is {ncn}. Please check your index.json file and ensure that your dataset has been \
written out correctly. If this was intended, reduce num_canonical_nodes.";

const SMALL_BLOCK: &str = "Shuffle block size was smaller than shard size for some shards. This \
will result in these shards not being shuffled with other shards. Set shuffle_block_size to a \
larger value for a higher quality shuffle.";

/// The py1e permutation at the wanted positions (skipped nodes before the last wanted one only
/// advance the generator); pushes streaming's warning when a block is smaller than a span.
pub(crate) fn shuffle(
    sizes: &[i64],
    num_nodes: usize,
    seed: u128,
    epoch_seed: u128,
    block_size: usize,
    wants: &[Want<'_>],
    warnings: &mut Warnings,
) -> Result<Parts> {
    let NodeSpans {
        spans,
        groups,
        mut epoch_rng,
        ..
    } = NodeSpans::new(sizes, num_nodes, seed, epoch_seed);
    let bounds = block_bounds(block_size);
    // streaming fails at the first node that is empty or whose first block draw fails (an
    // empty block range); check every node up front, since trailing ones may not be visited.
    for &(a, b) in &groups {
        if spans[a..b].iter().all(|&(begin, end)| begin == end) {
            let msg = EMPTY_NODE.replace("{ncn}", &num_nodes.to_string());
            return Err(Error::InvalidArgument(msg));
        }
        epoch_rng.clone().integers(bounds.0, bounds.1)?;
    }
    // Nodes after the last wanted one matter only for the warning; see `tail_warns`.
    let last = Want::end(wants);
    let mut small_block = false;
    let mut parts = Vec::with_capacity(groups.len());
    for (&(a, b), &want) in groups[..last].iter().zip(wants) {
        let node = &spans[a..b];
        if matches!(want, Want::Skip) {
            skip_node(&mut epoch_rng, node, bounds, &mut small_block)?;
            parts.push(None);
            continue;
        }
        if let Want::At(ranks) = want {
            parts.push(Some(pick_node(
                &mut epoch_rng,
                node,
                bounds,
                &mut small_block,
                ranks,
            )?));
            continue;
        }
        let samples = node_samples(&mut epoch_rng, node);
        let positions = jittered_positions(&mut epoch_rng, node, bounds, &mut small_block)?;
        parts.push(Some(sort_by_position(&samples, &positions)));
    }
    parts.resize(groups.len(), None);
    let tail = &spans[groups.get(last).map_or(spans.len(), |g| g.0)..];
    if !small_block && !tail.is_empty() {
        if let Some(warns) = tail_warns(tail, bounds) {
            small_block = warns;
        } else {
            // Undecided without the draws: run the generator through the tail.
            for &(a, b) in &groups[last..] {
                skip_node(&mut epoch_rng, &spans[a..b], bounds, &mut small_block)?;
            }
        }
    }
    if small_block {
        warnings.push(Warning::user(SMALL_BLOCK));
    }
    Ok(parts)
}

/// Whether spans after the last needed node raise the small-block warning, when their sizes
/// alone decide it: a span at least as large as any block (`hi - 1`) always warns, one
/// smaller than every block (`lo`) never does. `None` when some span's outcome rests on its
/// random block size. Errors the draws would raise (an empty block range) are not decided here.
fn tail_warns(tail: &[Span], (lo, hi): (i64, i64)) -> Option<bool> {
    if lo >= hi {
        return None;
    }
    let mut undecided = false;
    for &(begin, end) in tail {
        let size = end - begin;
        if size >= hi {
            return Some(true);
        }
        undecided |= size >= lo;
    }
    (!undecided).then_some(false)
}

/// Consumes a node's draws without laying it out: the span shuffles, then per span the block
/// size (which decides the warning) and the uniform shifts.
fn skip_node(
    rng: &mut Pcg64,
    node: &[Span],
    (lo, hi): (i64, i64),
    small_block: &mut bool,
) -> Result<()> {
    for &(begin, end) in node {
        rng.skip_shuffle((end - begin) as usize);
    }
    for &(begin, end) in node {
        let size = end - begin;
        if rng.integers(lo, hi)? < size {
            *small_block = true;
        }
        rng.skip_uniform(size as usize);
    }
    Ok(())
}

/// The node's sample ids, span by span, each span shuffled.
fn node_samples(rng: &mut Pcg64, node: &[Span]) -> Vec<i64> {
    let mut samples = Vec::new();
    for &(begin, end) in node {
        let at = samples.len();
        samples.extend(begin..end);
        rng.shuffle(&mut samples[at..]);
    }
    samples
}

/// Positions `0..n` plus, per span, a uniform shift confined to the node and to a random block.
fn jittered_positions(
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

/// Draws one span's block size and returns the range its shifts are drawn from: half the room
/// the block leaves around the span, kept inside the node.
fn shift_range(
    rng: &mut Pcg64,
    (lo, hi): (i64, i64),
    offset: usize,
    size: usize,
    total: usize,
    small_block: &mut bool,
) -> Result<(f64, f64)> {
    let block = rng.integers(lo, hi)?;
    let mut cutoff = (block - size as i64) as f64 / 2.0;
    if cutoff < 0.0 {
        cutoff = 0.0;
        *small_block = true;
    }
    // Python's max/min keep the first argument on ties; values are equal then anyway.
    let low = f64_max(-cutoff, -(offset as f64));
    let high = f64_min(cutoff, (total - offset - size) as f64);
    Ok((low, high))
}

fn f64_max(a: f64, b: f64) -> f64 {
    if b > a {
        b
    } else {
        a
    }
}

fn f64_min(a: f64, b: f64) -> f64 {
    if b < a {
        b
    } else {
        a
    }
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
fn sort_by_position(samples: &[i64], positions: &[f64]) -> Vec<i64> {
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

/// Samples per bucket of [`pick_in_window`].
const FINE: usize = 4;

/// The node's order at the sorted, unique, non-empty `ranks`, drawing exactly what the whole
/// node draws but laying out only a window of it.
///
/// A sample's shift never exceeds its span's largest possible cutoff, `reach`, so the sample
/// of rank `r` has an index within `2 * reach` of `r`. Only the samples whose index lies within
/// a few `reach` of the wanted ranks are shuffled into place and jittered; every sample before
/// the window is known to sort before every wanted one, and every sample after it, after.
fn pick_node(
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
fn total_order_bits(x: f64) -> u64 {
    let bits = x.to_bits();
    if bits >> 63 == 1 {
        !bits
    } else {
        bits | (1 << 63)
    }
}
