//! `py1br`: per canonical node, shuffle within staggered blocks of random size.

use super::rng::Pcg64;
use super::spans::{node_bounds, NodeSpans, Span};
use super::{Parts, Picker, Want};
use crate::Result;

/// Block bounds `[int(0.75 * block), int(1.25 * block))` as Python computes them.
pub(crate) fn block_bounds(block_size: usize) -> (i64, i64) {
    let b = block_size as f64;
    ((0.75 * b) as i64, (1.25 * b) as i64)
}

/// Spans laid out per canonical node, then shuffled within staggered, randomly sized blocks.
/// Only the blocks holding wanted positions are laid out; the rest, and skipped nodes before
/// the last wanted one, just advance the generator.
pub(crate) fn shuffle(
    sizes: &[i64],
    num_nodes: usize,
    seed: u128,
    epoch_seed: u128,
    block_size: usize,
    wants: &[Want<'_>],
) -> Result<Parts> {
    let NodeSpans {
        spans,
        groups,
        total,
        mut epoch_rng,
    } = NodeSpans::new(sizes, num_nodes, seed, epoch_seed);
    let (lo, hi) = block_bounds(block_size);
    let stagger = staggers(&mut epoch_rng, num_nodes, lo)?;
    let bounds = node_bounds(total, num_nodes);
    let mut parts = Vec::with_capacity(groups.len());
    for (node, (&(a, b), &want)) in groups[..Want::end(wants)].iter().zip(wants).enumerate() {
        let (start, stop) = (bounds[node], bounds[node + 1]);
        let blocks = node_blocks(&mut epoch_rng, start, stop, stagger[node], (lo, hi))?;
        let laid = Laid::new(&spans[a..b]);
        let mut pick = Picker::new(want);
        let mut buf = Vec::new();
        // Blocks may stop short of the node's end (the stagger counts against the last one);
        // samples after them keep their laid-out order.
        let keep = |from: usize, to: usize, pick: &mut Picker<'_>, buf: &mut Vec<i64>| {
            if want.any_in(from, to) {
                buf.clear();
                laid.extend(from, to, buf);
                pick.take(from, buf);
            }
        };
        let mut covered = 0;
        for window in windows(&blocks) {
            let (from, to) = (
                (window[0].0 - start) as usize,
                (window_end(window) - start) as usize,
            );
            keep(covered, from, &mut pick, &mut buf);
            covered = to;
            if !want.any_in(from, to) {
                for &(begin, end) in window {
                    epoch_rng.skip_shuffle((end - begin) as usize);
                }
                continue;
            }
            buf.clear();
            laid.extend(from, to, &mut buf);
            for &(begin, end) in window {
                let (begin, end) = (
                    (begin - start) as usize - from,
                    (end - start) as usize - from,
                );
                epoch_rng.shuffle(&mut buf[begin..end]);
            }
            pick.take(from, &buf);
        }
        keep(covered, (stop - start) as usize, &mut pick, &mut buf);
        parts.push((!matches!(want, Want::Skip)).then(|| pick.finish()));
    }
    parts.resize(groups.len(), None);
    Ok(parts)
}

/// Each canonical node's stagger, drawn below the smallest block size before any block.
pub(super) fn staggers(rng: &mut Pcg64, num_nodes: usize, lo: i64) -> Result<Vec<i64>> {
    (0..num_nodes).map(|_| rng.integers(0, lo)).collect()
}

/// The staggered block ranges covering `[start, stop)`, all drawn before any is shuffled.
pub(super) fn node_blocks(
    rng: &mut Pcg64,
    start: i64,
    stop: i64,
    stagger: i64,
    (lo, hi): (i64, i64),
) -> Result<Vec<(i64, i64)>> {
    let mut blocks = Vec::new();
    let mut end = start;
    while end < stop {
        let size = rng.integers(lo, hi)?;
        let begin = (end - stagger).max(start);
        let block_end = (end + size - stagger).min(stop);
        blocks.push((begin, block_end));
        end += block_end - begin;
    }
    Ok(blocks)
}

/// Runs of blocks that overlap (the stagger makes the second block reach back into the first),
/// which must be shuffled together and in order; different runs share no positions.
pub(super) fn windows(blocks: &[(i64, i64)]) -> impl Iterator<Item = &[(i64, i64)]> {
    let mut rest = blocks;
    std::iter::from_fn(move || {
        let (&first, _) = rest.split_first()?;
        let mut end = first.1;
        let mut len = 1;
        while len < rest.len() && rest[len].0 < end {
            end = end.max(rest[len].1);
            len += 1;
        }
        let (window, tail) = rest.split_at(len);
        rest = tail;
        Some(window)
    })
}

pub(super) fn window_end(window: &[(i64, i64)]) -> i64 {
    window.iter().map(|&(_, end)| end).max().unwrap_or(0)
}

/// A node's spans laid end to end, read by offset.
pub(super) struct Laid<'a> {
    spans: &'a [Span],
    /// Offset of each span's first sample.
    starts: Vec<usize>,
}

impl<'a> Laid<'a> {
    pub(super) fn new(spans: &'a [Span]) -> Self {
        let mut at = 0;
        let starts = spans
            .iter()
            .map(|&(begin, end)| {
                at += (end - begin) as usize;
                at - (end - begin) as usize
            })
            .collect();
        Laid { spans, starts }
    }

    /// Appends the sample ids at offsets `from..to`.
    pub(super) fn extend(&self, from: usize, to: usize, out: &mut Vec<i64>) {
        let mut i = self
            .starts
            .partition_point(|&s| s <= from)
            .saturating_sub(1);
        let mut at = from;
        while at < to && i < self.spans.len() {
            let (begin, end) = self.spans[i];
            let skip = at.saturating_sub(self.starts[i]) as i64;
            let take = (to - at).min((end - begin - skip).max(0) as usize);
            out.extend(begin + skip..begin + skip + take as i64);
            at += take;
            i += 1;
        }
    }
}
