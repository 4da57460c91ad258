//! Token packing: the bin decisions of best-fit packing, over a numpy array of lengths.

use numpy::{IntoPyArray, PyArray1, PyReadonlyArray1};
use pyo3::exceptions::PyValueError;
use pyo3::prelude::*;

/// `(bin of each document, number of bins)` of best-fit-decreasing packing into `capacity`.
#[pyfunction]
fn pack_best_fit<'py>(
    py: Python<'py>,
    lengths: PyReadonlyArray1<'py, u64>,
    capacity: u64,
) -> PyResult<(Bound<'py, PyArray1<u32>>, u32)> {
    let lens = lengths.as_slice()?.to_vec();
    let (bins, n) = py
        .detach(|| streamx_core::packing::best_fit(&lens, capacity))
        .map_err(PyValueError::new_err)?;
    Ok((bins.into_pyarray(py), n))
}

pub fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_function(wrap_pyfunction!(pack_best_fit, m)?)
}
