//! Running core work with the GIL released, behind the one panic boundary.
//!
//! A panic is a bug, never a verdict on data, but it must still not cross into Python as
//! pyo3's `PanicException` (a `BaseException` that `except Exception` misses). Every core
//! call goes through here, so a panic becomes `streamx.exceptions.InternalError` naming
//! what was being done (the shard, for the reader).

use std::panic::{catch_unwind, AssertUnwindSafe};

use pyo3::prelude::*;
use streamx_core::Result;

use crate::errors::{to_py, PyExc};

/// Runs `work` detached from the interpreter and maps its error to a Python exception.
/// Only owned, `Send` values may cross into `work`, so nothing Python-typed leaks in.
pub fn enter_core<T, F>(py: Python<'_>, work: F) -> PyResult<T>
where
    T: Send,
    F: Send + FnOnce() -> Result<T>,
{
    enter_core_for(py, || "a streamx core call".to_owned(), work)
}

/// [`enter_core`], naming `what` (say, the shard's path) if `work` panics.
pub fn enter_core_for<T, F>(py: Python<'_>, what: impl FnOnce() -> String, work: F) -> PyResult<T>
where
    T: Send,
    F: Send + FnOnce() -> Result<T>,
{
    match py.detach(|| catch_unwind(AssertUnwindSafe(work))) {
        Ok(result) => result.map_err(to_py),
        Err(payload) => Err(panic_error(py, &what(), payload.as_ref())),
    }
}

/// Runs GIL-holding binding code under the same boundary.
pub fn guard<T>(
    py: Python<'_>,
    what: impl FnOnce() -> String,
    work: impl FnOnce() -> PyResult<T>,
) -> PyResult<T> {
    catch_unwind(AssertUnwindSafe(work))
        .unwrap_or_else(|payload| Err(panic_error(py, &what(), payload.as_ref())))
}

fn panic_error(py: Python<'_>, what: &str, payload: &(dyn std::any::Any + Send)) -> PyErr {
    let reason = payload
        .downcast_ref::<&str>()
        .map(|s| (*s).to_owned())
        .or_else(|| payload.downcast_ref::<String>().cloned())
        .unwrap_or_else(|| "unknown panic".to_owned());
    PyExc::Internal.err(
        py,
        format!("Internal error in streamx while reading {what}: {reason}"),
    )
}
