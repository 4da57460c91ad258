//! Shuffle algorithms: the permutation of a stream's resampled sample space for one epoch,
//! bit-exact with mosaicml-streaming 0.13.0 (`streaming.base.shuffle`).
//!
//! Every algorithm keeps a canonical node's samples inside that node's contiguous range of the
//! output, so a shuffle composes with the partition's elastic determinism. `seed` is fixed for
//! the run and `seed + epoch` seeds the per-epoch generator.

mod naive;
mod py1br;
mod py1e;
mod py1s;
mod py2s;
pub mod rng;
mod spans;

use std::fmt;
use std::str::FromStr;

use crate::warning::Warnings;
use crate::{Error, Result};

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
    if let Some(bad) = shard_sizes.iter().find(|&&s| s < 0) {
        return Err(Error::InvalidArgument(format!(
            "Shard sizes must be non-negative, but got: {bad}."
        )));
    }
    if num_canonical_nodes == 0 {
        return Err(Error::InvalidArgument(
            "`num_canonical_nodes` must be a positive integer, but got: 0.".to_string(),
        ));
    }
    let (ncn, run_seed) = (num_canonical_nodes, u128::from(seed));
    let epoch_seed = run_seed + u128::from(epoch);
    match algo {
        ShuffleAlgo::Naive => {
            let total: i64 = shard_sizes.iter().sum();
            Ok(naive::shuffle(total as usize, epoch_seed))
        }
        ShuffleAlgo::Py1s => Ok(py1s::shuffle(shard_sizes, ncn, run_seed, epoch_seed)),
        ShuffleAlgo::Py2s => Ok(py2s::shuffle(shard_sizes, ncn, run_seed, epoch_seed)),
        ShuffleAlgo::Py1br => py1br::shuffle(shard_sizes, ncn, run_seed, epoch_seed, block_size),
        ShuffleAlgo::Py1e => {
            py1e::shuffle(shard_sizes, ncn, run_seed, epoch_seed, block_size, warnings)
        }
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
