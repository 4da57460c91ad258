//! Partitions: how an epoch's sample ids are laid out over physical nodes, ranks, workers and
//! batches (`streaming.base.partition`), bit-exact with mosaicml-streaming 0.13.0.
//!
//! The result has shape `(nodes, ranks_per_node, workers_per_rank, batches_per_worker,
//! batch_size)` with `-1` padding. Every element is a closed-form function of its index, so one
//! worker's slice can be computed without building the whole world's array.

mod orig;
mod relaxed;

use std::fmt;
use std::str::FromStr;

use rayon::prelude::*;

use crate::batching::pool;
use crate::limits::{check_alloc, checked_product};
use crate::warning::Warnings;
use crate::{Error, Result};

pub use orig::OrigLayout;
pub use relaxed::RelaxedLayout;

/// A partition algorithm name accepted by mosaicml-streaming 0.13.0.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub enum PartitionAlgo {
    /// Canonical nodes striped over physical nodes; requires one to divide the other.
    #[default]
    Orig,
    /// `orig`, except resumption on a node count that does not divide the canonical nodes.
    Relaxed,
}

impl FromStr for PartitionAlgo {
    type Err = Error;

    fn from_str(name: &str) -> Result<Self> {
        match name {
            "orig" => Ok(PartitionAlgo::Orig),
            "relaxed" => Ok(PartitionAlgo::Relaxed),
            _ => Err(Error::InvalidArgument(format!(
                "Unknown partition algorithm {name:?}: expected one of orig, relaxed"
            ))),
        }
    }
}

impl fmt::Display for PartitionAlgo {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            PartitionAlgo::Orig => "orig",
            PartitionAlgo::Relaxed => "relaxed",
        })
    }
}

/// The arguments of streaming's `get_partitions`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct PartitionSpec {
    /// Epoch size (number of "big" sample ids).
    pub num_samples: u64,
    /// Canonical nodes, fixed for the run.
    pub num_canonical_nodes: usize,
    /// Physical nodes now.
    pub num_physical_nodes: usize,
    /// Ranks per node.
    pub ranks_per_node: usize,
    /// Workers per rank.
    pub workers_per_rank: usize,
    /// Per-device batch size.
    pub batch_size: usize,
    /// Samples already seen this epoch (the resume point).
    pub drop_first: u64,
    /// Physical nodes when training started (used by `relaxed` only).
    pub initial_physical_nodes: Option<usize>,
}

/// A 5-D array of sample ids, row-major, `-1` for padding.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Partition {
    /// `(nodes, ranks_per_node, workers_per_rank, batches_per_worker, batch_size)`.
    pub shape: [usize; 5],
    /// The ids, row-major over `shape`.
    pub ids: Vec<i64>,
}

impl Partition {
    /// The flattened `(batches_per_worker, batch_size)` block of one worker, or `None` if the
    /// worker is outside the world.
    pub fn worker(&self, node: usize, rank: usize, worker: usize) -> Option<&[i64]> {
        let [p, r, w, b, s] = self.shape;
        if node >= p || rank >= r || worker >= w {
            return None;
        }
        let len = b * s;
        let at = ((node * r + rank) * w + worker) * len;
        self.ids.get(at..at + len)
    }

    /// The ids in traversal order, `transpose(3, 2, 0, 1, 4).flatten()`: for each batch index,
    /// worker, node and rank, that device batch.
    pub fn traversal(&self) -> Vec<i64> {
        self.traversal_of_nodes(0..self.shape[0])
    }

    /// [`Partition::traversal`] of the sub-array `self[nodes]`.
    pub fn traversal_of_nodes(&self, nodes: std::ops::Range<usize>) -> Vec<i64> {
        let [_, r, w, b, s] = self.shape;
        let mut out = Vec::with_capacity(nodes.len() * r * w * b * s);
        for bi in 0..b {
            for wi in 0..w {
                for pi in nodes.clone() {
                    for ri in 0..r {
                        let at = (((pi * r + ri) * w + wi) * b + bi) * s;
                        out.extend_from_slice(&self.ids[at..at + s]);
                    }
                }
            }
        }
        out
    }

    /// The inverse of [`Partition::traversal`]: `seq.reshape(-1, W, P, R, S).transpose(2, 3,
    /// 1, 0, 4)`. `seq.len()` must be a multiple of `workers * nodes * ranks * batch_size`.
    pub fn from_traversal(seq: &[i64], world: [usize; 3], batch_size: usize) -> Result<Self> {
        let [p, r, w] = world;
        let per_round = w * p * r * batch_size;
        if per_round == 0 || seq.len() % per_round != 0 {
            return Err(Error::InvalidArgument(format!(
                "cannot reshape array of size {} into shape (-1, {w}, {p}, {r}, {batch_size})",
                seq.len()
            )));
        }
        let b = seq.len() / per_round;
        let shape = [p, r, w, b, batch_size];
        let ids = fill(shape, |[pi, ri, wi, bi, si]| {
            seq[(((bi * w + wi) * p + pi) * r + ri) * batch_size + si]
        });
        Ok(Partition { shape, ids })
    }
}

/// A partition as a closed-form function of its index.
pub enum Layout {
    /// The `orig` algorithm (also `relaxed` when it defers to `orig`).
    Orig(OrigLayout),
    /// `relaxed` resuming on an incompatible node count.
    Relaxed(RelaxedLayout),
}

impl Layout {
    /// Validates `spec` as streaming's `get_partitions(algo, ...)` does and prepares the layout.
    pub fn new(algo: PartitionAlgo, spec: &PartitionSpec, warnings: &mut Warnings) -> Result<Self> {
        Self::new_bounded(algo, spec, true, warnings)
    }

    /// [`Layout::new`]; with `whole` false, sizes are only checked for overflow, not against
    /// memory (for a caller that evaluates a few elements at a time).
    pub fn new_bounded(
        algo: PartitionAlgo,
        spec: &PartitionSpec,
        whole: bool,
        warnings: &mut Warnings,
    ) -> Result<Self> {
        check_sizes(spec, whole)?;
        check_resume(spec)?;
        let layout = match algo {
            PartitionAlgo::Orig => Layout::Orig(OrigLayout::new(spec, warnings)?),
            PartitionAlgo::Relaxed => relaxed::layout(spec, warnings)?,
        };
        let shape = layout.shape().map(|d| d as u64);
        let count = checked_product(&shape, "the partition's shape")?;
        if whole {
            check_alloc(count, 8, "the partition")?;
        }
        Ok(layout)
    }

    /// The output shape.
    pub fn shape(&self) -> [usize; 5] {
        match self {
            Layout::Orig(l) => l.shape(),
            Layout::Relaxed(l) => l.shape(),
        }
    }

    /// The id at `[node, rank, worker, batch, slot]`.
    pub fn get(&self, index: [usize; 5]) -> i64 {
        match self {
            Layout::Orig(l) => l.get(index),
            Layout::Relaxed(l) => l.get(index),
        }
    }

    /// The whole partition.
    pub fn partition(&self) -> Partition {
        let shape = self.shape();
        Partition {
            shape,
            ids: fill(shape, |i| self.get(i)),
        }
    }

    /// One worker's flattened `(batches, batch_size)` block.
    pub fn worker_slice(&self, node: usize, rank: usize, worker: usize) -> Result<Vec<i64>> {
        let [p, r, w, b, s] = self.shape();
        if node >= p || rank >= r || worker >= w {
            return Err(Error::InvalidArgument(format!(
                "worker ({node}, {rank}, {worker}) is outside the world ({p}, {r}, {w})"
            )));
        }
        let mut out = Vec::with_capacity(b * s);
        for bi in 0..b {
            out.extend((0..s).map(|si| self.get([node, rank, worker, bi, si])));
        }
        Ok(out)
    }
}

/// streaming's `get_partitions`: the ids of every node, rank, worker and batch.
///
/// ```
/// use streamx_core::partition::{get_partitions, PartitionAlgo, PartitionSpec};
/// let spec = PartitionSpec {
///     num_samples: 10, num_canonical_nodes: 4, num_physical_nodes: 2, ranks_per_node: 1,
///     workers_per_rank: 1, batch_size: 1, drop_first: 0, initial_physical_nodes: None,
/// };
/// let part = get_partitions(PartitionAlgo::Orig, &spec, &mut Vec::new()).unwrap();
/// assert_eq!(part.ids, [0, 5, 1, 6, 1, 6, 2, 7, 3, 8, 4, 9]);
/// ```
pub fn get_partitions(
    algo: PartitionAlgo,
    spec: &PartitionSpec,
    warnings: &mut Warnings,
) -> Result<Partition> {
    Ok(Layout::new(algo, spec, warnings)?.partition())
}

/// One worker's flattened block of [`get_partitions`], computed without the rest.
pub fn worker_slice(
    algo: PartitionAlgo,
    spec: &PartitionSpec,
    node: usize,
    rank: usize,
    worker: usize,
    warnings: &mut Warnings,
) -> Result<Vec<i64>> {
    Layout::new(algo, spec, warnings)?.worker_slice(node, rank, worker)
}

/// Arguments may come from an untrusted state dict: refuse sizes whose products overflow, or
/// whose partition could not fit in memory, before any arithmetic or allocation uses them.
fn check_sizes(spec: &PartitionSpec, whole: bool) -> Result<()> {
    let dims = [
        spec.num_canonical_nodes,
        spec.num_physical_nodes,
        spec.ranks_per_node,
        spec.workers_per_rank,
        spec.batch_size,
    ]
    .map(|d| d as u64);
    let padding = checked_product(
        &dims,
        "num_canonical_nodes x num_physical_nodes x ranks_per_node x workers_per_rank x batch_size",
    )?;
    let ids = spec
        .num_samples
        .checked_add(padding)
        .and_then(|n| n.checked_add(spec.drop_first))
        .ok_or_else(|| Error::InvalidArgument("the partition's size overflows".to_string()))?;
    if !whole {
        return Ok(());
    }
    check_alloc(ids, 8, "the partition")
}

/// The wrapper check of `get_partitions`, including its quirk of counting a full extra world of
/// repeated samples when the epoch already divides evenly.
fn check_resume(spec: &PartitionSpec) -> Result<()> {
    let world = (spec.num_physical_nodes * spec.ranks_per_node) as u64;
    if world == 0 {
        return Err(positive("num_physical_nodes and ranks_per_node"));
    }
    let repeated = world - spec.num_samples % world;
    if spec.num_samples + repeated < spec.drop_first {
        return Err(Error::InvalidArgument(format!(
            "Resuming further into the dataset ({}) than it has samples ({})",
            spec.drop_first, spec.num_samples
        )));
    }
    Ok(())
}

/// The error for a world dimension that must be positive.
pub(crate) fn positive(what: &str) -> Error {
    Error::InvalidArgument(format!("{what} must be positive integers"))
}

/// Builds a row-major array of `shape` from an element function, in parallel when large.
pub(crate) fn fill(shape: [usize; 5], f: impl Fn([usize; 5]) -> i64 + Sync) -> Vec<i64> {
    let [_, r, w, b, s] = shape;
    let unflatten = |i: usize| {
        let (rest, si) = (i / s, i % s);
        let (rest, bi) = (rest / b, rest % b);
        let (rest, wi) = (rest / w, rest % w);
        [rest / r, rest % r, wi, bi, si]
    };
    // Only a range's first index is unflattened (four divisions); the rest step through
    // the shape like an odometer.
    let fill_range = |start: usize, out: &mut [i64]| {
        if out.is_empty() {
            return; // a shape with a zero dimension: nothing to unflatten
        }
        let mut at = unflatten(start);
        for slot in out.iter_mut() {
            *slot = f(at);
            let mut d = 4;
            at[d] += 1;
            while d > 0 && at[d] == shape[d] {
                at[d] = 0;
                d -= 1;
                at[d] += 1;
            }
        }
    };
    let mut ids = vec![0_i64; shape.iter().product()];
    if ids.len() < pool::PAR_THRESHOLD {
        fill_range(0, &mut ids);
    } else {
        pool::install(|| {
            ids.par_chunks_mut(pool::PAR_THRESHOLD)
                .enumerate()
                .for_each(|(k, c)| fill_range(k * pool::PAR_THRESHOLD, c));
        });
    }
    ids
}

#[cfg(test)]
mod size_tests {
    use super::*;

    fn spec(ncn: usize, batch_size: usize, nodes: usize) -> PartitionSpec {
        PartitionSpec {
            num_samples: 10,
            num_canonical_nodes: ncn,
            num_physical_nodes: nodes,
            ranks_per_node: 1,
            workers_per_rank: 1,
            batch_size,
            drop_first: 0,
            initial_physical_nodes: None,
        }
    }

    #[test]
    fn absurd_sizes_are_errors_not_aborts() {
        for s in [
            spec(1 << 62, 1, 1),
            spec(1, 1 << 62, 1),
            spec(1 << 40, 1 << 40, 1 << 40),
        ] {
            for algo in [PartitionAlgo::Orig, PartitionAlgo::Relaxed] {
                let got = get_partitions(algo, &s, &mut Vec::new());
                assert!(
                    matches!(got, Err(Error::InvalidArgument(_))),
                    "{s:?}: {got:?}"
                );
            }
        }
    }
}
