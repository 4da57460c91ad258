//! The node-local shard cache ledger.
//!
//! Every process on a node that streams into the same cache directory opens the same ledger
//! file and shares one byte budget through it. The file is memory-mapped, so reads and
//! access-time stamps are lock-free atomics; every state change takes an `flock` on the file.
//! Nothing outlives a crashed process: the lock dies with its descriptor, and downloads or
//! pins left behind by a dead process are found by the death of its owner-file lock (which,
//! unlike a pid, holds across PID namespaces) and undone ([`Ledger::recover`]). Every file
//! the ledger creates is opened without following symlinks.
//!
//! A shard moves `Remote -> Preparing -> Local` and back to `Remote` when evicted. While
//! `Preparing`, the bytes it will need are already reserved, so `usage <= limit` holds except
//! where [`Ledger::begin_download`] is asked to go over it (the caller waits for room first:
//! see `streamx.cache.room`). Units are bytes throughout.

mod clock;
mod delete;
mod evict;
mod file;
mod inspect;
mod layout;
mod ledger;
pub(crate) mod lock; // its `flock` also guards py1e's count cache
pub mod lru;
mod owner;
mod pins;
mod shard_files;

pub use inspect::{snapshot, LedgerSnapshot, PinHolder, ShardSnapshot};
pub use ledger::{Decision, Ledger, RecoveryReport, ShardState};
pub use lock::ProcessId;
pub use shard_files::IndexedPart;
