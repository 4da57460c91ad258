//! The one mapping from core errors to Python exceptions.
//!
//! streamx's own exception classes live in `streamx.exceptions` (Python), where they can
//! inherit from both `StreamxError` and the stdlib class users already catch.

use pyo3::exceptions::{
    PyFileNotFoundError, PyIndexError, PyOSError, PyRuntimeError, PyValueError,
};
use pyo3::prelude::*;
use pyo3::sync::PyOnceLock;
use pyo3::types::PyType;
use streamx_core::Error;

/// Raises the `streamx.exceptions` class `name` with `message`.
pub fn streamx_error(py: Python<'_>, name: &'static str, message: String) -> PyErr {
    static MODULE: PyOnceLock<Py<PyModule>> = PyOnceLock::new();
    let class = MODULE
        .get_or_try_init(py, || py.import("streamx.exceptions").map(Bound::unbind))
        .and_then(|module| module.bind(py).getattr(name))
        .and_then(|class| Ok(class.cast_into::<PyType>()?));
    match class {
        Ok(class) => PyErr::from_type(class, message),
        Err(err) => err,
    }
}

/// Converts a core error into the matching Python exception.
pub fn to_py(err: Error) -> PyErr {
    let message = err.to_string();
    match err {
        Error::NotFound(_) => PyFileNotFoundError::new_err(message),
        Error::Io { source, .. } => {
            PyOSError::new_err((source.raw_os_error().unwrap_or(0), message))
        }
        Error::IndexOutOfRange { .. } => PyIndexError::new_err(message),
        Error::CorruptShard { .. } => attach(|py| streamx_error(py, "CorruptShardError", message)),
        Error::CorruptIndex { .. } => attach(|py| streamx_error(py, "CorruptIndexError", message)),
        Error::ChecksumMismatch { .. } => attach(|py| streamx_error(py, "ChecksumError", message)),
        #[allow(unreachable_patterns)]
        Error::UnsupportedEncoding(_) | Error::InvalidArgument(_) | Error::InvalidValue(_) => {
            PyValueError::new_err(message)
        }
        #[allow(unreachable_patterns)]
        _ => PyRuntimeError::new_err(message),
    }
}

fn attach(f: impl FnOnce(Python<'_>) -> PyErr) -> PyErr {
    Python::attach(f)
}

/// `?`-friendly conversion of core results.
pub trait IntoPy<T> {
    /// Maps the error side through [`to_py`].
    fn py(self) -> PyResult<T>;
}

impl<T> IntoPy<T> for streamx_core::Result<T> {
    fn py(self) -> PyResult<T> {
        self.map_err(to_py)
    }
}
