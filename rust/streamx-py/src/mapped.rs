//! `MappedShard`: a shard file mapped read-only for zero-copy views (`zero_copy=True`).
//!
//! The map is registered with `streamx_core::mmap_guard`, so a file truncated under a view
//! gives zero pages and [`MappedShard::changed`] instead of killing the process with
//! `SIGBUS`. The views (numpy arrays, and memoryviews of them) hold this object, so the map
//! and its guard live exactly as long as the last view; eviction only unlinks the file,
//! which leaves the map readable.

use std::path::PathBuf;

use numpy::ndarray::ArrayView1;
use numpy::PyArray1;
use pyo3::prelude::*;
use streamx_core::mmap::MappedFile;

use crate::errors::IntoPy;

/// A whole file mapped read-only, guarded against truncation.
#[pyclass(frozen, module = "streamx._core")]
pub struct MappedShard {
    path: PathBuf,
    file: MappedFile,
}

#[pymethods]
impl MappedShard {
    #[new]
    fn new(py: Python<'_>, path: PathBuf) -> PyResult<Self> {
        let file = py.detach(|| MappedFile::open_for_views(&path)).py()?;
        Ok(Self { path, file })
    }

    /// The file's bytes as a `uint8` array over the map (writeable flag to be cleared by
    /// the caller: the map itself is read-only).
    fn array(this: Bound<'_, Self>) -> Bound<'_, PyArray1<u8>> {
        let view = ArrayView1::from(this.get().file.as_slice());
        // SAFETY: the map never moves or changes size while `this` lives, and the array
        // keeps `this` alive as its base.
        #[allow(unsafe_code)]
        unsafe {
            PyArray1::borrow_from_array(&view, this.clone().into_any())
        }
    }

    /// Whether the file shrank under the map: bytes past its new end now read as zeros.
    #[getter]
    fn changed(&self) -> bool {
        self.file.changed()
    }

    /// The mapped file.
    #[getter]
    fn path(&self) -> String {
        self.path.to_string_lossy().into_owned()
    }

    fn __len__(&self) -> usize {
        self.file.len()
    }
}
