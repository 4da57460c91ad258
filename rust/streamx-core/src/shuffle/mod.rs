//! Shuffle algorithms: the permutation of a stream's resampled sample space for one epoch,
//! bit-exact with mosaicml-streaming 0.13.0 (`streaming.base.shuffle`).
//!
//! Every algorithm keeps a canonical node's samples inside that node's contiguous range of the
//! output, so a shuffle composes with the partition's elastic determinism. `seed` is fixed for
//! the run and `seed + epoch` seeds the per-epoch generator.

mod marks;
mod naive;
mod partial;
mod py1br;
mod py1br_lazy;
mod py1e;
mod py1s;
mod py1s_lazy;
mod py2s;
mod py2s_lazy;
mod py2s_run;
pub mod rng;
mod spans;
mod want;

#[cfg(test)]
mod lazy_tests;
#[cfg(test)]
mod marks_tests;

use std::fmt;
use std::str::FromStr;

use crate::warning::Warnings;
use crate::{Error, Result};
pub use partial::PartialShuffle;
pub use py1e::{
    count_every_node, resume_marks, spawn_count_every_node, CountCache, CountCacheStats,
};
pub(crate) use want::{Parts, Picker, Want};

/// streaming's default `shuffle_block_size` argument of `get_shuffle` (`1 << 18`).
pub const DEFAULT_BLOCK_SIZE: usize = 1 << 18;

/// A shuffle algorithm name accepted by mosaicml-streaming 0.13.0.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum ShuffleAlgo {
    /// One global permutation.
    Naive,
    /// Staggered random-size blocks per canonical node.
    Py1br,
    /// Per-span uniform jitter, then sort (streaming's default).
    Py1e,
    /// Shuffle span order and span contents per canonical node.
    Py1s,
    /// Two-level shuffle: a run-fixed scatter, then per-epoch shuffles.
    Py2s,
}

const VALID: &str = "naive, py1br, py1e, py1s, py2s";

impl FromStr for ShuffleAlgo {
    type Err = Error;

    /// Parses a name; anything else (including the removed `py1b`) is rejected, as streaming's
    /// `algos[algo]` lookup raises `KeyError`.
    fn from_str(name: &str) -> Result<Self> {
        Ok(match name {
            "naive" => ShuffleAlgo::Naive,
            "py1br" => ShuffleAlgo::Py1br,
            "py1e" => ShuffleAlgo::Py1e,
            "py1s" => ShuffleAlgo::Py1s,
            "py2s" => ShuffleAlgo::Py2s,
            _ => {
                return Err(Error::InvalidArgument(format!(
                    "Unknown shuffle algorithm {name:?}: expected one of {VALID}"
                )))
            }
        })
    }
}

impl fmt::Display for ShuffleAlgo {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            ShuffleAlgo::Naive => "naive",
            ShuffleAlgo::Py1br => "py1br",
            ShuffleAlgo::Py1e => "py1e",
            ShuffleAlgo::Py1s => "py1s",
            ShuffleAlgo::Py2s => "py2s",
        })
    }
}

/// The epoch's permutation of `0..sum(shard_sizes)`: entry `i` is the sample id that takes
/// position `i`. Warnings (py1e's small-block warning) are dropped; see [`get_shuffle_warn`].
///
/// ```
/// use streamx_core::shuffle::{get_shuffle, ShuffleAlgo};
/// let perm = get_shuffle(ShuffleAlgo::Py1s, &[3, 5, 4, 6], 2, 42, 0, 8).unwrap();
/// assert_eq!(perm, [10, 8, 9, 17, 16, 12, 13, 15, 14, 11, 0, 2, 1, 4, 7, 5, 6, 3]);
/// ```
pub fn get_shuffle(
    algo: ShuffleAlgo,
    shard_sizes: &[i64],
    num_canonical_nodes: usize,
    seed: u64,
    epoch: u64,
    block_size: usize,
) -> Result<Vec<i64>> {
    let mut warnings = Warnings::new();
    get_shuffle_warn(
        algo,
        shard_sizes,
        num_canonical_nodes,
        seed,
        epoch,
        block_size,
        &mut warnings,
    )
}

/// [`get_shuffle`], appending streaming's warnings to `warnings`.
pub fn get_shuffle_warn(
    algo: ShuffleAlgo,
    shard_sizes: &[i64],
    num_canonical_nodes: usize,
    seed: u64,
    epoch: u64,
    block_size: usize,
    warnings: &mut Warnings,
) -> Result<Vec<i64>> {
    let args = ShuffleArgs {
        algo,
        shard_sizes,
        num_canonical_nodes,
        seed,
        epoch,
        block_size,
    };
    get_shuffle_parts(&args, None, warnings)?.into_full()
}

/// The arguments of streaming's `get_shuffle`.
#[derive(Clone, Copy, Debug)]
pub struct ShuffleArgs<'a> {
    /// The algorithm.
    pub algo: ShuffleAlgo,
    /// Sizes of the shuffle units (shards, or pieces of resampled shards), in order.
    pub shard_sizes: &'a [i64],
    /// Canonical nodes.
    pub num_canonical_nodes: usize,
    /// The run's seed.
    pub seed: u64,
    /// The epoch (`seed + epoch` seeds the epoch's generator).
    pub epoch: u64,
    /// py1e/py1br block size.
    pub block_size: usize,
}
/// What every shuffle refuses before drawing: a negative shard size, or no canonical node.
fn check_args(args: &ShuffleArgs<'_>) -> Result<()> {
    if let Some(bad) = args.shard_sizes.iter().find(|&&s| s < 0) {
        return Err(Error::InvalidArgument(format!(
            "Shard sizes must be non-negative, but got: {bad}."
        )));
    }
    if args.num_canonical_nodes == 0 {
        return Err(Error::InvalidArgument(
            "`num_canonical_nodes` must be a positive integer, but got: 0.".to_string(),
        ));
    }
    Ok(())
}

/// [`get_shuffle_warn`] computing only the values at `positions` (sorted, unique; all when
/// `None`); draws, warnings and errors are exactly those of the whole shuffle.
pub fn get_shuffle_parts(
    args: &ShuffleArgs<'_>,
    positions: Option<&[i64]>,
    warnings: &mut Warnings,
) -> Result<PartialShuffle> {
    check_args(args)?;
    let ncn = args.num_canonical_nodes;
    let total: i64 = args.shard_sizes.iter().sum();
    if let Some(bad) = positions.and_then(|p| p.iter().find(|&&x| x < 0 || x >= total)) {
        return Err(Error::InvalidArgument(format!(
            "position {bad} is outside the epoch of {total} samples"
        )));
    }
    if args.algo == ShuffleAlgo::Naive {
        let perm = naive::shuffle(
            total as usize,
            u128::from(args.seed) + u128::from(args.epoch),
        );
        let (offsets, values) = match positions {
            None => (None, perm),
            Some(p) => (
                Some(p.iter().map(|&x| x as usize).collect()),
                p.iter().map(|&x| perm[x as usize]).collect(),
            ),
        };
        return Ok(PartialShuffle {
            bounds: vec![0, total],
            offsets: vec![offsets],
            parts: vec![Some(values)],
        });
    }
    let bounds = spans::node_bounds(total, ncn);
    let offsets: Vec<Option<Vec<usize>>> = (0..ncn)
        .map(|k| {
            positions.map(|p| {
                let (lo, hi) = (bounds[k], bounds[k + 1]);
                let from = p.partition_point(|&x| x < lo);
                let to = p.partition_point(|&x| x < hi);
                p[from..to].iter().map(|&x| (x - lo) as usize).collect()
            })
        })
        .collect();
    let wants: Vec<Want<'_>> = offsets
        .iter()
        .map(|o| match o {
            None => Want::All,
            Some(o) if o.is_empty() => Want::Skip,
            Some(o) => Want::At(o),
        })
        .collect();
    let (sizes, run_seed) = (args.shard_sizes, u128::from(args.seed));
    let epoch_seed = run_seed + u128::from(args.epoch);
    let block = args.block_size;
    let parts = match args.algo {
        ShuffleAlgo::Py1s => py1s::shuffle(sizes, ncn, run_seed, epoch_seed, &wants),
        ShuffleAlgo::Py2s => py2s::shuffle(sizes, ncn, run_seed, epoch_seed, &wants),
        ShuffleAlgo::Py1br => py1br::shuffle(sizes, ncn, run_seed, epoch_seed, block, &wants)?,
        ShuffleAlgo::Py1e => {
            py1e::shuffle(sizes, ncn, run_seed, epoch_seed, block, &wants, warnings)?
        }
        ShuffleAlgo::Naive => unreachable!("returned above"),
    };
    drop(wants);
    Ok(PartialShuffle {
        bounds,
        offsets,
        parts,
    })
}

/// A shuffle evaluated at a few positions at a time, its generator's progress kept between
/// calls so that no draw is counted twice: for a reader that walks its positions in pieces.
/// Every algorithm but `naive` has one; see [`LazyShuffle::new`].
pub struct LazyShuffle {
    /// Where each canonical node's positions start, plus the total.
    bounds: Vec<i64>,
    nodes: LazyNodes,
}

/// The algorithm that lays out a canonical node's ranks piece by piece.
enum LazyNodes {
    Py1e(Box<py1e::LazyPy1e>),
    Py1s(Box<py1s_lazy::LazyPy1s>),
    Py1br(Box<py1br_lazy::LazyPy1br>),
    Py2s(Box<py2s_lazy::LazyPy2s>),
}

impl LazyShuffle {
    /// Checks `args` as the whole shuffle does and pushes its warnings; `None` for `naive`
    /// (one permutation of the whole epoch: evaluated whole). Counted draws are read from and
    /// kept in `cache`, if given.
    pub fn new(
        args: &ShuffleArgs<'_>,
        cache: Option<&CountCache>,
        warnings: &mut Warnings,
    ) -> Result<Option<Self>> {
        check_args(args)?;
        let ncn = args.num_canonical_nodes;
        // A few words per canonical node and per span: refuse what cannot be held.
        let words = (ncn as u64).saturating_add(args.shard_sizes.len() as u64);
        crate::limits::probe_alloc(words.saturating_mul(128), "the shuffle's canonical nodes")?;
        let total: i64 = args.shard_sizes.iter().sum();
        let run_seed = u128::from(args.seed);
        let epoch_seed = run_seed + u128::from(args.epoch);
        let sizes = args.shard_sizes;
        let nodes = match args.algo {
            ShuffleAlgo::Py1s => LazyNodes::Py1s(Box::new(py1s_lazy::LazyPy1s::new(
                sizes, ncn, run_seed, epoch_seed, cache,
            ))),
            ShuffleAlgo::Py2s => LazyNodes::Py2s(Box::new(py2s_lazy::LazyPy2s::new(
                sizes, ncn, run_seed, epoch_seed, cache,
            ))),
            ShuffleAlgo::Py1br => LazyNodes::Py1br(Box::new(py1br_lazy::LazyPy1br::new(
                sizes,
                ncn,
                run_seed,
                epoch_seed,
                args.block_size,
                cache,
            )?)),
            ShuffleAlgo::Naive => return Ok(None),
            ShuffleAlgo::Py1e => LazyNodes::Py1e(Box::new(py1e::LazyPy1e::new(
                sizes,
                ncn,
                run_seed,
                epoch_seed,
                args.block_size,
                cache,
                warnings,
            )?)),
        };
        Ok(Some(LazyShuffle {
            bounds: spans::node_bounds(total, ncn),
            nodes,
        }))
    }

    /// What was done with the [`CountCache`], if one was given (py2s: its epoch's file).
    pub fn count_cache_stats(&self) -> Option<&CountCacheStats> {
        match &self.nodes {
            LazyNodes::Py1e(py1e) => py1e.count_cache_stats(),
            LazyNodes::Py1s(py1s) => py1s.count_cache_stats(),
            LazyNodes::Py1br(py1br) => py1br.count_cache_stats(),
            LazyNodes::Py2s(py2s) => py2s.count_cache_stats(),
        }
    }

    /// The values at `positions` (sorted, unique), in their order.
    pub fn values_at(&mut self, positions: &[i64]) -> Result<Vec<i64>> {
        let total = *self.bounds.last().unwrap_or(&0);
        if let Some(bad) = positions.iter().find(|&&x| x < 0 || x >= total) {
            return Err(Error::InvalidArgument(format!(
                "position {bad} is outside the epoch of {total} samples"
            )));
        }
        let mut out = Vec::with_capacity(positions.len());
        let mut from = 0;
        while from < positions.len() {
            let node = self.bounds.partition_point(|&b| b <= positions[from]) - 1;
            let (lo, hi) = (self.bounds[node], self.bounds[node + 1]);
            let to = from + positions[from..].partition_point(|&x| x < hi);
            let ranks: Vec<usize> = positions[from..to]
                .iter()
                .map(|&x| (x - lo) as usize)
                .collect();
            match &mut self.nodes {
                LazyNodes::Py1e(py1e) => out.extend(py1e.pick(node, &ranks)?),
                LazyNodes::Py1s(py1s) => out.extend(py1s.pick(node, &ranks)),
                LazyNodes::Py1br(py1br) => out.extend(py1br.pick(node, &ranks)?),
                LazyNodes::Py2s(py2s) => out.extend(py2s.pick(node, &ranks)),
            }
            from = to;
        }
        Ok(out)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn py1b_is_rejected_with_valid_names() {
        let err = "py1b".parse::<ShuffleAlgo>().unwrap_err().to_string();
        assert!(err.contains("py1b") && err.contains(VALID), "{err}");
    }
    #[test]
    fn names_round_trip() {
        for name in VALID.split(", ") {
            assert_eq!(name.parse::<ShuffleAlgo>().unwrap().to_string(), name);
        }
    }
}
