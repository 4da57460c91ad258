//! Evictions asked for by the caller (mosaicml-streaming's `evict_shard` and
//! `evict_coldest_shard`), as opposed to the ones [`Ledger::begin_download`] makes for room.

use std::sync::atomic::Ordering::{Acquire, Relaxed};

use super::layout::{LOCAL, PINNED_FOREVER};
use super::ledger::Ledger;
use super::lru::select_victims;
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

    /// Brings the node back under its limit once pins are released: a download needed right
    /// away may have overshot it while every other shard was pinned, and nothing else would
    /// give those bytes back. Evicts unpinned evictable local shards, least recently used
    /// first, until usage is within the limit or no candidate is left.
    ///
    /// Returns the shards evicted (none without a limit or when already within it).
    ///
    /// # Errors
    /// [`Error::Io`] if a file cannot be deleted.
    pub fn trim_to_limit(&self) -> Result<Vec<usize>> {
        let Some(limit) = self.limit() else {
            return Ok(Vec::new());
        };
        if self.usage() <= limit {
            return Ok(Vec::new()); // the common case, without taking the lock
        }
        let _lock = self.lock()?;
        let selection = select_victims(self.candidates(usize::MAX), self.usage(), 0, limit);
        for &victim in &selection.victims {
            self.delete_files(victim)
                .map_err(|e| Error::io(&self.path, e))?;
            let entry = self.entry(victim)?;
            self.release(entry);
            entry.last_access.store(0, Relaxed);
        }
        Ok(selection.victims)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ledger_with_files(dir: &std::path::Path, shards: usize) -> Ledger {
        ledger_with_limit(dir, shards, None)
    }

    fn ledger_with_limit(dir: &std::path::Path, shards: usize, limit: Option<u64>) -> Ledger {
        let files = (0..shards)
            .map(|i| vec![dir.join(format!("shard.{i}"))])
            .collect();
        Ledger::open(dir.join("ledger"), shards, limit)
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

    #[test]
    fn trim_to_limit_evicts_coldest_unpinned_until_within() {
        let dir = tempfile::tempdir().unwrap();
        let ledger = ledger_with_limit(dir.path(), 4, Some(20));
        for shard in 0..4 {
            make_local(&ledger, dir.path(), shard, 8); // 32 bytes: over the limit by 12
        }
        for shard in [2, 1, 3] {
            ledger.touch(shard).unwrap(); // coldest first: 0, 2, 1, 3
        }
        ledger.pin(0).unwrap();
        assert_eq!(ledger.trim_to_limit().unwrap(), vec![2, 1]);
        assert_eq!(ledger.usage(), 16);
        assert!(dir.path().join("shard.0").exists());
        assert!(!dir.path().join("shard.2").exists());
        assert_eq!(ledger.trim_to_limit().unwrap(), Vec::<usize>::new());
    }

    #[test]
    fn trim_to_limit_stops_when_only_pinned_shards_are_left() {
        let dir = tempfile::tempdir().unwrap();
        let ledger = ledger_with_limit(dir.path(), 2, Some(5));
        make_local(&ledger, dir.path(), 0, 4);
        make_local(&ledger, dir.path(), 1, 4);
        ledger.pin(0).unwrap();
        ledger.pin(1).unwrap();
        assert_eq!(ledger.trim_to_limit().unwrap(), Vec::<usize>::new());
        assert_eq!(ledger.usage(), 8);
    }
}
