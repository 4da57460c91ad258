//! Column kinds: how one column's value crosses between Python and bytes.
//!
//! Python decides the kind of each column (`streamx.columns.native_kind`). The byte-level
//! encodings are handled here; `raw` columns were or will be encoded by Python.

use pyo3::exceptions::PyValueError;
use pyo3::prelude::*;
use pyo3::sync::PyOnceLock;
use pyo3::types::{PyBytes, PyFloat, PyInt, PyString};
use streamx_core::mds::encoding::ScalarType;

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
    /// Parses a kind name; the scalar kinds are the numpy dtype names.
    pub fn parse(name: &str) -> PyResult<Kind> {
        Ok(match name {
            "bytes" => Kind::Bytes,
            "str" => Kind::Str,
            "int" => Kind::Int,
            "str_int" => Kind::StrInt,
            "raw" => Kind::Raw,
            other => {
                Kind::Scalar(ScalarType::from_name(other).ok_or_else(|| {
                    PyValueError::new_err(format!("Unknown column kind: {other}"))
                })?)
            }
        })
    }
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
    use ScalarType as S;
    let value: Bound<'py, PyAny> = match scalar {
        S::U8 => PyInt::new(py, u8::from_le_bytes(fixed(data)?)).into_any(),
        S::U16 => PyInt::new(py, u16::from_le_bytes(fixed(data)?)).into_any(),
        S::U32 => PyInt::new(py, u32::from_le_bytes(fixed(data)?)).into_any(),
        S::U64 => PyInt::new(py, u64::from_le_bytes(fixed(data)?)).into_any(),
        S::I8 => PyInt::new(py, i8::from_le_bytes(fixed(data)?)).into_any(),
        S::I16 => PyInt::new(py, i16::from_le_bytes(fixed(data)?)).into_any(),
        S::I32 => PyInt::new(py, i32::from_le_bytes(fixed(data)?)).into_any(),
        S::I64 => PyInt::new(py, i64::from_le_bytes(fixed(data)?)).into_any(),
        S::F16 => PyFloat::new(py, f16_to_f64(u16::from_le_bytes(fixed(data)?))).into_any(),
        S::F32 => PyFloat::new(py, f64::from(f32::from_le_bytes(fixed(data)?))).into_any(),
        S::F64 => PyFloat::new(py, f64::from_le_bytes(fixed(data)?)).into_any(),
    };
    numpy_type(py, scalar)
        .map_err(err)?
        .call1((value,))
        .map_err(err)
}

/// Exact widening of an IEEE half to a double (every half is representable).
fn f16_to_f64(bits: u16) -> f64 {
    let sign = if bits >> 15 == 1 { -1.0 } else { 1.0 };
    let exponent = i32::from((bits >> 10) & 0x1f);
    let fraction = f64::from(bits & 0x3ff);
    match exponent {
        0 => sign * fraction * 2f64.powi(-24),
        31 if fraction == 0.0 => sign * f64::INFINITY,
        31 => f64::NAN,
        _ => sign * (1.0 + fraction / 1024.0) * 2f64.powi(exponent - 15),
    }
}

fn builtin_int(py: Python<'_>) -> &Bound<'_, PyAny> {
    static INT: PyOnceLock<Py<PyAny>> = PyOnceLock::new();
    INT.get_or_init(py, || py.get_type::<PyInt>().into_any().unbind())
        .bind(py)
}

/// The numpy scalar type for `scalar`, looked up once per process.
fn numpy_type(py: Python<'_>, scalar: ScalarType) -> PyResult<&Bound<'_, PyAny>> {
    static TYPES: PyOnceLock<Vec<Py<PyAny>>> = PyOnceLock::new();
    const ORDER: [ScalarType; 11] = [
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
    let types = TYPES.get_or_try_init(py, || {
        let numpy = py.import("numpy")?;
        ORDER
            .iter()
            .map(|s| Ok(numpy.getattr(s.name())?.unbind()))
            .collect::<PyResult<Vec<_>>>()
    })?;
    let position = ORDER.iter().position(|s| *s == scalar).unwrap_or(0);
    Ok(types[position].bind(py))
}
