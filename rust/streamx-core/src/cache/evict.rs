//! Evictions asked for by the caller (mosaicml-streaming's `evict_shard` and
//! `evict_coldest_shard`), as opposed to the ones [`Ledger::begin_download`] makes for room.

use std::sync::atomic::Ordering::{Acquire, Relaxed};

use super::layout::{LOCAL, PINNED_FOREVER};
use super::ledger::Ledger;
use crate::error::{Error, Result};

impl Ledger {
    /// Deletes a local shard's files and returns its bytes to the budget, even if pinned
    /// (readers holding it mapped keep their pages; a later read fetches it again).
    ///
    /// Returns the bytes freed, or `None` when the shard was not local (nothing to do; a
    /// shard another process is preparing is left to it).
    ///
    /// # Errors
    /// [`Error::InvalidArgument`] for an out-of-range shard or one marked not evictable (the
    /// user's own files of a stream without a remote); [`Error::Io`] if a file cannot be deleted.
    pub fn evict(&self, shard: usize) -> Result<Option<u64>> {
        let entry = self.entry(shard)?;
        if entry.flags.load(Relaxed) & PINNED_FOREVER != 0 {
            return Err(Error::InvalidArgument(format!(
                "shard {shard} is not evictable: its files are the only copy (no remote)"
            )));
        }
        let _lock = self.lock()?;
        if entry.state.load(Acquire) != LOCAL {
            return Ok(None);
        }
        self.delete_files(shard)
            .map_err(|e| Error::io(&self.path, e))?;
        let freed = entry.bytes.load(Relaxed);
        self.release(entry);
        entry.last_access.store(0, Relaxed);
        Ok(Some(freed))
    }

    /// Evicts the least recently used local shard that is evictable and not pinned (ties go
    /// to the lowest id). Returns it, or `None` when there is no such shard.
    ///
    /// # Errors
    /// [`Error::Io`] if a file cannot be deleted.
    pub fn evict_coldest(&self) -> Result<Option<usize>> {
        let _lock = self.lock()?;
        let coldest = self
            .candidates(usize::MAX)
            .into_iter()
            .min_by_key(|c| (c.last_access, c.shard));
        let Some(victim) = coldest else {
            return Ok(None);
        };
        self.delete_files(victim.shard)
            .map_err(|e| Error::io(&self.path, e))?;
        let entry = self.entry(victim.shard)?;
        self.release(entry);
        entry.last_access.store(0, Relaxed);
        Ok(Some(victim.shard))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ledger_with_files(dir: &std::path::Path, shards: usize) -> Ledger {
        let files = (0..shards)
            .map(|i| vec![dir.join(format!("shard.{i}"))])
            .collect();
        Ledger::open(dir.join("ledger"), shards, None)
            .unwrap()
            .with_shard_files(files)
            .unwrap()
    }

    fn make_local(ledger: &Ledger, dir: &std::path::Path, shard: usize, bytes: u64) {
        let len = usize::try_from(bytes).unwrap();
        std::fs::write(dir.join(format!("shard.{shard}")), vec![0u8; len]).unwrap();
        ledger.sync(shard, Some(bytes)).unwrap();
    }

    #[test]
    fn evict_deletes_files_and_frees_bytes() {
        let dir = tempfile::tempdir().unwrap();
        let ledger = ledger_with_files(dir.path(), 2);
        make_local(&ledger, dir.path(), 0, 10);
        make_local(&ledger, dir.path(), 1, 7);
        assert_eq!(ledger.evict(0).unwrap(), Some(10));
        assert_eq!(ledger.usage(), 7);
        assert!(!dir.path().join("shard.0").exists());
        assert_eq!(ledger.evict(0).unwrap(), None);
    }

    #[test]
    fn evict_refuses_unevictable_shards() {
        let dir = tempfile::tempdir().unwrap();
        let ledger = ledger_with_files(dir.path(), 1);
        make_local(&ledger, dir.path(), 0, 3);
        ledger.set_evictable(0..1, false).unwrap();
        assert!(ledger.evict(0).is_err());
        assert!(dir.path().join("shard.0").exists());
    }

    #[test]
    fn evict_coldest_takes_least_recent_unpinned() {
        let dir = tempfile::tempdir().unwrap();
        let ledger = ledger_with_files(dir.path(), 3);
        for shard in 0..3 {
            make_local(&ledger, dir.path(), shard, 5);
        }
        ledger.touch(0).unwrap(); // 1 is now the coldest
        ledger.pin(1).unwrap();
        assert_eq!(ledger.evict_coldest().unwrap(), Some(2));
        assert_eq!(ledger.evict_coldest().unwrap(), Some(0));
        assert_eq!(ledger.evict_coldest().unwrap(), None);
        assert_eq!(ledger.usage(), 5);
    }
}
