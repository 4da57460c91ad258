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

/// What one canonical node's part of the order must produce.
#[derive(Clone, Copy, Debug)]
pub(crate) enum Want<'a> {
    /// Nothing; the node's draws are still made if a later node is wanted.
    Skip,
    /// Every position.
    All,
    /// The values at these offsets into the node's part, sorted and unique.
    At(&'a [usize]),
}

impl Want<'_> {
    /// Whether any offset in `from..to` is wanted.
    pub(crate) fn any_in(self, from: usize, to: usize) -> bool {
        match self {
            Want::Skip => false,
            Want::All => from < to,
            Want::At(offsets) => {
                let i = offsets.partition_point(|&o| o < from);
                i < offsets.len() && offsets[i] < to
            }
        }
    }

    /// The index of the last wanted node, plus one (0 if none).
    pub(crate) fn end(wants: &[Want<'_>]) -> usize {
        wants
            .iter()
            .rposition(|w| !matches!(w, Want::Skip))
            .map_or(0, |k| k + 1)
    }
}

/// Collects a node's wanted values from consecutive chunks of its part, in order.
pub(crate) struct Picker<'a> {
    want: Want<'a>,
    next: usize,
    out: Vec<i64>,
}

impl<'a> Picker<'a> {
    pub(crate) fn new(want: Want<'a>) -> Self {
        Picker {
            want,
            next: 0,
            out: Vec::new(),
        }
    }

    /// Takes the wanted values of `chunk`, which holds the part's offsets `from..`.
    pub(crate) fn take(&mut self, from: usize, chunk: &[i64]) {
        match self.want {
            Want::Skip => {}
            Want::All => self.out.extend_from_slice(chunk),
            Want::At(offsets) => {
                while self.next < offsets.len() && offsets[self.next] < from + chunk.len() {
                    self.out.push(chunk[offsets[self.next] - from]);
                    self.next += 1;
                }
            }
        }
    }

    pub(crate) fn finish(self) -> Vec<i64> {
        self.out
    }
}

/// Per canonical node, the wanted values (in offset order), or `None` for skipped nodes.
pub(crate) type Parts = Vec<Option<Vec<i64>>>;

/// Part of an epoch's permutation: the values at the positions that were asked for.
///
/// Every algorithm but `naive` keeps canonical node `k`'s samples in positions
/// `total * k / ncn .. total * (k + 1) / ncn`, and its generator draws node after node, so a
/// node nobody reads only needs its draws counted, and in a node that is read only the pieces
/// (spans, blocks) holding wanted positions need laying out.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct PartialShuffle {
    /// Where each part starts, plus the total at the end.
    bounds: Vec<i64>,
    /// Per part, the offsets its values are for, or `None` when it holds every position.
    offsets: Vec<Option<Vec<usize>>>,
    /// Each part's values, or `None` if it was skipped.
    parts: Parts,
}

impl PartialShuffle {
    /// The part (canonical node) that output position `pos` belongs to, for any algorithm but
    /// `naive` (which is one part).
    pub fn part_of(algo: ShuffleAlgo, total: i64, num_canonical_nodes: usize, pos: i64) -> usize {
        if algo == ShuffleAlgo::Naive || total <= 0 {
            return 0;
        }
        let ncn = num_canonical_nodes as i128;
        // The largest k with total * k / ncn <= pos.
        let mut k = ((i128::from(pos) * ncn) / i128::from(total)) as usize;
        while k + 1 < num_canonical_nodes
            && i128::from(total) * (k as i128 + 1) / ncn <= i128::from(pos)
        {
            k += 1;
        }
        k
    }

    /// The value at output position `pos`, if it was computed.
    pub fn get(&self, pos: i64) -> Option<i64> {
        let part = self.bounds.partition_point(|&b| b <= pos).checked_sub(1)?;
        let values = self.parts.get(part)?.as_ref()?;
        let offset = usize::try_from(pos - self.bounds[part]).ok()?;
        let at = match &self.offsets[part] {
            None => offset,
            Some(offsets) => offsets.binary_search(&offset).ok()?,
        };
        values.get(at).copied()
    }

    /// The values at `positions` (sorted, unique), in one pass over the parts.
    pub fn values_at(&self, positions: &[i64]) -> Option<Vec<i64>> {
        let mut out = Vec::with_capacity(positions.len());
        let mut part = 0;
        let mut within = 0; // index into the current part's offsets
        for &pos in positions {
            while part + 1 < self.bounds.len() - 1 && self.bounds[part + 1] <= pos {
                part += 1;
                within = 0;
            }
            let values = self.parts.get(part)?.as_ref()?;
            let offset = usize::try_from(pos - self.bounds[part]).ok()?;
            let at = match &self.offsets[part] {
                None => offset,
                Some(offsets) => {
                    within += offsets[within..].iter().position(|&o| o == offset)?;
                    within
                }
            };
            out.push(*values.get(at)?);
        }
        Some(out)
    }

    /// The whole permutation; every position must have been computed.
    pub fn into_full(self) -> Result<Vec<i64>> {
        if self.offsets.iter().any(Option::is_some) {
            return Err(skipped());
        }
        let mut parts = self.parts.into_iter();
        if parts.len() == 1 {
            return parts.next().flatten().ok_or_else(skipped);
        }
        let total = self.bounds.last().copied().unwrap_or(0) as usize;
        let mut out = Vec::with_capacity(total);
        for part in parts {
            out.extend_from_slice(&part.ok_or_else(skipped)?);
        }
        Ok(out)
    }
}

fn skipped() -> Error {
    Error::InvalidArgument("a part of the shuffle that was skipped was asked for".to_string())
}

/// [`get_shuffle_warn`] computing only the values at `positions` (sorted, unique; all when
/// `None`); draws, warnings and errors are exactly those of the whole shuffle.
pub fn get_shuffle_parts(
    args: &ShuffleArgs<'_>,
    positions: Option<&[i64]>,
    warnings: &mut Warnings,
) -> Result<PartialShuffle> {
    if let Some(bad) = args.shard_sizes.iter().find(|&&s| s < 0) {
        return Err(Error::InvalidArgument(format!(
            "Shard sizes must be non-negative, but got: {bad}."
        )));
    }
    let ncn = args.num_canonical_nodes;
    if ncn == 0 {
        return Err(Error::InvalidArgument(
            "`num_canonical_nodes` must be a positive integer, but got: 0.".to_string(),
        ));
    }
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn py1b_is_rejected_with_valid_names() {
        let err = "py1b".parse::<ShuffleAlgo>().unwrap_err().to_string();
        assert!(err.contains("py1b") && err.contains(VALID), "{err}");
    }

    fn iproduct<'a, A, B, C>(
        a: &'a [A],
        b: &'a [B],
        c: &'a [C],
    ) -> impl Iterator<Item = (&'a A, &'a B, &'a C)> {
        a.iter()
            .flat_map(move |x| b.iter().flat_map(move |y| c.iter().map(move |z| (x, y, z))))
    }

    #[test]
    fn partial_shuffles_agree_with_the_whole() {
        let sizes = [7, 0, 13, 2, 40, 1, 0, 25, 9, 11];
        let total: i64 = sizes.iter().sum();
        let algos = [
            ShuffleAlgo::Naive,
            ShuffleAlgo::Py1s,
            ShuffleAlgo::Py2s,
            ShuffleAlgo::Py1br,
            ShuffleAlgo::Py1e,
        ];
        // Blocks smaller than, around and larger than the spans: the warning is certain,
        // random, or impossible for the nodes a partial shuffle does not visit.
        for (algo, ncn, block_size) in iproduct(&algos, &[1, 2, 3, 5, 8], &[4, 12, 30, 200]) {
            let (algo, ncn) = (*algo, *ncn);
            {
                let args = ShuffleArgs {
                    algo,
                    shard_sizes: &sizes,
                    num_canonical_nodes: ncn,
                    seed: 77,
                    epoch: 2,
                    block_size: *block_size,
                };
                let whole = get_shuffle_parts(&args, None, &mut Vec::new()).unwrap();
                let full = whole.clone().into_full().unwrap();
                for mask in 0..(1_u32 << ncn) {
                    // Positions in the masked nodes, thinned to every third one for half of
                    // the masks so partial nodes are covered too.
                    let stride = 1 + mask as usize % 3;
                    let positions: Vec<i64> = (0..total)
                        .filter(|&p| mask >> PartialShuffle::part_of(algo, total, ncn, p) & 1 == 1)
                        .step_by(stride)
                        .collect();
                    let mut warnings = Vec::new();
                    let part = get_shuffle_parts(&args, Some(&positions), &mut warnings).unwrap();
                    let mut expected = Vec::new();
                    get_shuffle_parts(&args, None, &mut expected).unwrap();
                    assert_eq!(warnings, expected);
                    for pos in 0..total {
                        let want = positions
                            .binary_search(&pos)
                            .is_ok()
                            .then(|| full[pos as usize]);
                        assert_eq!(
                            part.get(pos),
                            want,
                            "{algo} ncn={ncn} mask={mask} pos={pos}"
                        );
                    }
                }
            }
        }
    }

    #[test]
    fn partial_shuffles_of_position_runs() {
        // Runs of wanted positions much shorter than a node: py1e lays out only a window
        // around them, as wide as the largest shift the blocks allow.
        let sizes = [3000, 2000, 0, 5000, 400, 1];
        let total: i64 = sizes.iter().sum();
        let runs = [
            (0, 1),
            (total - 1, total),
            (5000, 5003),
            (9000, 10_401),
            (4000, 4100),
        ];
        let algos = [
            ShuffleAlgo::Py1e,
            ShuffleAlgo::Py1s,
            ShuffleAlgo::Py1br,
            ShuffleAlgo::Py2s,
        ];
        for (algo, ncn, block_size) in iproduct(&algos, &[1, 2, 3], &[1000, 4000, 9000, 20_000]) {
            let args = ShuffleArgs {
                algo: *algo,
                shard_sizes: &sizes,
                num_canonical_nodes: *ncn,
                seed: 5,
                epoch: 1,
                block_size: *block_size,
            };
            let mut expected = Vec::new();
            let full = get_shuffle_parts(&args, None, &mut expected)
                .unwrap()
                .into_full()
                .unwrap();
            for &(from, to) in &runs {
                let positions: Vec<i64> = (from..to).collect();
                let mut warnings = Vec::new();
                let part = get_shuffle_parts(&args, Some(&positions), &mut warnings).unwrap();
                assert_eq!(warnings, expected);
                for &pos in &positions {
                    assert_eq!(
                        part.get(pos),
                        Some(full[pos as usize]),
                        "{algo} {ncn} {pos}"
                    );
                }
            }
        }
    }

    #[test]
    fn names_round_trip() {
        for name in VALID.split(", ") {
            assert_eq!(name.parse::<ShuffleAlgo>().unwrap().to_string(), name);
        }
    }
}
