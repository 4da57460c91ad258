//! `random` batching: resample all streams together, partition the combined epoch, shuffle it,
//! and map back to underlying sample ids.

use super::{map_ids, shuffle_perm};
use crate::partition::{Layout, Partition, PartitionSpec};
use crate::plan::EpochConfig;
use crate::resample::{resample_streams, Resampled};
use crate::warning::Warnings;
use crate::Result;

/// The resampled epoch and its partition layout (big ids), in streaming's order of work.
fn prepare(cfg: &EpochConfig, warnings: &mut Warnings) -> Result<(Resampled, Layout)> {
    let resampled = resample_streams(&cfg.stream_shards(), &cfg.resample_params())?;
    let spec = PartitionSpec {
        num_samples: resampled.small_per_big.len() as u64,
        num_canonical_nodes: cfg.num_canonical_nodes,
        num_physical_nodes: cfg.world.num_nodes,
        ranks_per_node: cfg.world.ranks_per_node,
        workers_per_rank: cfg.world.workers_per_rank,
        batch_size: cfg.batch_size,
        drop_first: cfg.sample_in_epoch,
        initial_physical_nodes: cfg.initial_physical_nodes,
    };
    let layout = Layout::new(cfg.partition_algo, &spec, warnings)?;
    Ok((resampled, layout))
}

/// The whole epoch.
pub(crate) fn generate(cfg: &EpochConfig, warnings: &mut Warnings) -> Result<Partition> {
    let (resampled, layout) = prepare(cfg, warnings)?;
    let mut partition = layout.partition();
    let perm = shuffle_perm(cfg, &resampled, cfg.shuffle_block_size, warnings)?;
    map_ids(
        &mut partition.ids,
        perm.as_deref(),
        &resampled.small_per_big,
    );
    Ok(partition)
}

/// One worker's share. The shuffle is still global (one generator runs through every canonical
/// node), but only this worker's partition entries are built and mapped.
pub(crate) fn worker(
    cfg: &EpochConfig,
    [node, rank, worker]: [usize; 3],
    warnings: &mut Warnings,
) -> Result<Vec<i64>> {
    let (resampled, layout) = prepare(cfg, warnings)?;
    let mut ids = layout.worker_slice(node, rank, worker)?;
    let perm = shuffle_perm(cfg, &resampled, cfg.shuffle_block_size, warnings)?;
    map_ids(&mut ids, perm.as_deref(), &resampled.small_per_big);
    Ok(ids)
}
