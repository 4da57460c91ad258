//! The whole epoch plan in one call: streaming's `generate_work` for every batching method.
//!
//! Given the streams and the run's settings, [`plan_epoch`] returns the sample ids (global
//! underlying sample ids, -1 for padding) of every node, rank, worker and batch, and
//! [`plan_worker`] returns one worker's share, skipping the rest of the world where the
//! batching method allows.

use crate::batching;
use crate::partition::Partition;
use crate::shuffle::{CountCache, CountCacheStats};
use crate::warning::Warnings;
use crate::{Error, Result};

pub use crate::epoch_config::{EpochConfig, StreamSpec, World};

/// The planned epoch.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct EpochPlan {
    /// Sample ids of shape `(nodes, ranks_per_node, workers_per_rank, batches, batch_size)`.
    pub partition: Partition,
    /// Warnings streaming would have emitted, in order.
    pub warnings: Warnings,
}

/// One worker's part of the planned epoch.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct WorkerPlan {
    /// The worker's ids, `partition[node, rank, worker].flatten()`.
    pub ids: Vec<i64>,
    /// Warnings streaming would have emitted, in order.
    pub warnings: Warnings,
}

/// streaming's `generate_work(batching_method, dataset, world, epoch, sample_in_epoch)`.
pub fn plan_epoch(cfg: &EpochConfig) -> Result<EpochPlan> {
    let mut warnings = Warnings::new();
    let partition = plan_epoch_with(cfg, &mut warnings)?;
    Ok(EpochPlan {
        partition,
        warnings,
    })
}

/// [`plan_epoch`], appending warnings to `warnings` as they arise, so that the ones raised
/// before an error are not lost (streaming would already have emitted them).
pub fn plan_epoch_with(cfg: &EpochConfig, warnings: &mut Warnings) -> Result<Partition> {
    cfg.validate()?;
    batching::generate(cfg, warnings)
}

/// `plan_epoch(cfg).partition[node, rank, worker].flatten()`. With `random` batching only this
/// worker's partition entries are computed; the other methods build the global order first.
pub fn plan_worker(
    cfg: &EpochConfig,
    node: usize,
    rank: usize,
    worker: usize,
) -> Result<WorkerPlan> {
    let mut warnings = Warnings::new();
    let ids = plan_worker_with(cfg, [node, rank, worker], &mut warnings)?;
    Ok(WorkerPlan { ids, warnings })
}

/// [`plan_worker`] for `[node, rank, worker]`, appending warnings to `warnings` as they arise.
pub fn plan_worker_with(
    cfg: &EpochConfig,
    [node, rank, worker]: [usize; 3],
    warnings: &mut Warnings,
) -> Result<Vec<i64>> {
    cfg.validate()?;
    let w = &cfg.world;
    if node >= w.num_nodes || rank >= w.ranks_per_node || worker >= w.workers_per_rank {
        return Err(Error::InvalidArgument(format!(
            "worker ({node}, {rank}, {worker}) is outside the world ({}, {}, {})",
            w.num_nodes, w.ranks_per_node, w.workers_per_rank
        )));
    }
    probe_plan_memory(cfg)?;
    batching::generate_worker(cfg, [node, rank, worker], warnings)
}

/// One worker's share of the epoch, handed out in pieces: `plan_worker(...).ids` cut at the
/// pieces asked for. With `random` batching and any shuffle but `naive` (or none) each piece is
/// computed when asked, in memory bounded by the piece plus a few words per shard and
/// canonical node, whatever the epoch's size; other configurations plan the worker's share
/// whole at the start and slice it.
pub struct WorkerCursor {
    inner: Cursor,
    /// Warnings streaming would have emitted, in order (all known at the start).
    pub warnings: Warnings,
}

enum Cursor {
    Lazy(Box<batching::LazyWorker>),
    Whole { ids: Vec<i64>, next: usize },
}

/// [`plan_worker`] as a [`WorkerCursor`] at the worker's first slot.
pub fn plan_worker_pieces(
    cfg: &EpochConfig,
    node: usize,
    rank: usize,
    worker: usize,
) -> Result<WorkerCursor> {
    plan_worker_pieces_cached(cfg, [node, rank, worker], None)
}

/// [`plan_worker_pieces`], reading the shuffle's counted draws from `cache` where it holds this
/// epoch's, and keeping them there once counting them took long enough (best effort: a cache
/// that cannot be used is reported in [`WorkerCursor::count_cache_stats`], never an error).
pub fn plan_worker_pieces_cached(
    cfg: &EpochConfig,
    [node, rank, worker]: [usize; 3],
    cache: Option<&CountCache>,
) -> Result<WorkerCursor> {
    cfg.validate_bounded(false)?;
    let w = &cfg.world;
    if node >= w.num_nodes || rank >= w.ranks_per_node || worker >= w.workers_per_rank {
        return Err(Error::InvalidArgument(format!(
            "worker ({node}, {rank}, {worker}) is outside the world ({}, {}, {})",
            w.num_nodes, w.ranks_per_node, w.workers_per_rank
        )));
    }
    let mut warnings = Warnings::new();
    if let Some(lazy) = batching::lazy_worker(cfg, [node, rank, worker], cache, &mut warnings)? {
        return Ok(WorkerCursor {
            inner: Cursor::Lazy(Box::new(lazy)),
            warnings,
        });
    }
    let plan = plan_worker(cfg, node, rank, worker)?;
    Ok(WorkerCursor {
        inner: Cursor::Whole {
            ids: plan.ids,
            next: 0,
        },
        warnings: plan.warnings,
    })
}

impl WorkerCursor {
    /// The length of the worker's share, padding included.
    pub fn len(&self) -> usize {
        match &self.inner {
            Cursor::Lazy(lazy) => lazy.len(),
            Cursor::Whole { ids, .. } => ids.len(),
        }
    }

    /// Whether the worker's share is empty.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// How many slots were handed out.
    pub fn position(&self) -> usize {
        match &self.inner {
            Cursor::Lazy(lazy) => lazy.position(),
            Cursor::Whole { next, .. } => *next,
        }
    }

    /// Whether the pieces are computed as they are asked for (else the share was planned
    /// whole at the start).
    pub fn is_lazy(&self) -> bool {
        matches!(self.inner, Cursor::Lazy(_))
    }

    /// What the plan did with its [`CountCache`]: `None` without one, or where no
    /// shuffle is evaluated in pieces.
    pub fn count_cache_stats(&self) -> Option<&CountCacheStats> {
        match &self.inner {
            Cursor::Lazy(lazy) => lazy.count_cache_stats(),
            Cursor::Whole { .. } => None,
        }
    }

    /// The ids of the next `max` slots (-1 for padding), fewer at the end, none past it.
    pub fn next_piece(&mut self, max: usize) -> Result<Vec<i64>> {
        match &mut self.inner {
            Cursor::Lazy(lazy) => lazy.next_piece(max),
            Cursor::Whole { ids, next } => {
                let end = next.saturating_add(max).min(ids.len());
                let piece = ids[*next..end].to_vec();
                *next = end;
                Ok(piece)
            }
        }
    }
}

/// A plan holds about two arrays of 8-byte ids as long as the epoch plus its padding (the
/// partition and a sample map): refuse with `MemoryError` what cannot be allocated, rather
/// than abort midway (`batch_size=2**28` or `epoch_size=2**30` under `ulimit -v`).
fn probe_plan_memory(cfg: &EpochConfig) -> Result<()> {
    let w = &cfg.world;
    let epoch: u64 = cfg.streams.iter().map(|s| s.choose.max(0) as u64).sum();
    let padding = [
        cfg.num_canonical_nodes,
        w.num_nodes,
        w.ranks_per_node,
        w.workers_per_rank,
        cfg.batch_size,
    ]
    .iter()
    .try_fold(1u64, |acc, &d| acc.checked_mul(d as u64));
    let ids = padding.and_then(|p| p.checked_add(epoch));
    let bytes = ids.and_then(|n| n.checked_mul(16)).unwrap_or(u64::MAX);
    crate::limits::probe_alloc(bytes, "the epoch's sample order")
}
