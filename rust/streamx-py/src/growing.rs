//! `GrowingDecompressor`: a compressed shard decompressed while its parts download.

use std::path::PathBuf;
use std::sync::{Mutex, PoisonError};

use pyo3::exceptions::PyValueError;
use pyo3::prelude::*;
use streamx_core::compression::Compression;
use streamx_core::growing::GrowingDecompression;

use crate::enter::enter_core;
use crate::errors::IntoPy;

/// Decompresses a file compressed with `spec` into `raw_path` (at most `max_bytes`) while
/// it downloads: `advance` as its complete prefix grows, then `finish` or `abort`.
#[pyclass(frozen, module = "streamx._core")]
pub struct GrowingDecompressor {
    job: Mutex<Option<GrowingDecompression>>,
}

#[pymethods]
impl GrowingDecompressor {
    #[new]
    #[pyo3(signature = (spec, raw_path, max_bytes=None))]
    fn new(spec: &str, raw_path: PathBuf, max_bytes: Option<u64>) -> PyResult<Self> {
        let compression = Compression::parse(spec).py()?;
        let job = GrowingDecompression::start(compression, &raw_path, max_bytes).py()?;
        Ok(Self {
            job: Mutex::new(Some(job)),
        })
    }

    /// Whether files compressed with `spec` can be decompressed as they arrive.
    #[staticmethod]
    fn streams(spec: &str) -> PyResult<bool> {
        Ok(Compression::parse(spec).py()?.streams())
    }

    /// The first `available` bytes of the compressed file at `zip_path` are final.
    fn advance(&self, zip_path: PathBuf, available: u64) -> PyResult<()> {
        let job = self.job.lock().unwrap_or_else(PoisonError::into_inner);
        match job.as_ref() {
            Some(job) => job.advance(&zip_path, available).py(),
            None => Err(PyValueError::new_err("the decompression has ended")),
        }
    }

    /// The compressed file is complete at `total` bytes: waits for the output, renames it
    /// into place and returns its size.
    fn finish(&self, py: Python<'_>, zip_path: PathBuf, total: u64) -> PyResult<u64> {
        let job = self.take()?;
        enter_core(py, move || job.finish(&zip_path, total))
    }

    /// Stops the decompression and removes its output (the download failed).
    fn abort(&self, py: Python<'_>) {
        if let Ok(job) = self.take() {
            py.detach(move || job.abort());
        }
    }
}

impl GrowingDecompressor {
    fn take(&self) -> PyResult<GrowingDecompression> {
        let mut job = self.job.lock().unwrap_or_else(PoisonError::into_inner);
        job.take()
            .ok_or_else(|| PyValueError::new_err("the decompression has ended"))
    }
}
