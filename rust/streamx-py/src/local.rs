//! "Not on local disk yet" as a value. While shards download, a read finding its shard
//! absent is expected, not exceptional: the `*_if_local` reads answer `None` then, so the
//! Python side branches on a result instead of catching `FileNotFoundError` on its usual
//! path. Every other error still raises.

use pyo3::exceptions::PyFileNotFoundError;
use pyo3::prelude::*;

/// `Ok(None)` where `result` failed only because a shard's file is not on disk.
pub fn if_local<T>(py: Python<'_>, result: PyResult<T>) -> PyResult<Option<T>> {
    match result {
        Err(err) if err.is_instance_of::<PyFileNotFoundError>(py) => Ok(None),
        other => other.map(Some),
    }
}
