//! The core's tar header scan: a local tar read in place (`scan_tar_file`, GIL released)
//! and a scan through a Python `read(start, length)` (`TarMembers`, for ranged reads).
//! Members come back as `(name, offset, size)`; names that are not UTF-8 are decoded with
//! `surrogateescape`, as Python's own parser did.

use std::fs::File;
use std::path::PathBuf;

use pyo3::exceptions::PyValueError;
use pyo3::prelude::*;
use pyo3::types::{PyBytes, PyList, PyString, PyTuple};
use streamx_core::tar::{
    member_table, FileSource, Member, ReadAt, ScanError, TarScanner, Windowing,
};
use streamx_core::Error;

use crate::enter::{enter_core_for, guard};
use crate::errors::PyExc;

fn windowing(min_window: u64, max_window: u64, skip: u64) -> PyResult<Windowing> {
    Windowing::new(min_window, max_window, skip).ok_or_else(|| {
        PyValueError::new_err(format!(
            "tar scan windows need 1 <= min_window ({min_window}) <= max_window \
             ({max_window}) <= 1 GiB and skip ({skip}) <= 1 GiB"
        ))
    })
}

fn member_tuple<'py>(py: Python<'py>, member: &Member) -> PyResult<Bound<'py, PyTuple>> {
    let name = match std::str::from_utf8(&member.name) {
        Ok(text) => PyString::new(py, text).into_any(),
        Err(_) => {
            PyBytes::new(py, &member.name).call_method1("decode", ("utf-8", "surrogateescape"))?
        }
    };
    PyTuple::new(
        py,
        [
            name,
            member.offset.into_pyobject(py)?.into_any(),
            member.size.into_pyobject(py)?.into_any(),
        ],
    )
}

/// Scans the `size`-byte tar at `path` in place with the GIL released, and hands its
/// members to `then` (still without the GIL); `shown` names the tar in errors
/// (`CorruptShardError`).
fn scan_local<T: Send>(
    py: Python<'_>,
    path: PathBuf,
    size: u64,
    shown: String,
    sizes: Windowing,
    then: impl Send + FnOnce(Vec<Member>) -> T,
) -> PyResult<T> {
    let what = shown.clone();
    let found = enter_core_for(
        py,
        move || what,
        move || {
            let file = File::open(&path).map_err(|err| Error::io(&path, err))?;
            match TarScanner::new(FileSource(file), size, shown, sizes).collect_all() {
                Ok(members) => Ok(Ok(then(members))),
                Err(ScanError::Corrupt(message)) => Ok(Err(message)),
                Err(ScanError::Read(err)) => Err(Error::io(&path, err)),
            }
        },
    )?;
    found.map_err(|message| PyExc::CorruptShard.err(py, message))
}

/// The regular files of the `size`-byte tar at `path`, read in place, as a list of
/// `(name, offset, size)`; `shown` names the tar in errors (`CorruptShardError`).
#[pyfunction]
#[pyo3(signature = (path, size, shown, min_window, max_window, skip))]
fn scan_tar_file<'py>(
    py: Python<'py>,
    path: PathBuf,
    size: u64,
    shown: String,
    min_window: u64,
    max_window: u64,
    skip: u64,
) -> PyResult<Bound<'py, PyList>> {
    let sizes = windowing(min_window, max_window, skip)?;
    let members = scan_local(py, path, size, shown, sizes, |members| members)?;
    let tuples = members
        .iter()
        .map(|member| member_tuple(py, member))
        .collect::<PyResult<Vec<_>>>()?;
    PyList::new(py, tuples)
}

/// The member table body of the local tar at `path` (scanned and grouped with the GIL
/// released) as `(samples, fields, text_bytes, body)`, or `None` where the Python grouping
/// must decide (see `streamx_core::tar::member_table`); arguments as for `scan_tar_file`.
#[pyfunction]
#[pyo3(signature = (path, size, shown, min_window, max_window, skip))]
fn scan_tar_table<'py>(
    py: Python<'py>,
    path: PathBuf,
    size: u64,
    shown: String,
    min_window: u64,
    max_window: u64,
    skip: u64,
) -> PyResult<Option<(u64, u64, u64, Bound<'py, PyBytes>)>> {
    let sizes = windowing(min_window, max_window, skip)?;
    let table = scan_local(py, path, size, shown, sizes, |members| {
        member_table(&members)
    })?;
    Ok(table.map(|t| (t.samples, t.fields, t.text, PyBytes::new(py, &t.bytes))))
}

/// A Python callable `read(start, length) -> bytes` as the scan's source.
struct PyRead(Py<PyAny>);

impl ReadAt for PyRead {
    type Error = PyErr;

    fn read_at(&mut self, start: u64, len: usize) -> PyResult<Vec<u8>> {
        Python::attach(|py| {
            let got = self.0.bind(py).call1((start, len))?;
            match got.cast::<PyBytes>() {
                Ok(bytes) => Ok(bytes.as_bytes().to_vec()),
                Err(_) => Ok(got.extract::<Vec<u8>>()?),
            }
        })
    }
}

/// The regular files of a tar read through `read(start, length)`, one `(name, offset,
/// size)` per `next()`, each as soon as its header is read. Errors from `read` pass
/// through unchanged; a scan that raised is over.
#[pyclass(module = "streamx._core")]
pub struct TarMembers {
    scanner: TarScanner<PyRead>,
    shown: String,
}

#[pymethods]
impl TarMembers {
    #[new]
    #[pyo3(signature = (read, size, shown, min_window, max_window, skip))]
    fn new(
        read: Py<PyAny>,
        size: u64,
        shown: String,
        min_window: u64,
        max_window: u64,
        skip: u64,
    ) -> PyResult<Self> {
        let sizes = windowing(min_window, max_window, skip)?;
        let scanner = TarScanner::new(PyRead(read), size, shown.clone(), sizes);
        Ok(TarMembers { scanner, shown })
    }

    fn __iter__(slf: PyRef<'_, Self>) -> PyRef<'_, Self> {
        slf
    }

    fn __next__<'py>(&mut self, py: Python<'py>) -> PyResult<Option<Bound<'py, PyTuple>>> {
        let shown = self.shown.clone();
        guard(
            py,
            move || shown,
            || match self.scanner.next_member() {
                Ok(Some(member)) => member_tuple(py, &member).map(Some),
                Ok(None) => Ok(None),
                Err(ScanError::Corrupt(message)) => Err(PyExc::CorruptShard.err(py, message)),
                Err(ScanError::Read(err)) => Err(err),
            },
        )
    }
}

/// Adds this module's functions and classes to `_core`.
pub fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_function(wrap_pyfunction!(scan_tar_file, m)?)?;
    m.add_function(wrap_pyfunction!(scan_tar_table, m)?)?;
    m.add_class::<TarMembers>()
}
