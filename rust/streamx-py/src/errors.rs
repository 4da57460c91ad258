//! The one mapping from core errors to Python exceptions.
//!
//! streamx's own exception classes live in `streamx.exceptions` (Python), where they can
//! inherit from both `StreamxError` and the stdlib class users already catch. Rust names
//! them only through [`PyExc`], whose names a test resolves against that module.

use pyo3::exceptions::{PyFileNotFoundError, PyIndexError, PyMemoryError, PyOSError, PyValueError};
use pyo3::prelude::*;
use pyo3::sync::PyOnceLock;
use pyo3::types::PyType;
use streamx_core::Error;

/// The `streamx.exceptions` classes Rust raises.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PyExc {
    CorruptShard,
    CorruptIndex,
    Checksum,
    NeedsPythonEncoding,
    Internal,
}

impl PyExc {
    /// Every variant, for the name table `_core.exception_names()`.
    pub const ALL: [PyExc; 5] = [
        PyExc::CorruptShard,
        PyExc::CorruptIndex,
        PyExc::Checksum,
        PyExc::NeedsPythonEncoding,
        PyExc::Internal,
    ];

    /// The class name in `streamx.exceptions`.
    pub fn name(self) -> &'static str {
        match self {
            PyExc::CorruptShard => "CorruptShardError",
            PyExc::CorruptIndex => "CorruptIndexError",
            PyExc::Checksum => "ChecksumError",
            PyExc::NeedsPythonEncoding => "NeedsPythonEncoding",
            PyExc::Internal => "InternalError",
        }
    }

    /// An instance of this class carrying `message`.
    pub fn err(self, py: Python<'_>, message: String) -> PyErr {
        static MODULE: PyOnceLock<Py<PyModule>> = PyOnceLock::new();
        let class = MODULE
            .get_or_try_init(py, || py.import("streamx.exceptions").map(Bound::unbind))
            .and_then(|module| module.bind(py).getattr(self.name()))
            .and_then(|class| Ok(class.cast_into::<PyType>()?));
        match class {
            Ok(class) => PyErr::from_type(class, message),
            Err(err) => err,
        }
    }
}

/// The names of every `streamx.exceptions` class Rust raises.
#[pyfunction]
fn exception_names() -> Vec<&'static str> {
    PyExc::ALL.iter().map(|e| e.name()).collect()
}

/// Adds this module's functions to `_core`.
pub fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_function(wrap_pyfunction!(exception_names, m)?)
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
        Error::OutOfMemory(_) => PyMemoryError::new_err(message),
        Error::CorruptShard { .. } => own(PyExc::CorruptShard, message),
        Error::CorruptIndex { .. } => own(PyExc::CorruptIndex, message),
        Error::ChecksumMismatch { .. } => own(PyExc::Checksum, message),
        Error::UnsupportedEncoding(_) | Error::InvalidArgument(_) | Error::InvalidValue(_) => {
            PyValueError::new_err(message)
        }
    }
}

fn own(exc: PyExc, message: String) -> PyErr {
    Python::attach(|py| exc.err(py, message))
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
