//! Column kinds: how one column's value crosses between Python and bytes.
//!
//! Python decides the kind of each column (`streamx.format.columns.native_kind`), from the
//! names [`native_encoding_names`] lists. The byte-level encodings are handled here; `raw`
//! columns were or will be encoded by Python.

use pyo3::exceptions::PyValueError;
use pyo3::prelude::*;
use pyo3::sync::PyOnceLock;
use pyo3::types::{PyBytes, PyFloat, PyInt, PyString};
use streamx_core::mds::encoding::{Encoding, ScalarType};

/// The per-column handling agreed with the Python side.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    Bytes,
    Str,
    Int,
    StrInt,
    Scalar(ScalarType),
    Raw,
}

impl Kind {
    /// Parses a kind name: `raw`, or an encoding name the core handles natively.
    pub fn parse(name: &str) -> PyResult<Kind> {
        if name == "raw" {
            return Ok(Kind::Raw);
        }
        let unknown = || PyValueError::new_err(format!("Unknown column kind: {name}"));
        Ok(match Encoding::parse(name).map_err(|_| unknown())? {
            Encoding::Bytes => Kind::Bytes,
            Encoding::Str => Kind::Str,
            Encoding::Int => Kind::Int,
            Encoding::StrInt => Kind::StrInt,
            Encoding::Scalar(scalar) => Kind::Scalar(scalar),
            _ => return Err(unknown()),
        })
    }
}

/// Every encoding name the MDS format defines (`ndarray` without arguments).
#[pyfunction]
fn mds_encoding_names() -> Vec<&'static str> {
    Encoding::names()
}

/// The encoding names whose values Rust encodes and decodes itself.
#[pyfunction]
fn native_encoding_names() -> Vec<&'static str> {
    Encoding::names()
        .into_iter()
        .filter(|name| Encoding::parse(name).is_ok_and(|e| e.is_native()))
        .collect()
}

/// (numpy dtype name, the code dynamic-dtype `ndarray` columns store) for every scalar type.
#[pyfunction]
fn ndarray_dtype_codes() -> Vec<(&'static str, u8)> {
    ScalarType::all()
        .map(|t| (t.name(), t.dtype_code()))
        .collect()
}

/// Adds this module's functions to `_core`.
pub fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_function(wrap_pyfunction!(mds_encoding_names, m)?)?;
    m.add_function(wrap_pyfunction!(ndarray_dtype_codes, m)?)?;
    m.add_function(wrap_pyfunction!(native_encoding_names, m)?)
}

/// Appends the encoding of `value` to `out`. Returns `false` (leaving `out` unchanged) when
/// the value is not of a type the fast path handles; the caller then defers to Python.
pub fn encode(kind: Kind, value: &Bound<'_, PyAny>, out: &mut Vec<u8>) -> PyResult<bool> {
    if let Ok(bytes) = value.cast::<PyBytes>() {
        out.extend_from_slice(bytes.as_bytes()); // Pre-encoded bytes pass through unchanged.
        return Ok(true);
    }
    match kind {
        Kind::Str => match value.cast::<PyString>() {
            Ok(text) => match text.to_str() {
                Ok(text) => out.extend_from_slice(text.as_bytes()),
                Err(_) => return Ok(false),
            },
            Err(_) => return Ok(false),
        },
        Kind::Int => match exact_int::<i64>(value) {
            Some(v) => out.extend_from_slice(&v.to_le_bytes()),
            None => return Ok(false),
        },
        Kind::StrInt => {
            if !value.is_instance_of::<PyInt>() {
                return Ok(false);
            }
            out.extend_from_slice(value.str()?.to_str()?.as_bytes());
        }
        Kind::Scalar(scalar) => return Ok(encode_scalar(scalar, value, out)),
        Kind::Bytes | Kind::Raw => return Ok(false),
    }
    Ok(true)
}

fn exact_int<T: for<'a, 'py> FromPyObject<'a, 'py>>(value: &Bound<'_, PyAny>) -> Option<T> {
    if value.is_instance_of::<PyInt>() {
        value.extract::<T>().ok()
    } else {
        None
    }
}

fn encode_scalar(scalar: ScalarType, value: &Bound<'_, PyAny>, out: &mut Vec<u8>) -> bool {
    use ScalarType as S;
    let start = out.len();
    let ok = match scalar {
        S::U8 => exact_int::<u8>(value).map(|v| out.extend_from_slice(&v.to_le_bytes())),
        S::U16 => exact_int::<u16>(value).map(|v| out.extend_from_slice(&v.to_le_bytes())),
        S::U32 => exact_int::<u32>(value).map(|v| out.extend_from_slice(&v.to_le_bytes())),
        S::U64 => exact_int::<u64>(value).map(|v| out.extend_from_slice(&v.to_le_bytes())),
        S::I8 => exact_int::<i8>(value).map(|v| out.extend_from_slice(&v.to_le_bytes())),
        S::I16 => exact_int::<i16>(value).map(|v| out.extend_from_slice(&v.to_le_bytes())),
        S::I32 => exact_int::<i32>(value).map(|v| out.extend_from_slice(&v.to_le_bytes())),
        S::I64 => exact_int::<i64>(value).map(|v| out.extend_from_slice(&v.to_le_bytes())),
        S::F32 => exact_float(value).map(|v| out.extend_from_slice(&(v as f32).to_le_bytes())),
        S::F64 => exact_float(value).map(|v| out.extend_from_slice(&v.to_le_bytes())),
        // float16 rounding is left to numpy, on the Python path.
        S::F16 => None,
    };
    if ok.is_none() {
        out.truncate(start);
    }
    ok.is_some()
}

fn exact_float(value: &Bound<'_, PyAny>) -> Option<f64> {
    value
        .cast::<PyFloat>()
        .ok()
        .map(pyo3::types::PyFloatMethods::value)
}

/// Decodes one column's bytes into the Python value mosaicml-streaming returns.
pub fn decode<'py>(py: Python<'py>, kind: Kind, data: &[u8]) -> Result<Bound<'py, PyAny>, String> {
    Ok(match kind {
        Kind::Bytes | Kind::Raw => PyBytes::new(py, data).into_any(),
        Kind::Str => {
            let text = std::str::from_utf8(data).map_err(|e| format!("invalid UTF-8: {e}"))?;
            PyString::new(py, text).into_any()
        }
        Kind::Int => PyInt::new(py, i64::from_le_bytes(fixed(data)?)).into_any(),
        Kind::StrInt => {
            let text = std::str::from_utf8(data).map_err(|e| format!("invalid UTF-8: {e}"))?;
            builtin_int(py).call1((text,)).map_err(err)?
        }
        Kind::Scalar(scalar) => decode_scalar(py, scalar, data)?,
    })
}

fn err(e: PyErr) -> String {
    // Consumes the error: the message is all that survives into the corrupt-shard report.
    e.to_string()
}

fn fixed<const N: usize>(data: &[u8]) -> Result<[u8; N], String> {
    data.try_into()
        .map_err(|_| format!("expected {N} bytes, found {}", data.len()))
}

fn decode_scalar<'py>(
    py: Python<'py>,
    scalar: ScalarType,
    data: &[u8],
) -> Result<Bound<'py, PyAny>, String> {
    let size = scalar.size() as usize;
    if data.len() != size {
        return Err(format!("expected {size} bytes, found {}", data.len()));
    }
    crate::scalar::numpy_scalar(py, scalar, data).map_err(err)
}

fn builtin_int(py: Python<'_>) -> &Bound<'_, PyAny> {
    static INT: PyOnceLock<Py<PyAny>> = PyOnceLock::new();
    INT.get_or_init(py, || py.get_type::<PyInt>().into_any().unbind())
        .bind(py)
}
