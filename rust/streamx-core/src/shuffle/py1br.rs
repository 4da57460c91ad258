//! `py1br`: per canonical node, shuffle within staggered blocks of random size.

use super::rng::Pcg64;
use super::spans::{node_bounds, NodeSpans};
use super::Parts;
use crate::Result;

/// Block bounds `[int(0.75 * block), int(1.25 * block))` as Python computes them.
pub(crate) fn block_bounds(block_size: usize) -> (i64, i64) {
    let b = block_size as f64;
    ((0.75 * b) as i64, (1.25 * b) as i64)
}

/// Spans laid out per canonical node, then shuffled within staggered, randomly sized blocks.
/// Only the `needed` nodes are laid out; the others just advance the generator.
pub(crate) fn shuffle(
    sizes: &[i64],
    num_nodes: usize,
    seed: u128,
    epoch_seed: u128,
    block_size: usize,
    needed: &[bool],
) -> Result<Parts> {
    let NodeSpans {
        spans,
        groups,
        total,
        mut epoch_rng,
    } = NodeSpans::new(sizes, num_nodes, seed, epoch_seed);
    let (lo, hi) = block_bounds(block_size);
    let mut stagger = Vec::with_capacity(num_nodes);
    for _ in 0..num_nodes {
        stagger.push(epoch_rng.integers(0, lo)?);
    }
    let bounds = node_bounds(total, num_nodes);
    // Nodes after the last needed one draw nothing anyone reads.
    let last = needed.iter().rposition(|&n| n).map_or(0, |k| k + 1);
    let mut parts = Vec::with_capacity(groups.len());
    for (node, &(a, b)) in groups[..last].iter().enumerate() {
        let (start, stop) = (bounds[node], bounds[node + 1]);
        let blocks = node_blocks(&mut epoch_rng, start, stop, stagger[node], (lo, hi))?;
        if !needed[node] {
            for (begin, end) in blocks {
                epoch_rng.skip_shuffle((end - begin) as usize);
            }
            parts.push(None);
            continue;
        }
        let mut ids: Vec<i64> = Vec::with_capacity((stop - start) as usize);
        for &(begin, end) in &spans[a..b] {
            ids.extend(begin..end);
        }
        for (begin, end) in blocks {
            epoch_rng.shuffle(&mut ids[(begin - start) as usize..(end - start) as usize]);
        }
        parts.push(Some(ids));
    }
    parts.resize(groups.len(), None);
    Ok(parts)
}

/// The staggered block ranges covering `[start, stop)`, all drawn before any is shuffled.
fn node_blocks(
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
