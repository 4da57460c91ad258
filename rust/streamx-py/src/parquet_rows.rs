//! `ParquetRows`: a row group's flat column chunks decoded by `streamx_core::parquet_page`,
//! one row at a time handed out as a dict of Python values.

use std::io::ErrorKind;
use std::path::PathBuf;
use std::sync::{Mutex, MutexGuard};

use pyo3::exceptions::{PyIndexError, PyValueError};
use pyo3::prelude::*;
use pyo3::types::{PyBytes, PyDict, PyFloat, PyInt, PyString};
use streamx_core::parquet_page::{self, ChunkSpec, Codec, Column, ColumnSpec, Physical, Value};
use streamx_core::Error;

use crate::enter::enter_core_for;
use crate::errors::to_py;

/// How a column's values become Python values (the Arrow type pyarrow reads it as).
#[derive(Clone, Copy)]
enum Out {
    Int(u32, bool), // bits, signed
    Float,
    Text,
    Bytes,
}

impl Out {
    fn from_name(name: &str) -> Option<Self> {
        Some(match name {
            "int8" => Out::Int(8, true),
            "int16" => Out::Int(16, true),
            "int32" => Out::Int(32, true),
            "int64" => Out::Int(64, true),
            "uint8" => Out::Int(8, false),
            "uint16" => Out::Int(16, false),
            "uint32" => Out::Int(32, false),
            "uint64" => Out::Int(64, false),
            "float" | "double" => Out::Float,
            "string" | "large_string" => Out::Text,
            "binary" | "large_binary" => Out::Bytes,
            _ => return None,
        })
    }

    fn fits(self, physical: Physical) -> bool {
        match self {
            Out::Int(..) => matches!(physical, Physical::Int32 | Physical::Int64),
            Out::Float => matches!(physical, Physical::Float | Physical::Double),
            Out::Text | Out::Bytes => physical == Physical::ByteArray,
        }
    }
}

/// Per column: `(name, offset, length, physical type, codec, max definition level, arrow type)`.
type Chunk = (String, usize, usize, i32, i32, u8, String);

/// A buffer reused from one row group's read to the next (one per reading thread): its
/// memory stays the process's own, where a fresh `bytes` per row group costs a page fault
/// and the kernel's zeroing per 4 KiB (half the CPU time of a random `dataset[i]` over text
/// row groups, measured).
#[pyclass(frozen, module = "streamx._core")]
pub struct ReadBuffer {
    bytes: Mutex<Vec<u8>>,
}

#[pymethods]
impl ReadBuffer {
    #[new]
    fn new() -> Self {
        ReadBuffer {
            bytes: Mutex::new(Vec::new()),
        }
    }

    /// Reads the ranges `spans` (`(offset, length)`) of the open descriptor `fd`, one after
    /// the other, in place of what the buffer held. `None`, or where the file ended: the
    /// first short range's `(offset, length, bytes read)`. `label` (the file and row group)
    /// names a failed read (`OSError`).
    fn read(
        &self,
        py: Python<'_>,
        fd: i32,
        spans: Vec<(u64, usize)>,
        label: String,
    ) -> PyResult<Option<(u64, usize, usize)>> {
        let mut held = self.lock()?;
        let buf: &mut Vec<u8> = &mut held;
        let named = label.clone();
        enter_core_for(
            py,
            || label.clone(),
            move || {
                parquet_page::read_spans(fd, &spans, buf).map_err(|source| match source.kind() {
                    ErrorKind::OutOfMemory => Error::OutOfMemory(format!("{named}: {source}")),
                    _ => Error::Io {
                        path: PathBuf::from(&named),
                        source,
                    },
                })
            },
        )
    }

    /// The bytes the last read left.
    fn __len__(&self) -> PyResult<usize> {
        Ok(self.lock()?.len())
    }
}

impl ReadBuffer {
    fn lock(&self) -> PyResult<MutexGuard<'_, Vec<u8>>> {
        self.bytes
            .try_lock()
            .map_err(|_| PyValueError::new_err("a ReadBuffer is used by one thread at a time"))
    }
}

/// A row group's columns, decoded; rows handed out as dicts.
#[pyclass(frozen, module = "streamx._core")]
pub struct ParquetRows {
    names: Vec<Py<PyString>>,
    outs: Vec<Out>,
    columns: Vec<Column>,
    label: String,
    rows: usize,
}

#[pymethods]
impl ParquetRows {
    /// Decodes the chunks of `data` (a row group's column chunks); `chunks`: per column
    /// `(name, offset, length, physical type, codec, max definition level, arrow type)`.
    /// `None` when a feature is left to a general reader.
    #[staticmethod]
    fn decode(
        py: Python<'_>,
        data: &Bound<'_, PyBytes>,
        chunks: Vec<Chunk>,
        rows: usize,
        label: String,
    ) -> PyResult<Option<Self>> {
        Self::decode_bytes(py, data.as_bytes(), chunks, rows, label)
    }

    /// [`decode`](Self::decode) over what `buffer` last read.
    #[staticmethod]
    fn decode_buffer(
        py: Python<'_>,
        buffer: &ReadBuffer,
        chunks: Vec<Chunk>,
        rows: usize,
        label: String,
    ) -> PyResult<Option<Self>> {
        let held = buffer.lock()?;
        Self::decode_bytes(py, &held, chunks, rows, label)
    }

    /// Row `index` as `{column: value}`.
    fn row<'py>(&self, py: Python<'py>, index: usize) -> PyResult<Bound<'py, PyDict>> {
        if index >= self.rows {
            return Err(PyIndexError::new_err(format!(
                "row {index} of {} in {}",
                self.rows, self.label
            )));
        }
        // Every column's value found first, then converted: the loads of a random row miss
        // the caches, and with nothing between them the CPU overlaps those misses.
        let values: Vec<Option<Value<'_>>> = self.columns.iter().map(|c| c.value(index)).collect();
        let out = PyDict::new(py);
        for ((name, value), kind) in self.names.iter().zip(values).zip(&self.outs) {
            let value = match value {
                None => py.None().into_bound(py),
                Some(v) => self.python(py, v, *kind, name.bind(py))?,
            };
            out.set_item(name.bind(py), value)?;
        }
        Ok(out)
    }

    /// The bytes the decoded columns keep.
    #[getter]
    fn nbytes(&self) -> usize {
        self.columns.iter().map(Column::nbytes).sum()
    }

    fn __len__(&self) -> usize {
        self.rows
    }
}

impl ParquetRows {
    fn decode_bytes(
        py: Python<'_>,
        bytes: &[u8],
        chunks: Vec<Chunk>,
        rows: usize,
        label: String,
    ) -> PyResult<Option<Self>> {
        let mut specs = Vec::with_capacity(chunks.len());
        let mut outs = Vec::with_capacity(chunks.len());
        for (name, offset, length, physical, codec, max_def, arrow) in &chunks {
            let found = (
                Physical::from_code(*physical),
                Codec::from_code(*codec),
                Out::from_name(arrow),
            );
            let (Some(physical), Some(codec), Some(out)) = found else {
                return Ok(None);
            };
            if !out.fits(physical) || *max_def > 1 {
                return Ok(None);
            }
            outs.push(out);
            let column = ColumnSpec {
                physical,
                codec,
                max_def: *max_def,
                rows,
            };
            specs.push(ChunkSpec {
                name: name.clone(),
                offset: *offset,
                length: *length,
                column,
            });
        }
        let shown = label.clone();
        let decoded = enter_core_for(
            py,
            || label.clone(),
            move || parquet_page::decode_row_group(bytes, &specs, &shown),
        )?;
        let Ok(columns) = decoded else {
            return Ok(None);
        };
        let names = chunks
            .iter()
            .map(|c| PyString::intern(py, &c.0).unbind())
            .collect();
        Ok(Some(ParquetRows {
            names,
            outs,
            columns,
            label,
            rows,
        }))
    }

    fn python<'py>(
        &self,
        py: Python<'py>,
        value: Value<'_>,
        kind: Out,
        name: &Bound<'py, PyString>,
    ) -> PyResult<Bound<'py, PyAny>> {
        Ok(match (value, kind) {
            (Value::Int32(v), Out::Int(bits, signed)) => int(py, i64::from(v), bits, signed),
            (Value::Int64(v), Out::Int(bits, signed)) => int(py, v, bits, signed),
            (Value::Float(v), _) => PyFloat::new(py, f64::from(v)).into_any(),
            (Value::Double(v), _) => PyFloat::new(py, v).into_any(),
            (Value::Bytes(b), Out::Text) => match std::str::from_utf8(b) {
                Ok(s) => PyString::new(py, s).into_any(),
                Err(e) => {
                    return Err(to_py(Error::CorruptShard {
                        path: PathBuf::from(&self.label),
                        reason: format!("column {name}: a string that is not UTF-8 ({e})"),
                    }))
                }
            },
            (Value::Bytes(b), _) => PyBytes::new(py, b).into_any(),
            _ => {
                return Err(PyValueError::new_err(
                    "a value of another type than its column",
                ))
            }
        })
    }
}

/// `v` narrowed to `bits` as Arrow's reader casts it (two's complement truncation).
fn int<'py>(py: Python<'py>, v: i64, bits: u32, signed: bool) -> Bound<'py, PyAny> {
    match (bits, signed) {
        (8, true) => PyInt::new(py, v as i8).into_any(),
        (16, true) => PyInt::new(py, v as i16).into_any(),
        (32, true) => PyInt::new(py, v as i32).into_any(),
        (8, false) => PyInt::new(py, v as u8).into_any(),
        (16, false) => PyInt::new(py, v as u16).into_any(),
        (32, false) => PyInt::new(py, v as u32).into_any(),
        (_, false) => PyInt::new(py, v as u64).into_any(),
        _ => PyInt::new(py, v).into_any(),
    }
}

/// Adds the class to `_core`.
pub fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_class::<ParquetRows>()?;
    m.add_class::<ReadBuffer>()
}
