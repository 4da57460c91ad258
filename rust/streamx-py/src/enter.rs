//! Running core work with the GIL released.

use pyo3::prelude::*;
use streamx_core::Result;

use crate::errors::to_py;

/// Runs `work` detached from the interpreter and maps its error to a Python exception.
/// Only owned, `Send` values may cross into `work`, so nothing Python-typed leaks in.
pub fn enter_core<T, F>(py: Python<'_>, work: F) -> PyResult<T>
where
    T: Send,
    F: Send + FnOnce() -> Result<T>,
{
    py.detach(work).map_err(to_py)
}
