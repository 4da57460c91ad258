//! [`Ledger`]: the shared, crash-safe accounting of which shards are on local disk.

use std::io;
use std::path::{Path, PathBuf};
use std::sync::atomic::Ordering::{Acquire, Relaxed, Release};

use super::clock::now_nanos;
use super::layout::{Entry, View, LOCAL, NO_LIMIT, PINNED_FOREVER, PREPARING, REMOTE};
use super::lock::{FileLock, ProcessId};
use super::lru::{select_victims, Candidate};
use super::owner::Owner;
use super::shard_files::{IndexedPart, ShardFiles};
use crate::error::{Error, Result};

/// Where a shard stands in the cache.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ShardState {
    /// Not on local disk.
    Remote,
    /// Being downloaded or decompressed by some process.
    Preparing,
    /// On local disk.
    Local,
}

/// What a caller of [`Ledger::begin_download`] should do next.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Decision {
    /// The shard is now `Preparing` and owned by the caller, with its bytes reserved. The
    /// caller must end with [`Ledger::finish_download`] or [`Ledger::abort_download`].
    /// `evicted` lists the shards evicted to make room (their files are already deleted).
    Download { evicted: Vec<usize> },
    /// The shard is already local; its access time was stamped.
    AlreadyLocal,
    /// Another live process (or thread of this one) is preparing it: poll again later.
    WaitForOther { owner_pid: u32 },
}

/// What [`Ledger::recover`] undid on behalf of dead processes.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct RecoveryReport {
    /// Shards left `Preparing` by dead processes, now `Remote` again.
    pub downloads: usize,
    /// Pin slots of dead processes released.
    pub pins: usize,
}

/// A node-wide shard cache ledger backed by one memory-mapped file.
///
/// Every process that opens the same path shares the same state. Mutations take an exclusive
/// `flock` on the file; [`Ledger::touch`] and the getters are lock-free.
pub struct Ledger {
    pub(super) path: PathBuf,
    lock_path: PathBuf,
    pub(super) view: View,
    num_shards: usize,
    /// Each shard's files, with the index's size of each (None: any size is deleted).
    pub(super) files: ShardFiles,
    pub(super) owner: Owner,
}

/// The file every mutation locks: beside the ledger, so the ledger itself can be replaced.
fn lock_path(path: &Path) -> PathBuf {
    let mut name = path.file_name().unwrap_or_default().to_os_string();
    name.push(".lock");
    path.with_file_name(name)
}

impl Ledger {
    /// Opens (creating if needed) the ledger at `path` for `num_shards` shards and sets the
    /// node's byte limit (`None` = unlimited; the latest opener's value wins). Work left behind
    /// by dead processes is recovered.
    pub fn open(path: impl AsRef<Path>, num_shards: usize, limit: Option<u64>) -> Result<Self> {
        let path = path.as_ref().to_path_buf();
        let dir = path.parent().unwrap_or(Path::new(".")).to_path_buf();
        std::fs::create_dir_all(&dir).map_err(|e| Error::io(&dir, e))?;
        let lock_path = lock_path(&path);
        let _lock = FileLock::exclusive(&lock_path).map_err(|e| Error::io(&lock_path, e))?;
        let view = super::file::open_or_create(&path, num_shards)?;
        view.header()
            .limit
            .store(limit.unwrap_or(NO_LIMIT), Relaxed);
        let ledger = Self {
            path,
            lock_path,
            view,
            num_shards,
            files: ShardFiles::Indexed(Vec::new()),
            owner: Owner::new(&dir),
        };
        ledger.owner.sweep();
        ledger.recover_locked();
        Ok(ledger)
    }

    /// Registers each shard's files, deleted by [`Ledger::begin_download`] on eviction.
    pub fn with_shard_files(mut self, files: Vec<Vec<PathBuf>>) -> Result<Self> {
        if files.len() != self.num_shards() {
            return Err(Error::InvalidArgument(format!(
                "shard_files has {} entries for {} shards",
                files.len(),
                self.num_shards()
            )));
        }
        let sizes = files.iter().map(|f| vec![None; f.len()]).collect();
        self.files = ShardFiles::Listed { files, sizes };
        Ok(self)
    }

    /// Registers the shards' files as index tables give them, read when a shard is evicted
    /// (nothing held per shard); the sizes are the index's.
    ///
    /// # Errors
    /// [`Error::InvalidArgument`] if a part's shards lie beyond the ledger's.
    pub fn with_indexed_files(mut self, parts: Vec<IndexedPart>) -> Result<Self> {
        let files = ShardFiles::Indexed(parts);
        files.check(self.num_shards)?;
        self.files = files;
        Ok(self)
    }

    /// The registered files of every shard and their sizes, as the JSON manifest that
    /// `streamx cache` reads (`{"version": 1, "files": [...], "sizes": [...]}`).
    pub fn files_manifest(&self) -> Vec<u8> {
        self.files.manifest(self.num_shards)
    }

    /// The shards that are local or being prepared, in order (one pass over the mapping).
    pub fn held_shards(&self) -> Vec<usize> {
        let entries = self.view.entries().iter().enumerate();
        entries
            .filter(|(_, e)| e.state.load(Acquire) != REMOTE)
            .map(|(shard, _)| shard)
            .collect()
    }

    /// The ledger file.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Number of shards tracked.
    pub fn num_shards(&self) -> usize {
        self.num_shards
    }

    /// The node's byte limit, if any.
    pub fn limit(&self) -> Option<u64> {
        Some(self.view.header().limit.load(Relaxed)).filter(|&l| l != NO_LIMIT)
    }

    /// Bytes of local shards plus reservations of shards being prepared.
    pub fn usage(&self) -> u64 {
        self.view.header().usage.load(Relaxed)
    }

    /// The shard's current state.
    pub fn state(&self, shard: usize) -> Result<ShardState> {
        Ok(match self.entry(shard)?.state.load(Acquire) {
            LOCAL => ShardState::Local,
            PREPARING => ShardState::Preparing,
            _ => ShardState::Remote,
        })
    }

    /// Bytes the shard occupies (or has reserved while preparing).
    pub fn bytes(&self, shard: usize) -> Result<u64> {
        Ok(self.entry(shard)?.bytes.load(Relaxed))
    }

    /// Live pins on the shard, over all processes.
    pub fn pins(&self, shard: usize) -> Result<u32> {
        Ok(self.entry(shard)?.pins.load(Relaxed))
    }

    /// Last access in nanoseconds since the Unix epoch (0 = never).
    pub fn last_access(&self, shard: usize) -> Result<u64> {
        Ok(self.entry(shard)?.last_access.load(Relaxed))
    }

    /// Whether the shard may be evicted to make room.
    pub fn is_evictable(&self, shard: usize) -> Result<bool> {
        Ok(self.entry(shard)?.flags.load(Relaxed) & PINNED_FOREVER == 0)
    }

    /// Marks shards as evictable or not. Shards of streams without a remote hold the user's
    /// only copy and must be marked `false`.
    pub fn set_evictable(&self, shards: std::ops::Range<usize>, evictable: bool) -> Result<()> {
        if shards.end > self.num_shards() {
            return Err(self.out_of_range(shards.end.saturating_sub(1)));
        }
        if shards.start > shards.end {
            return Err(Error::InvalidArgument(format!(
                "shard range {}..{} starts after it ends",
                shards.start, shards.end
            )));
        }
        let _lock = self.lock()?;
        for entry in &self.view.entries()[shards] {
            if evictable {
                entry.flags.fetch_and(!PINNED_FOREVER, Relaxed);
            } else {
                entry.flags.fetch_or(PINNED_FOREVER, Relaxed);
            }
        }
        Ok(())
    }

    /// Stamps the shard's access time. Lock-free.
    pub fn touch(&self, shard: usize) -> Result<()> {
        self.entry(shard)?
            .last_access
            .fetch_max(now_nanos(), Relaxed);
        Ok(())
    }

    /// Reconciles a shard with what is on disk (`Some(bytes)` = local, `None` = absent), e.g.
    /// after scanning the cache directory at start. A shard a live process is preparing is left
    /// alone; returns whether the entry was updated.
    pub fn sync(&self, shard: usize, on_disk: Option<u64>) -> Result<bool> {
        let entry = self.entry(shard)?;
        let _lock = self.lock()?;
        if entry.state.load(Acquire) == PREPARING && self.owner.is_alive(owner(entry)) {
            return Ok(false);
        }
        if let Some(bytes) = on_disk {
            self.check_fits_count(shard, entry, bytes)?;
        }
        self.release(entry);
        if let Some(bytes) = on_disk {
            self.add_usage(bytes);
            entry.bytes.store(bytes, Relaxed);
            entry.last_access.fetch_max(now_nanos(), Relaxed);
            entry.state.store(LOCAL, Release);
        }
        Ok(true)
    }

    /// Claims a shard for download, evicting least recently used shards (deleting the files
    /// registered with [`Ledger::with_shard_files`]) until `bytes_needed` fits under the limit.
    pub fn begin_download(&self, shard: usize, bytes_needed: u64) -> Result<Decision> {
        self.begin_download_with(shard, bytes_needed, |victim| self.delete_files(victim))
    }

    /// Like [`Ledger::begin_download`], but `evict(victim)` deletes a victim's files. It runs
    /// under the lock, so no process can start re-downloading a victim while it is deleted.
    /// If evicting every unpinned evictable local shard is not enough, the download proceeds
    /// anyway: the overshoot is bounded by the shards in flight.
    pub fn begin_download_with(
        &self,
        shard: usize,
        bytes_needed: u64,
        evict: impl FnMut(usize) -> io::Result<()>,
    ) -> Result<Decision> {
        let decision = self.begin_inner(shard, bytes_needed, false, evict)?;
        Ok(decision.expect("a download that need not fit always begins"))
    }

    /// Like [`Ledger::begin_download`], but only when the shard fits under the limit after
    /// evicting unpinned least recently used shards. When it does not, nothing is evicted or
    /// reserved and `None` is returned: prefetching uses this so that looking ahead never
    /// pushes the cache over its limit (only shards needed right now may).
    pub fn try_begin_download(&self, shard: usize, bytes_needed: u64) -> Result<Option<Decision>> {
        self.begin_inner(shard, bytes_needed, true, |victim| {
            self.delete_files(victim)
        })
    }

    fn begin_inner(
        &self,
        shard: usize,
        bytes_needed: u64,
        must_fit: bool,
        mut evict: impl FnMut(usize) -> io::Result<()>,
    ) -> Result<Option<Decision>> {
        let entry = self.entry(shard)?;
        let _lock = self.lock()?;
        match entry.state.load(Acquire) {
            LOCAL => {
                entry.last_access.fetch_max(now_nanos(), Relaxed);
                return Ok(Some(Decision::AlreadyLocal));
            }
            PREPARING if self.owner.is_alive(owner(entry)) => {
                return Ok(Some(Decision::WaitForOther {
                    owner_pid: entry.owner_pid.load(Relaxed),
                }));
            }
            PREPARING => self.release(entry),
            _ => {}
        }
        self.check_fits_count(shard, entry, bytes_needed)?;
        let Some(evicted) = self.make_room(shard, bytes_needed, must_fit, &mut evict)? else {
            return Ok(None);
        };
        let me = self.me()?;
        self.add_usage(bytes_needed);
        entry.bytes.store(bytes_needed, Relaxed);
        entry.owner_pid.store(me.pid, Relaxed);
        entry.owner_start.store(me.start, Relaxed);
        entry.state.store(PREPARING, Release);
        Ok(Some(Decision::Download { evicted }))
    }

    /// Marks a shard this process was preparing as local, with `actual_bytes` on disk.
    pub fn finish_download(&self, shard: usize, actual_bytes: u64) -> Result<()> {
        let entry = self.entry(shard)?;
        let _lock = self.lock()?;
        self.check_owner(shard, entry)?;
        self.check_fits_count(shard, entry, actual_bytes)?;
        self.release(entry);
        self.add_usage(actual_bytes);
        entry.bytes.store(actual_bytes, Relaxed);
        entry.last_access.fetch_max(now_nanos(), Relaxed);
        entry.state.store(LOCAL, Release);
        Ok(())
    }

    /// Gives up a download this process began: the shard is `Remote` again.
    pub fn abort_download(&self, shard: usize) -> Result<()> {
        let entry = self.entry(shard)?;
        let _lock = self.lock()?;
        self.check_owner(shard, entry)?;
        self.release(entry);
        Ok(())
    }

    /// Evicts LRU victims until `needed` fits; a second pass after recovery catches pins held
    /// by dead processes. With `must_fit`, returns `None` (evicting nothing) when even that
    /// is not enough.
    fn make_room(
        &self,
        shard: usize,
        needed: u64,
        must_fit: bool,
        evict: &mut impl FnMut(usize) -> io::Result<()>,
    ) -> Result<Option<Vec<usize>>> {
        let Some(limit) = self.limit() else {
            return Ok(Some(Vec::new()));
        };
        let mut selection = select_victims(self.candidates(shard), self.usage(), needed, limit);
        if !selection.fits {
            self.recover_locked();
            selection = select_victims(self.candidates(shard), self.usage(), needed, limit);
        }
        if must_fit && !selection.fits {
            return Ok(None);
        }
        for &victim in &selection.victims {
            evict(victim).map_err(|e| Error::io(&self.path, e))?;
            let entry = &self.view.entries()[victim];
            self.release(entry);
            entry.last_access.store(0, Relaxed);
        }
        Ok(Some(selection.victims))
    }

    pub(super) fn candidates(&self, except: usize) -> Vec<Candidate> {
        let entries = self.view.entries().iter().enumerate();
        entries
            .filter(|&(i, e)| {
                i != except
                    && e.state.load(Acquire) == LOCAL
                    && e.pins.load(Relaxed) == 0
                    && e.flags.load(Relaxed) & PINNED_FOREVER == 0
            })
            .map(|(shard, e)| Candidate {
                shard,
                last_access: e.last_access.load(Relaxed),
                bytes: e.bytes.load(Relaxed),
            })
            .collect()
    }

    /// Sets a shard `Remote` and returns its bytes to the budget. Caller holds the lock.
    pub(super) fn release(&self, entry: &Entry) {
        if entry.state.load(Acquire) != REMOTE {
            let usage = &self.view.header().usage;
            usage.store(
                usage
                    .load(Relaxed)
                    .saturating_sub(entry.bytes.load(Relaxed)),
                Relaxed,
            );
        }
        entry.state.store(REMOTE, Release);
        entry.bytes.store(0, Relaxed);
        entry.owner_pid.store(0, Relaxed);
        entry.owner_start.store(0, Relaxed);
    }

    /// Refuses a size that would wrap the node's byte count once `entry` holds it (an index
    /// can claim any size): a wrapped count would let the cache grow without bound.
    fn check_fits_count(&self, shard: usize, entry: &Entry, bytes: u64) -> Result<()> {
        let held = match entry.state.load(Acquire) {
            REMOTE => 0,
            _ => entry.bytes.load(Relaxed),
        };
        let others = self.usage().saturating_sub(held);
        if others.checked_add(bytes).is_some() {
            return Ok(());
        }
        Err(Error::InvalidArgument(format!(
            "shard {shard}: {bytes} bytes would overflow the byte count of cache ledger {}",
            self.path.display()
        )))
    }

    fn add_usage(&self, bytes: u64) {
        self.view.header().usage.fetch_add(bytes, Relaxed);
    }

    fn check_owner(&self, shard: usize, entry: &Entry) -> Result<()> {
        if entry.state.load(Acquire) == PREPARING && owner(entry) == self.me()? {
            return Ok(());
        }
        Err(Error::InvalidArgument(format!(
            "shard {shard} is not being downloaded by this process (cache ledger {})",
            self.path.display()
        )))
    }

    pub(super) fn entry(&self, shard: usize) -> Result<&Entry> {
        self.view
            .entries()
            .get(shard)
            .ok_or_else(|| self.out_of_range(shard))
    }

    fn out_of_range(&self, shard: usize) -> Error {
        Error::InvalidArgument(format!(
            "shard {shard} out of range for {} shards",
            self.num_shards()
        ))
    }

    pub(super) fn lock(&self) -> Result<FileLock> {
        let lock =
            FileLock::exclusive(&self.lock_path).map_err(|e| Error::io(&self.lock_path, e))?;
        self.check_mapped()?;
        Ok(lock)
    }

    /// An error once the ledger file was truncated under its mapping (by something other
    /// than streamx, which replaces it only by rename): its state is gone.
    pub(super) fn check_mapped(&self) -> Result<()> {
        if self.view.poisoned() {
            return Err(Error::io(
                &self.path,
                io::Error::other(
                    "the cache ledger was truncated while in use (by something other than \
                     streamx); start the dataset again to rebuild it",
                ),
            ));
        }
        Ok(())
    }

    /// This process's identity in the ledger (see `super::owner`).
    pub(super) fn me(&self) -> Result<ProcessId> {
        self.owner.me().map_err(|e| Error::io(&self.path, e))
    }
}

pub(super) fn owner(entry: &Entry) -> ProcessId {
    ProcessId {
        pid: entry.owner_pid.load(Relaxed),
        start: entry.owner_start.load(Relaxed),
    }
}
