//! `py1e` (streaming's default): per canonical node, shuffle each span, then spread every
//! span's samples by a bounded uniform offset and sort by the jittered positions.

mod count_ahead;
mod draws_file;
pub(crate) mod draws_store;
#[cfg(test)]
mod draws_tests;
mod found;
mod lazy;
#[cfg(test)]
mod lock_tests;
#[cfg(test)]
mod marks_resume_tests;
mod node_draws;
mod pick;
#[cfg(test)]
mod pick_tests;
#[cfg(streamx_ifma)]
mod pick_wide;
mod pipeline;
mod rank;
mod resume_marks;
mod seeded;
mod sort;
mod window;

use super::py1br::block_bounds;
use super::rng::Pcg64;
use super::spans::{NodeSpans, Span};
use super::{Parts, Want};
use crate::warning::{Warning, Warnings};
use crate::{Error, Result};

pub use count_ahead::{count_every_node, spawn_count_every_node};
pub use draws_store::{CountCache, CountCacheStats};
pub(crate) use lazy::LazyPy1e;
use pipeline::Laid;
pub use resume_marks::resume_marks;
use sort::{jittered_positions, node_samples};
use window::pick_node;

const EMPTY_NODE: &str = "The number of samples assigned to a canonical node is 0. This very \
likely indicates that the number of samples in this stream is less than the number of canonical \
nodes, which is {ncn}. Please check your index.json file and ensure that your dataset has been \
written out correctly. If this was intended, reduce num_canonical_nodes.";

/// streaming fails at the first node that is empty or whose first block draw fails (an empty
/// block range): every node is checked up front, since trailing ones may not be visited.
pub(crate) fn check_nodes(
    spans: &[Span],
    groups: &[(usize, usize)],
    epoch_rng: &Pcg64,
    bounds: (i64, i64),
    num_nodes: usize,
) -> Result<()> {
    for &(a, b) in groups {
        if spans[a..b].iter().all(|&(begin, end)| begin == end) {
            let msg = EMPTY_NODE.replace("{ncn}", &num_nodes.to_string());
            return Err(Error::InvalidArgument(msg));
        }
        epoch_rng.clone().integers(bounds.0, bounds.1)?;
    }
    Ok(())
}

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
    check_nodes(&spans, &groups, &epoch_rng, bounds, num_nodes)?;
    // Nodes after the last wanted one matter only for the warning; see `tail_warns`.
    let last = Want::end(wants);
    let mut small_block = false;
    let mut parts = pipeline::lay_out(last, |i| {
        let (a, b) = groups[i];
        let node = &spans[a..b];
        Ok(match wants[i] {
            Want::Skip => {
                skip_node(&mut epoch_rng, node, bounds, &mut small_block)?;
                Laid::Done(None)
            }
            Want::At(ranks) => Laid::Done(Some(pick_node(
                &mut epoch_rng,
                node,
                bounds,
                &mut small_block,
                ranks,
            )?)),
            Want::All => {
                let samples = node_samples(&mut epoch_rng, node);
                let positions = jittered_positions(&mut epoch_rng, node, bounds, &mut small_block)?;
                Laid::Sort(samples, positions)
            }
        })
    })?;
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

/// Draws one span's block size and returns the range its shifts are drawn from: half the room
/// the block leaves around the span, kept inside the node.
pub(super) fn shift_range(
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
