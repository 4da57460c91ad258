//! Batching methods (`streaming.base.batching`): how resampled, partitioned and shuffled
//! streams are combined into the epoch's global batches.
//!
//! * `random`: all streams resampled together, one partition, one shuffle.
//! * `per_stream`: every global batch comes from one stream.
//! * `stratified`: every global batch has the same per-stream composition.
//! * `device_per_stream`: every device batch comes from one stream.

mod device_per_stream;
mod per_stream;
pub(crate) mod pool;
mod random;
mod stratified;

use rayon::prelude::*;

pub use crate::epoch_config::BatchingMethod;
use crate::epoch_config::EpochConfig;
use crate::partition::{Layout, Partition, PartitionSpec};
use crate::resample::{resample_units, ResampledUnits};
use crate::shuffle::get_shuffle_warn;
use crate::warning::{Warning, Warnings};
use crate::{Error, Result};

/// The whole epoch for the configured method.
pub(crate) fn generate(cfg: &EpochConfig, warnings: &mut Warnings) -> Result<Partition> {
    match cfg.batching_method {
        BatchingMethod::Random => random::generate(cfg, warnings),
        BatchingMethod::PerStream => per_stream::generate(cfg, warnings),
        BatchingMethod::Stratified => stratified::generate(cfg, warnings),
        BatchingMethod::DevicePerStream => device_per_stream::generate(cfg, warnings),
    }
}

/// One worker's flattened share of the epoch.
pub(crate) fn generate_worker(
    cfg: &EpochConfig,
    [node, rank, worker]: [usize; 3],
    warnings: &mut Warnings,
) -> Result<Vec<i64>> {
    if cfg.batching_method == BatchingMethod::Random {
        return random::worker(cfg, [node, rank, worker], warnings);
    }
    let partition = generate(cfg, warnings)?;
    let ids = partition.worker(node, rank, worker).ok_or_else(|| {
        Error::InvalidArgument(format!(
            "worker ({node}, {rank}, {worker}) is outside the world"
        ))
    })?;
    Ok(ids.to_vec())
}

/// One worker's share in pieces, or `None` when the configuration is only planned whole
/// (every batching method but `random`; the `naive` shuffle).
pub(crate) fn lazy_worker(
    cfg: &EpochConfig,
    index: [usize; 3],
    cache: Option<&crate::shuffle::CountCache>,
    warnings: &mut Warnings,
) -> Result<Option<random::LazyWorker>> {
    if cfg.batching_method != BatchingMethod::Random {
        return Ok(None);
    }
    random::LazyWorker::new(cfg, index, cache, warnings)
}

pub(crate) use random::LazyWorker;

/// Replaces every non-padding big id by `small_per_big[perm[id]]` (or `small_per_big[id]`).
pub(crate) fn map_ids(ids: &mut [i64], perm: Option<&[i64]>, small_per_big: &[i64]) {
    let map = |id: &mut i64| {
        if *id >= 0 {
            let big = perm.map_or(*id, |p| p[*id as usize]);
            *id = small_per_big[big as usize];
        }
    };
    if ids.len() < pool::PAR_THRESHOLD {
        ids.iter_mut().for_each(map);
    } else {
        pool::install(|| ids.par_iter_mut().for_each(map));
    }
}

/// Maps a partition's epoch ids to underlying sample ids: through `perm` (if shuffling) and
/// the resampling, whose per-sample map is only built when it is not the identity.
pub(crate) fn map_resampled(ids: &mut [i64], perm: Option<Vec<i64>>, units: ResampledUnits) {
    if !units.is_identity() {
        map_ids(ids, perm.as_deref(), &units.into_resampled().small_per_big);
    } else if let Some(perm) = perm {
        map_ids(ids, None, &perm); // `perm[id]`
    }
}

/// The permutation of a resampled space (its shuffle units given), if shuffling.
pub(crate) fn shuffle_perm(
    cfg: &EpochConfig,
    shuffle_units: &[i64],
    block_size: usize,
    warnings: &mut Warnings,
) -> Result<Option<Vec<i64>>> {
    if !cfg.shuffle {
        return Ok(None);
    }
    let perm = get_shuffle_warn(
        cfg.shuffle_algo,
        shuffle_units,
        cfg.num_canonical_nodes,
        cfg.seed,
        cfg.epoch,
        block_size,
        warnings,
    )?;
    Ok(Some(perm))
}

/// One stream resampled alone, partitioned over `nodes` nodes with `batch_size` and no resume,
/// shuffled with its proportional block size and mapped to underlying sample ids.
pub(crate) fn stream_partition(
    cfg: &EpochConfig,
    stream_id: usize,
    nodes: usize,
    batch_size: usize,
    warnings: &mut Warnings,
) -> Result<Partition> {
    let shards = cfg.stream_shards();
    let units = resample_units(&shards[stream_id..=stream_id], &cfg.resample_params())?;
    let spec = PartitionSpec {
        num_samples: units.len() as u64,
        num_canonical_nodes: cfg.num_canonical_nodes,
        num_physical_nodes: nodes,
        ranks_per_node: cfg.world.ranks_per_node,
        workers_per_rank: cfg.world.workers_per_rank,
        batch_size,
        drop_first: 0,
        initial_physical_nodes: cfg.initial_physical_nodes,
    };
    let mut partition = Layout::new(cfg.partition_algo, &spec, warnings)?.partition();
    let proportion = cfg.streams[stream_id].proportion;
    let block = (cfg.shuffle_block_size as f64 * proportion) as usize;
    if cfg.shuffle && block == 0 && cfg.batching_method == BatchingMethod::DevicePerStream {
        return Err(Error::InvalidArgument(format!(
            "Samples from stream {stream_id} are not being used. Please either increase the \
             `shuffle_block_size` from {}, or increase the stream proportion from {proportion}.",
            cfg.shuffle_block_size
        )));
    }
    let perm = shuffle_perm(cfg, &units.shuffle_units, block, warnings)?;
    map_resampled(&mut partition.ids, perm, units);
    Ok(partition)
}

/// Number of leading rows of `rows` (each `width` long) counted as full, numpy-style: the count
/// of rows without -1, which streaming then uses as a prefix length.
pub(crate) fn count_full(rows: &[i64], width: usize) -> usize {
    rows.chunks(width)
        .filter(|r| r.iter().all(|&x| x >= 0))
        .count()
}

/// Orders batches by a shuffled list of stream origins: the k-th occurrence of stream `i` takes
/// stream `i`'s k-th batch. `batches[i]` holds stream `i`'s batches, each `width` long.
pub(crate) fn interleave_by_origin(
    batches: &[Vec<i64>],
    width: usize,
    rng: &mut crate::shuffle::rng::Pcg64,
) -> Vec<i64> {
    let mut origins: Vec<usize> = Vec::new();
    for (i, b) in batches.iter().enumerate() {
        origins.extend(std::iter::repeat_n(i, b.len() / width));
    }
    rng.shuffle(&mut origins);
    let mut next = vec![0_usize; batches.len()];
    let mut out = Vec::with_capacity(origins.len() * width);
    for i in origins {
        out.extend_from_slice(&batches[i][next[i] * width..(next[i] + 1) * width]);
        next[i] += 1;
    }
    out
}

/// Common tail of the stream-aware methods: skip the global batches already consumed, pad with
/// -1 batches to a whole number of rounds over every worker, and lay out as a partition.
/// `misaligned` is streaming's warning when the resume point is not on a global batch boundary.
pub(crate) fn finish(
    mut batches: Vec<i64>,
    cfg: &EpochConfig,
    misaligned: Warning,
    warnings: &mut Warnings,
) -> Result<Partition> {
    let global = cfg.global_batch_size();
    if cfg.sample_in_epoch % global as u64 != 0 {
        warnings.push(misaligned);
    }
    let skip = (cfg.sample_in_epoch / global as u64).saturating_mul(global as u64);
    batches.drain(..(skip.min(batches.len() as u64) as usize));
    let round = global * cfg.world.workers_per_rank;
    let padded = batches.len().div_ceil(round) * round;
    batches.resize(padded, -1);
    let w = &cfg.world;
    let world = [w.num_nodes, w.ranks_per_node, w.workers_per_rank];
    Partition::from_traversal(&batches, world, cfg.batch_size)
}

/// The resume warning text shared by `per_stream` and `device_per_stream`.
pub(crate) fn misaligned_log(method: &str, global: usize) -> Warning {
    Warning::log(format!(
        "Because of the `{method}` batching method, resumption may only occur on a sample that \
         is a multiple of the current global batch size of {global}. Resuming training after the \
         most recently finished global batch."
    ))
}
