//! The `ndarray` column layout: `[dtype code]` if the encoding has no dtype, then
//! `[ndim << 2 | shape width][shape]` if it has no shape, then the C-order values.

use crate::error::{Error, Result};
use crate::mds::encoding::ScalarType;

/// Most axes the one-byte header can describe (6 bits).
const MAX_NDIM: usize = 63;

/// A decoded ndarray that borrows its values from the sample bytes.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NdArrayRef<'a> {
    /// Element type.
    pub dtype: ScalarType,
    /// Dimensions, outermost first.
    pub shape: Vec<u64>,
    /// C-order little-endian values; exactly `prod(shape) * dtype.size()` bytes.
    pub data: &'a [u8],
}

/// Decodes one ndarray column value. `dtype`/`shape` are the static parts of the column's
/// encoding; the rest is read from `bytes`. Sizes are checked, so `data` always holds
/// exactly the elements the shape promises.
pub fn decode_ndarray<'a>(
    dtype: Option<ScalarType>,
    shape: Option<&[u64]>,
    bytes: &'a [u8],
) -> Result<NdArrayRef<'a>> {
    let mut rest = bytes;
    let dtype = if let Some(t) = dtype {
        t
    } else {
        let code = take(&mut rest, 1)?[0];
        ScalarType::from_dtype_code(code)
            .ok_or_else(|| bad(format!("unknown ndarray dtype code {code}")))?
    };
    let shape = match shape {
        Some(s) => s.to_vec(),
        None => read_shape(&mut rest)?,
    };
    let expected = shape
        .iter()
        .try_fold(dtype.size(), |acc, &d| acc.checked_mul(d))
        .ok_or_else(|| bad(format!("ndarray shape {shape:?} overflows")))?;
    if rest.len() as u64 != expected {
        return Err(bad(format!(
            "ndarray of {} {shape:?} needs {expected} bytes of values, found {}",
            dtype.name(),
            rest.len()
        )));
    }
    Ok(NdArrayRef {
        dtype,
        shape,
        data: rest,
    })
}

fn read_shape(rest: &mut &[u8]) -> Result<Vec<u64>> {
    let byte = take(rest, 1)?[0];
    let ndim = usize::from(byte >> 2);
    let width = 1usize << (byte & 3);
    let raw = take(rest, ndim * width)?;
    Ok(raw.chunks_exact(width).map(read_uint).collect())
}

/// Reads a little-endian unsigned integer of 1, 2, 4 or 8 bytes.
fn read_uint(chunk: &[u8]) -> u64 {
    let mut buf = [0u8; 8];
    buf[..chunk.len()].copy_from_slice(chunk);
    u64::from_le_bytes(buf)
}

fn take<'a>(rest: &mut &'a [u8], n: usize) -> Result<&'a [u8]> {
    if rest.len() < n {
        return Err(bad("ndarray header is truncated".to_owned()));
    }
    let (head, tail) = rest.split_at(n);
    *rest = tail;
    Ok(head)
}

fn bad(msg: String) -> Error {
    Error::InvalidValue(msg)
}

/// Encodes one ndarray value (C-order `data` of `dtype` and `shape`) for a column whose
/// encoding fixes `dtype_fixed`/`shape_fixed`, appending to `out`. Rejects what
/// mosaicml-streaming rejects: dtype or shape mismatches, empty arrays, 0-d arrays (when the
/// shape is stored) and more than 63 axes.
pub fn encode_ndarray(
    dtype_fixed: Option<ScalarType>,
    shape_fixed: Option<&[u64]>,
    dtype: ScalarType,
    shape: &[u64],
    data: &[u8],
    out: &mut Vec<u8>,
) -> Result<()> {
    if let Some(fixed) = dtype_fixed.filter(|&t| t != dtype) {
        return Err(bad(format!(
            "Wrong dtype: expected {}, got {}.",
            fixed.name(),
            dtype.name()
        )));
    }
    let count = shape.iter().try_fold(1u64, |acc, &d| acc.checked_mul(d));
    if count == Some(0) {
        return Err(bad(
            "Attempting to encode a numpy array with 0 elements.".to_owned()
        ));
    }
    if count.and_then(|c| c.checked_mul(dtype.size())) != Some(data.len() as u64) {
        return Err(bad(format!(
            "ndarray data is {} bytes, but {} {shape:?} needs prod(shape) * {}",
            data.len(),
            dtype.name(),
            dtype.size()
        )));
    }
    let start = out.len();
    if dtype_fixed.is_none() {
        out.push(dtype.dtype_code());
    }
    let header = match shape_fixed {
        Some(fixed) if fixed != shape => Err(bad(format!(
            "Wrong shape: expected {fixed:?}, got {shape:?}."
        ))),
        Some(_) => Ok(()),
        None => write_shape(shape, out),
    };
    if let Err(e) = header {
        out.truncate(start);
        return Err(e);
    }
    out.extend_from_slice(data);
    Ok(())
}

fn write_shape(shape: &[u64], out: &mut Vec<u8>) -> Result<()> {
    if shape.is_empty() {
        return Err(bad(
            "Attempting to encode a scalar with NDArray encoding. Please use a scalar encoding."
                .to_owned(),
        ));
    }
    if shape.len() > MAX_NDIM {
        return Err(bad(format!(
            "Array has too many axes: maximum 63, got {}.",
            shape.len()
        )));
    }
    // The smallest unsigned width that holds the largest dim (strictly below 2^bits).
    let max = shape.iter().copied().max().unwrap_or(0);
    let code: u8 = match max {
        m if m < 1 << 8 => 0,
        m if m < 1 << 16 => 1,
        m if m < 1 << 32 => 2,
        _ => 3,
    };
    let width = 1usize << code;
    out.push(((shape.len() as u8) << 2) | code);
    for &dim in shape {
        out.extend_from_slice(&dim.to_le_bytes()[..width]);
    }
    Ok(())
}
