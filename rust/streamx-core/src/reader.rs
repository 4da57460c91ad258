//! Random access to the samples of a whole dataset: global sample id → shard and local id,
//! shards opened (and decompressed) lazily, mapped once and shared between threads.

mod shard_list;

use std::borrow::Cow;
use std::ops::Range;
use std::path::PathBuf;
use std::sync::{Arc, PoisonError, RwLock};

pub use shard_list::IndexedPart;
use shard_list::ShardList;

use crate::compression::{decompress_file, Compression};
use crate::error::{Error, Result};
use crate::mds::sample::ColumnLayout;
use crate::mds::shard::Shard;
use crate::mmap::changed_error;

/// What the reader needs to know about one shard (from its `index.json` entry).
#[derive(Debug, Clone)]
pub struct ShardDesc {
    /// Where the uncompressed shard is, or will be once decompressed.
    pub raw_path: PathBuf,
    /// Where the compressed shard is, if the dataset is compressed.
    pub zip_path: Option<PathBuf>,
    /// The codec of `zip_path`.
    pub compression: Option<Compression>,
    /// Sample count from the index; the opened file must agree.
    pub samples: u64,
    /// The raw file's size from the index (`raw_data.bytes`): decompression stops past it.
    pub raw_bytes: Option<u64>,
    /// Column sizes of this shard.
    pub layout: ColumnLayout,
}

/// The shards of a dataset, addressed by global sample id. `Sync`: a shard is opened by the
/// first thread that needs it and shared through an `Arc` after that.
#[derive(Debug)]
pub struct ShardSet {
    shards: ShardList,
    /// `ends[i]` = samples in shards `0..=i`.
    ends: Vec<u64>,
    open: Vec<RwLock<Option<Arc<Shard>>>>,
}

impl ShardSet {
    /// A set over `descs`, in index order. Nothing is opened yet.
    pub fn new(descs: Vec<ShardDesc>) -> Self {
        Self::over(ShardList::Listed(descs))
    }

    /// A set over the shards of `parts`, in order; a shard's layout is the one at its part's
    /// `first_schema` plus its schema id. Its paths are joined when it is opened: nothing is
    /// kept per shard but its sample count's running total and its open map. Refuses a
    /// schema id without a layout and a compression no codec reads.
    pub fn from_indexes(parts: Vec<IndexedPart>, layouts: Vec<ColumnLayout>) -> Result<Self> {
        Ok(Self::over(ShardList::indexed(parts, layouts)?))
    }

    fn over(shards: ShardList) -> Self {
        let ends: Vec<u64> = shards
            .samples()
            .scan(0u64, |total, samples| {
                *total = total.saturating_add(samples);
                Some(*total)
            })
            .collect();
        let open = ends.iter().map(|_| RwLock::new(None)).collect();
        Self { shards, ends, open }
    }

    /// Total samples across all shards.
    pub fn num_samples(&self) -> u64 {
        self.ends.last().copied().unwrap_or(0)
    }

    /// Number of shards (including empty ones).
    pub fn num_shards(&self) -> usize {
        self.shards.len()
    }

    /// The descriptor of shard `shard`: borrowed when the set was made from descriptors,
    /// built now (paths joined) when made from index tables.
    pub fn desc(&self, shard: usize) -> Result<Cow<'_, ShardDesc>> {
        self.shards.desc(shard)
    }

    /// The schema id of shard `shard` among the layouts, for a set made from index tables
    /// (`None` for one made from descriptors, or a shard out of range).
    pub fn schema_id(&self, shard: usize) -> Option<usize> {
        self.shards.schema_id(shard)
    }

    /// The column layout of shard `shard`.
    fn layout(&self, shard: usize) -> Result<&ColumnLayout> {
        self.shards.layout(shard).ok_or(Error::IndexOutOfRange {
            index: shard as i64,
            len: self.shards.len() as u64,
        })
    }

    /// The global id of shard `shard`'s first sample.
    pub fn shard_start(&self, shard: usize) -> u64 {
        shard
            .checked_sub(1)
            .and_then(|i| self.ends.get(i))
            .copied()
            .unwrap_or(0)
    }

    /// Maps a global sample id to `(shard, local id)`; zero-sample shards are never returned.
    pub fn locate(&self, global: u64) -> Result<(usize, usize)> {
        if global >= self.num_samples() {
            return Err(Error::IndexOutOfRange {
                index: global as i64,
                len: self.num_samples(),
            });
        }
        // The first shard whose end is past `global`; equal ends (empty shards) are skipped.
        let shard = self.ends.partition_point(|&end| end <= global);
        Ok((shard, (global - self.shard_start(shard)) as usize))
    }

    /// Whether shard `shard` is currently mapped.
    pub fn is_open(&self, shard: usize) -> bool {
        self.open
            .get(shard)
            .is_some_and(|cell| read(cell).is_some())
    }

    /// The opened shard, opening it first if needed: the raw file is mapped, or made from the
    /// compressed file (atomically) when only that exists. Neither on disk gives
    /// [`Error::NotFound`] for the raw path, so the caller can download and retry.
    pub fn shard(&self, shard: usize) -> Result<Arc<Shard>> {
        let cell = self.open.get(shard).ok_or(Error::IndexOutOfRange {
            index: shard as i64,
            len: self.shards.len() as u64,
        })?;
        if let Some(open) = read(cell).as_ref() {
            return Ok(Arc::clone(open));
        }
        let mut slot = cell.write().unwrap_or_else(PoisonError::into_inner);
        // Another thread may have opened it while we waited for the lock.
        if let Some(open) = slot.as_ref() {
            return Ok(Arc::clone(open));
        }
        let opened = Arc::new(Self::open_shard(&*self.shards.desc(shard)?)?);
        *slot = Some(Arc::clone(&opened));
        Ok(opened)
    }

    fn open_shard(desc: &ShardDesc) -> Result<Shard> {
        let shard = match Shard::open(&desc.raw_path) {
            Err(Error::NotFound(_)) => {
                let (Some(zip), Some(compression)) = (&desc.zip_path, &desc.compression) else {
                    return Err(Error::NotFound(desc.raw_path.clone()));
                };
                match decompress_file(zip, &desc.raw_path, compression, desc.raw_bytes) {
                    Err(Error::NotFound(_)) => return Err(Error::NotFound(desc.raw_path.clone())),
                    other => other?,
                };
                Shard::open(&desc.raw_path)?
            }
            other => other?,
        };
        if shard.len() as u64 != desc.samples {
            return Err(Error::CorruptShard {
                path: desc.raw_path.clone(),
                reason: format!(
                    "index says {} samples, file has {}",
                    desc.samples,
                    shard.len()
                ),
            });
        }
        Ok(shard)
    }

    /// Drops this set's mapping of shard `shard` (views already handed out keep theirs), so
    /// the file can be deleted or replaced; the next access reopens it.
    pub fn evict(&self, shard: usize) {
        if let Some(cell) = self.open.get(shard) {
            *cell.write().unwrap_or_else(PoisonError::into_inner) = None;
        }
    }

    /// `read`'s outcome, unless `shard` (number `index`) changed under its map, which makes
    /// whatever was read from it worthless: then [`Error::CorruptShard`] naming the file. Call
    /// it after every read from a shard's bytes. A changed shard is dropped from the set, so
    /// the next access maps the file afresh.
    pub fn checked<T>(&self, index: usize, shard: &Arc<Shard>, read: Result<T>) -> Result<T> {
        if !shard.changed() {
            return read;
        }
        if let Some(cell) = self.open.get(index) {
            let mut slot = cell.write().unwrap_or_else(PoisonError::into_inner);
            if slot.as_ref().is_some_and(|open| Arc::ptr_eq(open, shard)) {
                *slot = None;
            }
        }
        Err(changed_error(shard.path()))
    }

    /// Finds sample `global` and fills `out` with its columns' byte ranges within the returned
    /// shard's [`Shard::bytes`]. Returning the `Arc` (not borrowed slices) keeps the map alive
    /// for as long as the caller holds views of it, even across [`ShardSet::evict`].
    pub fn sample_columns(&self, global: u64, out: &mut Vec<Range<usize>>) -> Result<Arc<Shard>> {
        let (index, local) = self.locate(global)?;
        let shard = self.shard(index)?;
        let read = shard.sample_column_ranges(local, self.layout(index)?, out);
        self.checked(index, &shard, read.map_err(|e| with_global(e, global)))?;
        Ok(shard)
    }

    /// Like [`ShardSet::sample_columns`], but only when the shard is mapped already: `None`
    /// otherwise, so the caller can open it where it chooses (say, with the GIL released).
    /// One lookup and one read lock, for the per-sample hot path.
    pub fn sample_columns_if_open(
        &self,
        global: u64,
        out: &mut Vec<Range<usize>>,
    ) -> Result<Option<(usize, Arc<Shard>)>> {
        let (index, local) = self.locate(global)?;
        let Some(shard) = self.open.get(index).and_then(|cell| read(cell).clone()) else {
            return Ok(None);
        };
        let ranges = shard.sample_column_ranges(local, self.layout(index)?, out);
        self.checked(index, &shard, ranges.map_err(|e| with_global(e, global)))?;
        Ok(Some((index, shard)))
    }

    /// The raw bytes of sample `global` and the shard holding them (check them with
    /// [`ShardSet::checked`] once read).
    pub fn sample_range(&self, global: u64) -> Result<(Arc<Shard>, Range<usize>)> {
        let (index, local) = self.locate(global)?;
        let shard = self.shard(index)?;
        let range = self.checked(index, &shard, shard.sample_range(local))?;
        Ok((shard, range))
    }
}

fn read(cell: &RwLock<Option<Arc<Shard>>>) -> std::sync::RwLockReadGuard<'_, Option<Arc<Shard>>> {
    cell.read().unwrap_or_else(PoisonError::into_inner)
}

/// Adds the global sample id to a per-shard error.
fn with_global(err: Error, global: u64) -> Error {
    match err {
        Error::CorruptShard { path, reason } => Error::CorruptShard {
            path,
            reason: format!("{reason} (global sample {global})"),
        },
        other => other,
    }
}
