//! Where a [`LazyPy1e`] keeps its counted draws between processes: the epoch's file in a
//! [`CountCache`], read before counting and written node by node under the epoch's lock once
//! a count took long enough ([`super`] lays the nodes out).

use super::LazyPy1e;
use crate::shuffle::py1e::draws_file::{decode, encode, max_len, Key};
use crate::shuffle::py1e::draws_store::{self, CountCache, CountCacheStats};
use crate::shuffle::py1e::node_draws::count_node;
use crate::shuffle::py1e::resume_marks;
use crate::Result;

/// The epoch's [`CountCache`], the key of its draws, and what was done with it.
pub(super) struct Store {
    pub(super) cache: CountCache,
    pub(super) key: Key,
    /// Samples whose draws were counted here since the file was last read or written.
    pub(super) unsaved: u64,
    /// No file is written: the directory is not private, or a write failed.
    pub(super) off: bool,
    pub(super) stats: CountCacheStats,
}

impl LazyPy1e {
    /// Counts nodes until `end` of them are known, keeping them once that took long enough.
    /// A node whose count will be kept is counted under the epoch's lock, after reading the
    /// file again: the processes starting this epoch together count it once.
    pub(super) fn count_through(&mut self, end: usize) -> Result<()> {
        while self.nodes.len() < end {
            let lock = self.lock_next();
            if lock.is_some() {
                self.load();
                if self.nodes.len() >= end {
                    break;
                }
            }
            let (a, b) = self.groups[self.nodes.len()];
            let node = count_node(&mut self.rng, &self.spans[a..b], self.bounds)?;
            let counted = node.total as u64;
            self.nodes.push(node);
            self.save(counted);
            drop(lock); // once the node is written, for the processes waiting to read it
        }
        Ok(())
    }

    /// The epoch's lock, if the next node's count would be written; `None` where it would
    /// not be, or where the lock could not be had (counted around, the reason kept).
    fn lock_next(&mut self) -> Option<draws_store::CountLock> {
        let store = self.store.as_mut().filter(|s| !s.off)?;
        let (a, b) = self.groups[self.nodes.len()];
        let samples: i64 = self.spans[a..b].iter().map(|&(lo, hi)| hi - lo).sum();
        if store.unsaved.saturating_add(samples as u64) < store.cache.min_samples {
            return None;
        }
        let cache = &store.cache;
        match draws_store::lock(&cache.dir, store.key.digest, cache.wait) {
            Ok(lock) => Some(lock),
            Err(err) => {
                store.stats.problem = Some(err.to_string());
                // A holder that did not let go in time: try, but wait no more, for later nodes.
                store.cache.wait = std::time::Duration::ZERO;
                None
            }
        }
    }

    /// Checks the directory before the first read: one that is not private is not used.
    pub(super) fn open_store(&mut self) {
        let Some(store) = &mut self.store else {
            return;
        };
        if let Err(err) = draws_store::check_private(&store.cache.dir) {
            store.stats.problem = Some(err.to_string());
            store.off = true;
            return;
        }
        self.load();
    }

    /// Seeds the nodes the cache's resume marks hold (all or none: marks that are not this
    /// epoch's, whole, are ignored and the reason kept).
    pub(super) fn take_marks(&mut self) {
        let Some(store) = self.store.as_mut().filter(|s| !s.cache.marks.is_empty()) else {
            return;
        };
        let inc = self.rng.words().1;
        let marks = &store.cache.marks;
        if let Some(seeds) = resume_marks::decode(marks, &store.key, inc, &self.spans, &self.groups)
        {
            store.stats.seeded_nodes = seeds.iter().flatten().count();
            self.seeds = seeds;
        } else {
            let len = marks.len();
            let msg = format!("resume marks of {len} bytes are not this epoch's: ignored");
            store.stats.problem = Some(msg);
        }
    }

    /// Takes the counted nodes from the epoch's file, if it holds more than are known here.
    fn load(&mut self) {
        let Some(store) = &mut self.store else {
            return;
        };
        let dir = &store.cache.dir;
        let name = draws_store::file_name(store.key.digest);
        let bytes = match draws_store::read(dir, &name, max_len(&self.groups)) {
            Ok(Some(bytes)) => bytes,
            Ok(None) => return,
            Err(err) => {
                store.stats.problem = Some(format!("{}: {err}", dir.join(&name).display()));
                return;
            }
        };
        let inc = self.rng.words().1;
        if let Some((nodes, after)) = decode(&bytes, &store.key, inc, &self.spans, &self.groups) {
            if nodes.len() > self.nodes.len() {
                store.stats.loaded_nodes = nodes.len();
                store.unsaved = 0; // what was counted here is in the file too
                self.nodes = nodes;
                self.rng = after;
            }
        } else {
            let path = dir.join(&name);
            store.stats.problem = Some(format!(
                "{} does not hold this epoch's draws: ignored",
                path.display()
            ));
        }
    }

    /// Counts every node, and writes what the last writes left out under the epoch's lock
    /// (the file is read first: one that holds every node is kept as it is).
    pub(in crate::shuffle::py1e) fn count_every_node(&mut self) -> Result<()> {
        self.count_through(self.groups.len())?;
        let Some(store) = self.store.as_mut().filter(|s| !s.off && s.unsaved > 0) else {
            return Ok(());
        };
        let cache = &store.cache;
        let lock = match draws_store::lock(&cache.dir, store.key.digest, cache.wait) {
            Ok(lock) => lock,
            Err(err) => {
                store.stats.problem = Some(err.to_string());
                return Ok(());
            }
        };
        self.load();
        if let Some(store) = self.store.as_mut().filter(|s| s.unsaved > 0) {
            store.cache.min_samples = 0;
            self.save(0);
        }
        drop(lock);
        Ok(())
    }

    /// Writes every node counted so far, once `counted` more samples make it worth it.
    fn save(&mut self, counted: u64) {
        let Some(store) = &mut self.store else {
            return;
        };
        store.unsaved = store.unsaved.saturating_add(counted);
        if store.off || store.unsaved < store.cache.min_samples {
            return;
        }
        let bytes = encode(&store.key, self.rng.words().1, &self.nodes, &self.rng);
        let name = draws_store::file_name(store.key.digest);
        match draws_store::write(&store.cache.dir, &name, &bytes) {
            Ok(()) => {
                store.stats.saved_nodes = self.nodes.len();
                store.unsaved = 0;
            }
            Err(err) => {
                let path = store.cache.dir.join(&name);
                store.stats.problem = Some(format!("{}: {err}", path.display()));
                store.off = true;
            }
        }
    }
}
