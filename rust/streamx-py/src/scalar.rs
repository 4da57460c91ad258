//! numpy scalars made straight from column bytes through numpy's C API (`PyArray_Scalar`):
//! several times cheaper than converting to a Python number and calling `numpy.uint16(...)`,
//! and exact by construction, since the bits are copied rather than converted.

use std::ffi::c_void;
use std::ptr;

use numpy::npyffi::{PyArray_Descr, PY_ARRAY_API};
use pyo3::prelude::*;
use pyo3::sync::PyOnceLock;
use streamx_core::mds::encoding::ScalarType;

/// Every scalar type, in declaration order (`ScalarType as usize` indexes it).
const ALL: [ScalarType; 11] = [
    ScalarType::U8,
    ScalarType::U16,
    ScalarType::U32,
    ScalarType::U64,
    ScalarType::I8,
    ScalarType::I16,
    ScalarType::I32,
    ScalarType::I64,
    ScalarType::F16,
    ScalarType::F32,
    ScalarType::F64,
];

/// The little-endian `numpy.dtype` of each scalar type, made once per process.
fn descrs(py: Python<'_>) -> PyResult<&Vec<Py<PyAny>>> {
    static DESCRS: PyOnceLock<Vec<Py<PyAny>>> = PyOnceLock::new();
    DESCRS.get_or_try_init(py, || {
        let dtype = py.import("numpy")?.getattr("dtype")?;
        ALL.iter()
            .map(|s| {
                Ok(dtype
                    .call1((s.name(),))?
                    .call_method1("newbyteorder", ("<",))?
                    .unbind())
            })
            .collect()
    })
}

/// The numpy scalar of type `scalar` whose little-endian bytes are `data`
/// (`data.len()` must be the type's size).
pub fn numpy_scalar<'py>(
    py: Python<'py>,
    scalar: ScalarType,
    data: &[u8],
) -> PyResult<Bound<'py, PyAny>> {
    let descr = descrs(py)?[scalar as usize].bind(py);
    debug_assert_eq!(ALL[scalar as usize], scalar);
    let mut bytes = [0u8; 8];
    bytes
        .get_mut(..data.len())
        .ok_or_else(|| pyo3::exceptions::PyValueError::new_err("scalar wider than 8 bytes"))?
        .copy_from_slice(data);
    // An 8-byte-aligned copy, so numpy never reads unaligned memory.
    let word = u64::from_ne_bytes(bytes);
    scalar_from_raw(py, descr, &word)
}

#[allow(unsafe_code)]
fn scalar_from_raw<'py>(
    py: Python<'py>,
    descr: &Bound<'py, PyAny>,
    word: &u64,
) -> PyResult<Bound<'py, PyAny>> {
    let data = ptr::from_ref(word).cast::<c_void>().cast_mut();
    // SAFETY: `descr` is a live `numpy.dtype` (a `PyArray_Descr`) of a fixed-width numeric
    // type no wider than 8 bytes, held for the process by `descrs`. `PyArray_Scalar` only
    // reads `itemsize` bytes from `data` (our aligned local word, never written through the
    // mutable pointer), does not steal `descr`, needs no `base` for numeric types, and
    // returns a new reference or NULL with an exception set, which `from_owned_ptr_or_err`
    // turns into a `Bound` or a `PyErr`. numpy is imported (by `descrs`) before the API
    // capsule is used.
    unsafe {
        let object = PY_ARRAY_API.PyArray_Scalar(
            py,
            data,
            descr.as_ptr().cast::<PyArray_Descr>(),
            ptr::null_mut(),
        );
        Bound::from_owned_ptr_or_err(py, object)
    }
}
