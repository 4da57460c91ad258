//! The wall clock in nanoseconds: access stamps for LRU, and nonces. A leaf of the cache
//! module, so the ledger and the files it opens do not import each other for it.

use std::time::{SystemTime, UNIX_EPOCH};

/// Nanoseconds since the Unix epoch (1 if the clock reads before it).
pub(crate) fn now_nanos() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(1, |d| d.as_nanos() as u64)
}
