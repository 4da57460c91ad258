//! The thread pool behind the data-parallel steps of the epoch plan (mapping ids, filling
//! partitions). It is built lazily and rebuilt after `fork`: a child process inherits the
//! parent's pool object but none of its threads, and would wait on them forever.

use std::sync::{Arc, Mutex};

use rayon::ThreadPool;

/// Below this many elements the work runs on the calling thread.
pub(crate) const PAR_THRESHOLD: usize = 1 << 16;

static POOL: Mutex<Option<(u32, Arc<ThreadPool>)>> = Mutex::new(None);

/// Thread count: `STREAMX_NUM_THREADS` if set to a positive integer, else the CPU count.
fn num_threads() -> usize {
    std::env::var("STREAMX_NUM_THREADS")
        .ok()
        .and_then(|v| v.parse().ok())
        .filter(|&n: &usize| n > 0)
        .unwrap_or_else(|| std::thread::available_parallelism().map_or(1, usize::from))
}

/// This process's pool, created on first use.
fn pool() -> Option<Arc<ThreadPool>> {
    let pid = std::process::id();
    let mut guard = POOL
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner);
    if let Some((owner, pool)) = guard.as_ref() {
        if *owner == pid {
            return Some(Arc::clone(pool));
        }
    }
    // A pool inherited across fork has no threads; leak it rather than signal phantom workers.
    if let Some(stale) = guard.take() {
        std::mem::forget(stale);
    }
    let built = rayon::ThreadPoolBuilder::new()
        .num_threads(num_threads())
        .build()
        .ok()?;
    let built = Arc::new(built);
    *guard = Some((pid, Arc::clone(&built)));
    Some(built)
}

/// Runs `f` inside this process's pool (or inline if no pool could be built), so rayon
/// iterators in `f` never touch the global pool.
pub(crate) fn install<R: Send>(f: impl FnOnce() -> R + Send) -> R {
    match pool() {
        Some(pool) => pool.install(f),
        None => f(),
    }
}
