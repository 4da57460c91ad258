//! `py1e` (streaming's default): per canonical node, shuffle each span, then spread every
//! span's samples by a bounded uniform offset and sort by the jittered positions.

use rayon::prelude::*;

use super::py1br::block_bounds;
use super::rng::Pcg64;
use super::spans::{NodeSpans, Span};
use crate::batching::pool::{self, PAR_THRESHOLD};
use crate::warning::{Warning, Warnings};
use crate::{Error, Result};

const EMPTY_NODE: &str = "The number of samples assigned to a canonical node is 0. This very \
likely indicates that the number of samples in this stream is less than the number of canonical \
nodes, which is {ncn}. Please check your index.json file and ensure that your dataset has been \
written out correctly. If this was intended, reduce num_canonical_nodes.";

const SMALL_BLOCK: &str = "Shuffle block size was smaller than shard size for some shards. This \
will result in these shards not being shuffled with other shards. Set shuffle_block_size to a \
larger value for a higher quality shuffle.";

/// The py1e permutation; pushes streaming's warning when a block is smaller than a span.
pub(crate) fn shuffle(
    sizes: &[i64],
    num_nodes: usize,
    seed: u128,
    epoch_seed: u128,
    block_size: usize,
    warnings: &mut Warnings,
) -> Result<Vec<i64>> {
    let NodeSpans {
        spans,
        groups,
        total,
        mut epoch_rng,
    } = NodeSpans::new(sizes, num_nodes, seed, epoch_seed);
    let bounds = block_bounds(block_size);
    let mut small_block = false;
    // Draws are sequential (one generator for every node); the sorts are independent.
    let mut nodes = Vec::with_capacity(groups.len());
    for &(a, b) in &groups {
        let node = &spans[a..b];
        if node.iter().all(|&(begin, end)| begin == end) {
            let msg = EMPTY_NODE.replace("{ncn}", &num_nodes.to_string());
            return Err(Error::InvalidArgument(msg));
        }
        let samples = node_samples(&mut epoch_rng, node);
        let positions = jittered_positions(&mut epoch_rng, node, bounds, &mut small_block)?;
        nodes.push((samples, positions));
    }
    if small_block {
        warnings.push(Warning::user(SMALL_BLOCK));
    }
    let sorted: Vec<Vec<i64>> = if total < PAR_THRESHOLD as i64 {
        nodes
            .into_iter()
            .map(|(s, p)| sort_by_position(&s, &p))
            .collect()
    } else {
        pool::install(|| {
            nodes
                .into_par_iter()
                .map(|(s, p)| sort_by_position(&s, &p))
                .collect()
        })
    };
    Ok(sorted.concat())
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
    (lo, hi): (i64, i64),
    small_block: &mut bool,
) -> Result<Vec<f64>> {
    let total: i64 = node.iter().map(|&(b, e)| e - b).sum();
    let mut positions: Vec<f64> = (0..total).map(|i| i as f64).collect();
    let mut offset = 0_i64;
    for &(begin, end) in node {
        let size = end - begin;
        let block = rng.integers(lo, hi)?;
        let mut cutoff = (block - size) as f64 / 2.0;
        if cutoff < 0.0 {
            cutoff = 0.0;
            *small_block = true;
        }
        // Python's max/min keep the first argument on ties; values are equal then anyway.
        let low = f64_max(-cutoff, -offset as f64);
        let high = f64_min(cutoff, (total - offset - size) as f64);
        let shifts = rng.uniform(low, high, size as usize);
        let at = offset as usize;
        for (p, d) in positions[at..at + size as usize].iter_mut().zip(shifts) {
            *p += d;
        }
        offset += size;
    }
    Ok(positions)
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
fn sort_by_position(samples: &[i64], positions: &[f64]) -> Vec<i64> {
    // One integer key per sample, (position in total order, index): the keys are unique, so an
    // unstable sort yields exactly the stable (position, index) order, and fast.
    let mut keys: Vec<u128> = positions
        .iter()
        .zip(0_u128..)
        .map(|(&p, i)| (u128::from(total_order_bits(p)) << 64) | i)
        .collect();
    if keys.len() < PAR_THRESHOLD {
        keys.sort_unstable();
    } else {
        keys.par_sort_unstable();
    }
    keys.into_iter()
        .map(|k| samples[(k as u64) as usize])
        .collect()
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
