//! Counting every canonical node of a py1e epoch into the count cache ahead of need, in a
//! thread of its own.
//!
//! A node's workers count only the canonical nodes up to the last they read: on node 0 of
//! eight, one. A state dict made there could mark only that one ([`super::resume_marks`]),
//! and a resume on node 7 would count every draw before its own (0.5 s at 10^9 samples).
//! With every node counted in the background, that node's state dicts mark them all.
//!
//! Best effort, like the cache: nodes are written under the epoch's lock as a plan writes
//! them, so the workers that start the epoch meanwhile read what is there; what went wrong
//! is kept in the returned [`CountCacheStats`], never raised.

use std::panic::{catch_unwind, AssertUnwindSafe};
use std::thread::{self, JoinHandle};

use crate::epoch_config::EpochConfig;
use crate::Result;

use super::draws_store::{CountCache, CountCacheStats};
use super::lazy::LazyPy1e;
use super::resume_marks::MarkedEpoch;

/// Writes stop being worth a file's rewrite below this share of the epoch: a count of many
/// small nodes rewrites the growing file about this many times, and once more at the end.
const WRITES: u64 = 16;

/// Counts every canonical node of `cfg`'s epoch into `cache` (what is there already is read,
/// not counted); `None` for a shuffle other than py1e with random batching.
pub fn count_every_node(cfg: &EpochConfig, cache: &CountCache) -> Result<Option<CountCacheStats>> {
    let Some(epoch) = MarkedEpoch::of(cfg)? else {
        return Ok(None);
    };
    let total: i64 = epoch.sizes.iter().sum();
    let cache = CountCache {
        min_samples: cache.min_samples.max(total.max(0) as u64 / WRITES),
        marks: Vec::new(),
        ..cache.clone()
    };
    let (seed, epoch_seed) = epoch.seeds;
    let mut warnings = Vec::new(); // the plan that reads the epoch emits them
    let mut lazy = LazyPy1e::new(
        &epoch.sizes,
        epoch.num_nodes,
        seed,
        epoch_seed,
        epoch.block_size,
        Some(&cache),
        &mut warnings,
    )?;
    lazy.count_every_node()?;
    Ok(lazy.count_cache_stats().cloned())
}

/// [`count_every_node`] in a new thread: its stats when joined (an error or a panic as their
/// `problem`), or the reason no thread could be started.
pub fn spawn_count_every_node(
    cfg: EpochConfig,
    cache: CountCache,
) -> std::io::Result<JoinHandle<Option<CountCacheStats>>> {
    thread::Builder::new()
        .name("streamx-py1e-count".to_owned())
        .spawn(move || {
            let counted = catch_unwind(AssertUnwindSafe(|| count_every_node(&cfg, &cache)));
            let problem = match counted {
                Ok(Ok(stats)) => return stats,
                Ok(Err(err)) => err.to_string(),
                Err(_) => "the count panicked".to_owned(),
            };
            Some(CountCacheStats {
                problem: Some(problem),
                ..CountCacheStats::default()
            })
        })
}
