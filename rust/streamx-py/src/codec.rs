//! Whole-buffer compression and hashing functions for the Python writers and downloaders.

use std::path::PathBuf;

use pyo3::prelude::*;
use pyo3::types::PyBytes;
use streamx_core::compression::{self, Compression};
use streamx_core::hashing::{self, HashAlgo};

use crate::enter::enter_core;
use crate::errors::IntoPy;

/// Every valid compression spec, e.g. `"zstd"` and `"zstd:7"`.
#[pyfunction]
fn compression_names() -> Vec<String> {
    compression::all_compression_names()
}

/// Every supported hash algorithm name.
#[pyfunction]
fn hash_names() -> Vec<&'static str> {
    hashing::all_hash_names().to_vec()
}

/// Whether `spec` is a valid compression spec.
#[pyfunction]
fn is_compression(spec: &str) -> bool {
    Compression::parse(spec).is_ok()
}

/// The file extension of a compression spec (`"zstd:7"` -> `"zstd"`).
#[pyfunction]
fn compression_extension(spec: &str) -> PyResult<&'static str> {
    Ok(Compression::parse(spec).py()?.extension())
}

/// Compresses `data` with `spec`.
#[pyfunction]
fn compress<'py>(py: Python<'py>, spec: &str, data: Vec<u8>) -> PyResult<Bound<'py, PyBytes>> {
    let codec = Compression::parse(spec).py()?;
    let packed = enter_core(py, move || codec.compress(&data))?;
    Ok(PyBytes::new(py, &packed))
}

/// Decompresses `data` that was compressed with `spec`.
#[pyfunction]
fn decompress<'py>(py: Python<'py>, spec: &str, data: Vec<u8>) -> PyResult<Bound<'py, PyBytes>> {
    let codec = Compression::parse(spec).py()?;
    let raw = enter_core(py, move || {
        codec.decompress(&data, std::path::Path::new("<bytes>"))
    })?;
    Ok(PyBytes::new(py, &raw))
}

/// Decompresses `zip_path` into `raw_path` atomically; returns the raw size in bytes.
/// Output past `max_bytes` (the index's raw size) fails as a corrupt shard.
#[pyfunction]
#[pyo3(signature = (spec, zip_path, raw_path, max_bytes=None))]
fn decompress_file(
    py: Python<'_>,
    spec: &str,
    zip_path: PathBuf,
    raw_path: PathBuf,
    max_bytes: Option<u64>,
) -> PyResult<u64> {
    let codec = Compression::parse(spec).py()?;
    enter_core(py, move || {
        compression::decompress_file(&zip_path, &raw_path, &codec, max_bytes)
    })
}

/// Lowercase hex digest of `data`, exactly as Python's `hexdigest()`.
#[pyfunction]
fn hexdigest(py: Python<'_>, algo: &str, data: Vec<u8>) -> PyResult<String> {
    let algo = HashAlgo::from_name(algo).py()?;
    py.detach(move || Ok(algo.hexdigest(&data)))
}

/// Lowercase hex digest of the file at `path`.
#[pyfunction]
fn hash_file(py: Python<'_>, algo: &str, path: PathBuf) -> PyResult<String> {
    let algo = HashAlgo::from_name(algo).py()?;
    enter_core(py, move || hashing::hash_file(&path, algo))
}

/// Raises `ChecksumError` unless the file at `path` has the hex digest `expected`.
#[pyfunction]
fn verify_file(py: Python<'_>, algo: &str, path: PathBuf, expected: String) -> PyResult<()> {
    let algo = HashAlgo::from_name(algo).py()?;
    enter_core(py, move || hashing::verify_file(&path, algo, &expected))
}

/// Adds this module's functions to `_core`.
pub fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_function(wrap_pyfunction!(compression_names, m)?)?;
    m.add_function(wrap_pyfunction!(hash_names, m)?)?;
    m.add_function(wrap_pyfunction!(is_compression, m)?)?;
    m.add_function(wrap_pyfunction!(compression_extension, m)?)?;
    m.add_function(wrap_pyfunction!(compress, m)?)?;
    m.add_function(wrap_pyfunction!(decompress, m)?)?;
    m.add_function(wrap_pyfunction!(decompress_file, m)?)?;
    m.add_function(wrap_pyfunction!(hexdigest, m)?)?;
    m.add_function(wrap_pyfunction!(hash_file, m)?)?;
    m.add_function(wrap_pyfunction!(verify_file, m)?)?;
    Ok(())
}
