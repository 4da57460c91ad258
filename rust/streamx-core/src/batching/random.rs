//! `random` batching: resample all streams together, partition the combined epoch, shuffle it,
//! and map back to underlying sample ids.

use super::{map_resampled, shuffle_perm};
use crate::epoch_config::EpochConfig;
use crate::partition::{Layout, Partition, PartitionSpec};
use crate::resample::resample_units;
use crate::resample::ResampledUnits;
use crate::shuffle::{get_shuffle_parts, CountCache, CountCacheStats, LazyShuffle, ShuffleArgs};
use crate::warning::Warnings;
use crate::{Error, Result};

/// The partition of an epoch of `num_samples` ids over the configured world.
fn spec(cfg: &EpochConfig, num_samples: u64) -> PartitionSpec {
    PartitionSpec {
        num_samples,
        num_canonical_nodes: cfg.num_canonical_nodes,
        num_physical_nodes: cfg.world.num_nodes,
        ranks_per_node: cfg.world.ranks_per_node,
        workers_per_rank: cfg.world.workers_per_rank,
        batch_size: cfg.batch_size,
        drop_first: cfg.sample_in_epoch,
        initial_physical_nodes: cfg.initial_physical_nodes,
    }
}

/// The whole epoch.
pub(crate) fn generate(cfg: &EpochConfig, warnings: &mut Warnings) -> Result<Partition> {
    let units = resample_units(&cfg.stream_shards(), &cfg.resample_params())?;
    let layout = Layout::new(cfg.partition_algo, &spec(cfg, units.len() as u64), warnings)?;
    let mut partition = layout.partition();
    let perm = shuffle_perm(cfg, &units.shuffle_units, cfg.shuffle_block_size, warnings)?;
    map_resampled(&mut partition.ids, perm, units);
    Ok(partition)
}

/// One worker's share, in memory proportional to that share where the shuffle allows: the
/// epoch's id map stays in resampling units, the partition yields only this worker's entries,
/// and the shuffle computes only the positions those entries read (the generator still runs
/// through the canonical nodes before them, counting draws where nothing is read).
pub(crate) fn worker(
    cfg: &EpochConfig,
    [node, rank, worker]: [usize; 3],
    warnings: &mut Warnings,
) -> Result<Vec<i64>> {
    let units = resample_units(&cfg.stream_shards(), &cfg.resample_params())?;
    let layout = Layout::new(cfg.partition_algo, &spec(cfg, units.len() as u64), warnings)?;
    let mut ids = layout.worker_slice(node, rank, worker)?;
    if cfg.shuffle {
        let args = ShuffleArgs {
            algo: cfg.shuffle_algo,
            shard_sizes: &units.shuffle_units,
            num_canonical_nodes: cfg.num_canonical_nodes,
            seed: cfg.seed,
            epoch: cfg.epoch,
            block_size: cfg.shuffle_block_size,
        };
        let mut positions: Vec<i64> = ids.iter().copied().filter(|&id| id >= 0).collect();
        let ascending = positions.windows(2).all(|w| w[0] < w[1]);
        if !ascending {
            positions.sort_unstable();
            positions.dedup();
        }
        let values = get_shuffle_parts(&args, Some(&positions), warnings)?.into_values();
        if ascending {
            // The ids are the positions, in order: their values come in the same order.
            let mut values = values.into_iter();
            remap(&mut ids, |_| values.next())?;
        } else {
            // A worker's ids mostly ascend, so each is looked up from where the last one was.
            let mut at = 0;
            remap(&mut ids, |id| {
                at = seek(&positions, id, at)?;
                Some(values[at])
            })?;
        }
    }
    remap(&mut ids, |id| units.small(id))?;
    Ok(ids)
}

/// One worker's share evaluated in pieces: the partition's closed form at the piece's slots,
/// the shuffle at the positions they read (its generator's progress kept between pieces), and
/// the resampling's units. Memory is the piece plus a few words per shard and canonical node.
pub(crate) struct LazyWorker {
    layout: Layout,
    units: ResampledUnits,
    shuffle: Option<LazyShuffle>,
    index: [usize; 3],
    /// `(batches, batch_size)` of the worker's slice.
    slots: (usize, usize),
    next: usize,
}

impl LazyWorker {
    /// The worker's cursor at its first slot, or `None` when the configured shuffle is only
    /// evaluated whole. Checks, errors and warnings are those of [`worker`]; the shuffle's counted
    /// draws are read from and kept in `cache`, if given.
    pub(crate) fn new(
        cfg: &EpochConfig,
        [node, rank, worker]: [usize; 3],
        cache: Option<&CountCache>,
        warnings: &mut Warnings,
    ) -> Result<Option<Self>> {
        let units = resample_units(&cfg.stream_shards(), &cfg.resample_params())?;
        let spec = spec(cfg, units.len() as u64);
        let layout = Layout::new_bounded(cfg.partition_algo, &spec, false, warnings)?;
        let [p, r, w, b, s] = layout.shape();
        if node >= p || rank >= r || worker >= w {
            return Err(Error::InvalidArgument(format!(
                "worker ({node}, {rank}, {worker}) is outside the world ({p}, {r}, {w})"
            )));
        }
        let shuffle = if cfg.shuffle {
            let args = ShuffleArgs {
                algo: cfg.shuffle_algo,
                shard_sizes: &units.shuffle_units,
                num_canonical_nodes: cfg.num_canonical_nodes,
                seed: cfg.seed,
                epoch: cfg.epoch,
                block_size: cfg.shuffle_block_size,
            };
            match LazyShuffle::new(&args, cache, warnings)? {
                Some(lazy) => Some(lazy),
                None => return Ok(None),
            }
        } else {
            None
        };
        Ok(Some(LazyWorker {
            layout,
            units,
            shuffle,
            index: [node, rank, worker],
            slots: (b, s),
            next: 0,
        }))
    }

    /// The length of the worker's slice, padding included.
    pub(crate) fn len(&self) -> usize {
        self.slots.0 * self.slots.1
    }

    /// What the shuffle did with its [`CountCache`], if one was given.
    pub(crate) fn count_cache_stats(&self) -> Option<&CountCacheStats> {
        self.shuffle.as_ref()?.count_cache_stats()
    }

    /// The next slot to come.
    pub(crate) fn position(&self) -> usize {
        self.next
    }

    /// The worker's ids at its next `max` slots (fewer at the end, none past it).
    pub(crate) fn next_piece(&mut self, max: usize) -> Result<Vec<i64>> {
        let [node, rank, worker] = self.index;
        let s = self.slots.1;
        let end = self.next.saturating_add(max).min(self.len());
        let mut ids: Vec<i64> = (self.next..end)
            .map(|i| self.layout.get([node, rank, worker, i / s, i % s]))
            .collect();
        if let Some(shuffle) = &mut self.shuffle {
            let mut positions: Vec<i64> = ids.iter().copied().filter(|&id| id >= 0).collect();
            positions.sort_unstable();
            positions.dedup();
            let values = shuffle.values_at(&positions)?;
            let mut at = 0;
            remap(&mut ids, |id| {
                at = seek(&positions, id, at)?;
                Some(values[at])
            })?;
        }
        let units = &self.units;
        remap(&mut ids, |id| units.small(id))?;
        self.next = end;
        Ok(ids)
    }
}

/// Replaces every non-padding id through `f`.
fn remap(ids: &mut [i64], mut f: impl FnMut(i64) -> Option<i64>) -> Result<()> {
    for id in ids.iter_mut().filter(|id| **id >= 0) {
        *id = f(*id).ok_or_else(|| outside(*id))?;
    }
    Ok(())
}

fn outside(id: i64) -> Error {
    Error::InvalidArgument(format!("epoch id {id} is outside the planned epoch"))
}

/// The index of `value` in the sorted `values`, searched outward from index `hint`.
fn seek(values: &[i64], value: i64, hint: usize) -> Option<usize> {
    let hint = hint.min(values.len().saturating_sub(1));
    let (lo, hi) = if values.get(hint).is_some_and(|&v| v <= value) {
        let mut step = 1;
        while hint + step < values.len() && values[hint + step] <= value {
            step *= 2;
        }
        (hint, (hint + step + 1).min(values.len()))
    } else {
        let mut step = 1;
        while step <= hint && values[hint - step] > value {
            step *= 2;
        }
        (hint.saturating_sub(step), hint)
    };
    let at = lo + values[lo..hi].binary_search(&value).ok()?;
    Some(at)
}

#[cfg(test)]
mod tests {
    use super::seek;

    #[test]
    fn seek_finds_every_value_from_every_hint() {
        let values = [-3, 0, 1, 2, 5, 8, 13, 21, 34, 55];
        for hint in 0..=values.len() + 2 {
            for (at, &v) in values.iter().enumerate() {
                assert_eq!(seek(&values, v, hint), Some(at), "{v} from {hint}");
            }
            for missing in [-4, 3, 4, 22, 56] {
                assert_eq!(seek(&values, missing, hint), None);
            }
        }
        assert_eq!(seek(&[], 1, 0), None);
    }
}
