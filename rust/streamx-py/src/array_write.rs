//! numpy arrays into `ndarray` columns without a trip through Python's `tobytes`.
//!
//! Only the plain case is taken here: a native-byte-order, C-contiguous array of a dtype the
//! format stores (float16 aside). Anything else declines, and the Python encoder handles it
//! (and raises mosaicml-streaming's errors), so the bytes are the same either way.

use numpy::{Element, PyArrayDyn, PyArrayMethods, PyUntypedArrayMethods};
use pyo3::prelude::*;
use streamx_core::mds::encode_ndarray;
use streamx_core::mds::encoding::ScalarType;

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
    match dtype {
        Some(t) => encode_as(t, dtype, shape, value, out),
        None => ScalarType::all().any(|t| encode_as(t, dtype, shape, value, out)),
    }
}

fn encode_as(
    t: ScalarType,
    fixed: Option<ScalarType>,
    shape: Option<&[u64]>,
    value: &Bound<'_, PyAny>,
    out: &mut Vec<u8>,
) -> bool {
    use ScalarType as S;
    match t {
        S::U8 => typed::<u8>(t, fixed, shape, value, out),
        S::U16 => typed::<u16>(t, fixed, shape, value, out),
        S::U32 => typed::<u32>(t, fixed, shape, value, out),
        S::U64 => typed::<u64>(t, fixed, shape, value, out),
        S::I8 => typed::<i8>(t, fixed, shape, value, out),
        S::I16 => typed::<i16>(t, fixed, shape, value, out),
        S::I32 => typed::<i32>(t, fixed, shape, value, out),
        S::I64 => typed::<i64>(t, fixed, shape, value, out),
        S::F32 => typed::<f32>(t, fixed, shape, value, out),
        S::F64 => typed::<f64>(t, fixed, shape, value, out),
        S::F16 => false,
    }
}

fn typed<T: Element + Copy>(
    t: ScalarType,
    fixed: Option<ScalarType>,
    shape: Option<&[u64]>,
    value: &Bound<'_, PyAny>,
    out: &mut Vec<u8>,
) -> bool {
    let Ok(array) = value.cast::<PyArrayDyn<T>>() else {
        return false;
    };
    if !array.is_c_contiguous() {
        return false;
    }
    let Ok(view) = array.try_readonly() else {
        return false;
    };
    let Ok(values) = view.as_slice() else {
        return false;
    };
    let dims: Vec<u64> = array.shape().iter().map(|&d| d as u64).collect();
    encode_ndarray(fixed, shape, t, &dims, as_bytes(values), out).is_ok()
}

#[allow(unsafe_code)]
fn as_bytes<T: Element + Copy>(values: &[T]) -> &[u8] {
    // SAFETY: the element types above are plain numbers with no padding, every byte of them
    // is initialised, and u8 needs no alignment; the slice borrows `values`' lifetime.
    unsafe { std::slice::from_raw_parts(values.as_ptr().cast::<u8>(), size_of_val(values)) }
}
