//! numpy arrays into `ndarray` columns straight from the array's memory, with no trip
//! through Python's `tobytes` and no per-call allocation.
//!
//! Only the plain case is taken here: a native-byte-order, C-contiguous array of a numeric
//! dtype the format stores. Anything else (and any array the encoding rejects) declines, and
//! the Python encoder handles it and raises mosaicml-streaming's errors, so the bytes and
//! the errors are the same either way.

use numpy::npyffi::objects::_PyArray_GET_ITEM_DATA;
use numpy::{PyArrayDescr, PyArrayDescrMethods, PyUntypedArray, PyUntypedArrayMethods};
use pyo3::prelude::*;
use streamx_core::mds::encode_ndarray;
use streamx_core::mds::encoding::ScalarType;

/// Dimensions handled here; numpy allows 64, the format's shape header far fewer in practice.
const MAX_DIMS: usize = 32;

/// Appends `value`'s encoding for a column of static `dtype`/`shape` parts; returns `false`
/// (with `out` unchanged) when Python must encode it.
pub fn encode_array(
    dtype: Option<ScalarType>,
    shape: Option<&[u64]>,
    value: &Bound<'_, PyAny>,
    out: &mut Vec<u8>,
) -> bool {
    if cfg!(target_endian = "big") {
        return false;
    }
    let Ok(array) = value.cast::<PyUntypedArray>() else {
        return false;
    };
    let Some(t) = scalar_type(&array.dtype()) else {
        return false;
    };
    let ndim = array.ndim();
    if ndim > MAX_DIMS || !array.is_c_contiguous() {
        return false;
    }
    let mut dims = [0u64; MAX_DIMS];
    for (d, &s) in dims.iter_mut().zip(array.shape()) {
        *d = s as u64;
    }
    let Some(nbytes) = array
        .shape()
        .iter()
        .try_fold(t.size() as usize, |acc, &d| acc.checked_mul(d))
    else {
        return false;
    };
    encode_ndarray(
        dtype,
        shape,
        t,
        &dims[..ndim],
        raw_bytes(array, nbytes),
        out,
    )
    .is_ok()
}

/// The format's scalar type for a plain numeric dtype in native byte order.
fn scalar_type(descr: &Bound<'_, PyArrayDescr>) -> Option<ScalarType> {
    use ScalarType as S;
    if descr.is_native_byteorder() == Some(false) || descr.has_subarray() || descr.has_fields() {
        return None;
    }
    Some(match (descr.kind(), descr.itemsize()) {
        (b'u', 1) => S::U8,
        (b'u', 2) => S::U16,
        (b'u', 4) => S::U32,
        (b'u', 8) => S::U64,
        (b'i', 1) => S::I8,
        (b'i', 2) => S::I16,
        (b'i', 4) => S::I32,
        (b'i', 8) => S::I64,
        (b'f', 2) => S::F16,
        (b'f', 4) => S::F32,
        (b'f', 8) => S::F64,
        _ => return None,
    })
}

/// The `nbytes` of a C-contiguous array's data.
#[allow(unsafe_code)]
fn raw_bytes<'a>(array: &'a Bound<'_, PyUntypedArray>, nbytes: usize) -> &'a [u8] {
    if nbytes == 0 {
        return &[];
    }
    // SAFETY: the array is C-contiguous, so its `nbytes` (itemsize times the product of the
    // shape) start at `data`; the GIL is held and the slice is copied before any Python code
    // runs, and it cannot outlive the borrowed array. numpy's element types have no padding,
    // and u8 needs no alignment.
    unsafe {
        let data = (*_PyArray_GET_ITEM_DATA(array.as_array_ptr())).data;
        std::slice::from_raw_parts(data.cast::<u8>().cast_const(), nbytes)
    }
}
