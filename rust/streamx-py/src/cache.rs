//! `CacheLedger`: the node-wide shard cache ledger, as the dataset's download path sees it.

use std::collections::HashMap;
use std::path::PathBuf;
use std::sync::Arc;

use pyo3::prelude::*;
use pyo3::types::{PyBytes, PyTuple};
use streamx_core::cache::{Decision, IndexedPart, Ledger, ShardState};

use crate::enter::enter_core;
use crate::shard_index::ShardIndex;

/// A shard cache ledger shared by every process on the node that opens the same `path`.
///
/// Eviction deletes `shard_files` only when each is a regular file reached without a
/// symlink and, given `shard_sizes` (same shape), of that size. `indexed` gives the files
/// instead as index tables: `(index, first shard id, {directory part: real directory})`,
/// read when a shard is evicted (nothing is held per shard).
///
/// `begin_download` returns `("download", evicted)`, `("local", [])`, `("wait", [])` or, with
/// `must_fit`, `("noroom", [])`.
/// Pickles by constructor arguments; each process maps the file itself.
#[pyclass(frozen, module = "streamx._core")]
pub struct CacheLedger {
    inner: Ledger,
    limit: Option<u64>,
    shard_files: Option<Vec<Vec<PathBuf>>>,
    shard_sizes: Option<Vec<Vec<u64>>>,
    indexed: Option<Vec<IndexedArg>>,
}

/// One index's shards as the constructor takes them.
type IndexedArg = (Py<ShardIndex>, usize, HashMap<String, PathBuf>);

#[pymethods]
impl CacheLedger {
    #[new]
    #[pyo3(signature = (path, num_shards, limit=None, shard_files=None, shard_sizes=None, indexed=None))]
    fn new(
        py: Python<'_>,
        path: PathBuf,
        num_shards: usize,
        limit: Option<u64>,
        shard_files: Option<Vec<Vec<PathBuf>>>,
        shard_sizes: Option<Vec<Vec<u64>>>,
        indexed: Option<Vec<IndexedArg>>,
    ) -> PyResult<Self> {
        let (files, sizes) = (shard_files.clone(), shard_sizes.clone());
        let parts: Option<Vec<IndexedPart>> = indexed.as_ref().map(|parts| {
            let part = |(index, first_shard, dirs): &IndexedArg| IndexedPart {
                table: Arc::clone(&index.get().table),
                first_shard: *first_shard,
                dirs: dirs.clone(),
            };
            parts.iter().map(part).collect()
        });
        let inner = enter_core(py, move || {
            let mut ledger = Ledger::open(path, num_shards, limit)?;
            if let Some(files) = files {
                ledger = ledger.with_shard_files(files)?;
            }
            if let Some(parts) = parts {
                ledger = ledger.with_indexed_files(parts)?;
            }
            match sizes {
                Some(sizes) => ledger.with_file_sizes(sizes),
                None => Ok(ledger),
            }
        })?;
        Ok(Self {
            inner,
            limit,
            shard_files,
            shard_sizes,
            indexed,
        })
    }

    fn __reduce__<'py>(
        slf: &Bound<'py, Self>,
    ) -> PyResult<(Bound<'py, PyAny>, Bound<'py, PyTuple>)> {
        let this = slf.get();
        let py = slf.py();
        let indexed = this.indexed.as_ref().map(|parts| {
            let part =
                |(index, first, dirs): &IndexedArg| (index.clone_ref(py), *first, dirs.clone());
            parts.iter().map(part).collect::<Vec<_>>()
        });
        let args = (
            this.inner.path().to_path_buf(),
            this.inner.num_shards(),
            this.limit,
            this.shard_files.clone(),
            this.shard_sizes.clone(),
            indexed,
        );
        Ok((slf.get_type().into_any(), args.into_pyobject(py)?))
    }

    /// The registered files of every shard and their sizes, as the JSON manifest
    /// `streamx cache` reads.
    fn files_manifest<'py>(&self, py: Python<'py>) -> Bound<'py, PyBytes> {
        let inner = &self.inner;
        let data = py.detach(|| inner.files_manifest());
        PyBytes::new(py, &data)
    }

    /// The shards that are local or being prepared, in order.
    fn held_shards(&self, py: Python<'_>) -> Vec<usize> {
        let inner = &self.inner;
        py.detach(|| inner.held_shards())
    }

    /// The ledger file.
    #[getter]
    fn path(&self) -> PathBuf {
        self.inner.path().to_path_buf()
    }

    #[getter]
    fn num_shards(&self) -> usize {
        self.inner.num_shards()
    }

    /// The node's byte limit (None = unlimited).
    #[getter]
    fn limit(&self) -> Option<u64> {
        self.inner.limit()
    }

    /// Bytes of local shards plus reservations of shards being prepared, node-wide.
    #[getter]
    fn usage(&self) -> u64 {
        self.inner.usage()
    }

    /// With `must_fit`, answers `("noroom", [])` instead of going over the limit.
    #[pyo3(signature = (shard, nbytes, must_fit=false))]
    fn begin_download(
        &self,
        py: Python<'_>,
        shard: usize,
        nbytes: u64,
        must_fit: bool,
    ) -> PyResult<(&'static str, Vec<usize>)> {
        let decision = enter_core(py, || {
            if must_fit {
                self.inner.try_begin_download(shard, nbytes)
            } else {
                self.inner.begin_download(shard, nbytes).map(Some)
            }
        })?;
        Ok(match decision {
            Some(Decision::Download { evicted }) => ("download", evicted),
            Some(Decision::AlreadyLocal) => ("local", Vec::new()),
            Some(Decision::WaitForOther { .. }) => ("wait", Vec::new()),
            None => ("noroom", Vec::new()),
        })
    }

    fn finish_download(&self, py: Python<'_>, shard: usize, nbytes: u64) -> PyResult<()> {
        enter_core(py, || self.inner.finish_download(shard, nbytes))
    }

    fn abort_download(&self, py: Python<'_>, shard: usize) -> PyResult<()> {
        enter_core(py, || self.inner.abort_download(shard))
    }

    /// Stamps the shard's access time (lock-free).
    fn touch(&self, py: Python<'_>, shard: usize) -> PyResult<()> {
        enter_core(py, || self.inner.touch(shard))
    }

    /// Returns whether the shard got pinned (False, with no unpin due, when every pin slot
    /// is held by live processes: the run goes on unprotected rather than failing).
    fn pin(&self, py: Python<'_>, shard: usize) -> PyResult<bool> {
        enter_core(py, || self.inner.pin(shard))
    }

    fn unpin(&self, py: Python<'_>, shard: usize) -> PyResult<()> {
        enter_core(py, || self.inner.unpin(shard))
    }

    /// `"remote"`, `"preparing"` or `"local"`.
    fn state(&self, py: Python<'_>, shard: usize) -> PyResult<&'static str> {
        let state = enter_core(py, || self.inner.state(shard))?;
        Ok(match state {
            ShardState::Remote => "remote",
            ShardState::Preparing => "preparing",
            ShardState::Local => "local",
        })
    }

    fn bytes(&self, py: Python<'_>, shard: usize) -> PyResult<u64> {
        enter_core(py, || self.inner.bytes(shard))
    }

    fn pins(&self, py: Python<'_>, shard: usize) -> PyResult<u32> {
        enter_core(py, || self.inner.pins(shard))
    }

    /// Marks shards `start..stop` evictable or not (False for streams without a remote).
    fn set_evictable(
        &self,
        py: Python<'_>,
        start: usize,
        stop: usize,
        evictable: bool,
    ) -> PyResult<()> {
        enter_core(py, || self.inner.set_evictable(start..stop, evictable))
    }

    /// Reconciles a shard with the disk: `nbytes` on disk, or None when absent.
    #[pyo3(signature = (shard, nbytes=None))]
    fn sync(&self, py: Python<'_>, shard: usize, nbytes: Option<u64>) -> PyResult<bool> {
        enter_core(py, || self.inner.sync(shard, nbytes))
    }

    /// Deletes a local shard's files; returns the bytes freed, or None if it was not local.
    fn evict(&self, py: Python<'_>, shard: usize) -> PyResult<Option<u64>> {
        enter_core(py, || self.inner.evict(shard))
    }

    /// Evicts the least recently used unpinned evictable local shard; returns it, or None.
    fn evict_coldest(&self, py: Python<'_>) -> PyResult<Option<usize>> {
        enter_core(py, || self.inner.evict_coldest())
    }

    /// Evicts unpinned shards, least recently used first, until usage is within the limit
    /// (an urgent download may have overshot it); returns the shards evicted.
    fn trim_to_limit(&self, py: Python<'_>) -> PyResult<Vec<usize>> {
        enter_core(py, || self.inner.trim_to_limit())
    }

    /// Undoes work of dead processes; returns `(downloads, pins)` released.
    fn recover(&self, py: Python<'_>) -> PyResult<(usize, usize)> {
        let report = enter_core(py, || self.inner.recover())?;
        Ok((report.downloads, report.pins))
    }
}

/// Adds `CacheLedger` to the module.
pub fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_class::<CacheLedger>()
}
