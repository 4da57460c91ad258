//! Whole batches read column by column: fixed-width columns copied straight into numpy
//! arrays, `bytes` and `str` columns decoded into one list each.
//!
//! A batch of `uint32[2048]` token samples through the per-sample path costs a dict, a
//! bytes object and a numpy array per sample, then a stack. Here each sample's field is
//! copied once, from the shard's map into its row of the batch's array.

use numpy::{PyArray2, PyArrayMethods, PyReadwriteArray2, PyUntypedArrayMethods};
use pyo3::exceptions::PyValueError;
use pyo3::prelude::*;
use pyo3::types::PyList;

use crate::enter::guard;
use crate::errors::{IntoPy, PyExc};
use crate::kinds;
use crate::sample_source::SampleSource;

/// Fills row `i` of `outs[k]` with column `columns[k]` of sample `indices[i]`, and returns
/// for each of `listed` the list of its decoded values. The caller knows every shard's
/// schema puts the same column at each position.
pub fn gather<'py>(
    reader: &impl SampleSource,
    py: Python<'py>,
    indices: &[u64],
    columns: &[usize],
    outs: &[Bound<'py, PyArray2<u8>>],
    listed: &[usize],
) -> PyResult<Vec<Bound<'py, PyList>>> {
    if columns.len() != outs.len() {
        return Err(PyValueError::new_err(
            "one output array per column is needed",
        ));
    }
    let mut rows: Vec<PyReadwriteArray2<'py, u8>> = Vec::with_capacity(outs.len());
    for out in outs {
        if out.shape()[0] != indices.len() {
            return Err(PyValueError::new_err(format!(
                "an output array has {} rows for {} samples",
                out.shape()[0],
                indices.len()
            )));
        }
        rows.push(out.try_readwrite()?);
    }
    let mut slices = Vec::with_capacity(rows.len());
    for row in &mut rows {
        let width = row.shape()[1];
        let slice = row
            .as_slice_mut()
            .map_err(|_| PyValueError::new_err("output arrays must be C-contiguous"))?;
        slices.push((width, slice));
    }
    let lists: Vec<Bound<'py, PyList>> = listed.iter().map(|_| PyList::empty(py)).collect();
    let mut ranges = Vec::new();
    let mut listed_bytes = 0usize;
    for (row, &index) in indices.iter().enumerate() {
        guard(
            py,
            || reader.where_is(index),
            || {
                let (shard_id, shard) = reader.open_sample(py, index, &mut ranges)?;
                let bytes = shard.bytes();
                for ((width, slice), &column) in slices.iter_mut().zip(columns) {
                    let field = ranges.get(column).map_or(&[][..], |r| &bytes[r.clone()]);
                    if field.len() != *width {
                        let message = format!(
                            "Corrupt shard {}: sample {index}, column {column}: expected {width} \
                             bytes, found {}",
                            shard.path().display(),
                            field.len()
                        );
                        return Err(PyExc::CorruptShard.err(py, message));
                    }
                    slice[row * *width..(row + 1) * *width].copy_from_slice(field);
                }
                for (list, &column) in lists.iter().zip(listed) {
                    let field = ranges.get(column).map_or(&[][..], |r| &bytes[r.clone()]);
                    let kind = reader.kind_of(shard_id, column);
                    let value = kinds::decode(py, kind, field).map_err(|reason| {
                        let message = format!(
                            "Corrupt shard {}: sample {index}, column {column}: {reason}",
                            shard.path().display()
                        );
                        PyExc::CorruptShard.err(py, message)
                    })?;
                    list.append(value)?;
                    listed_bytes += field.len();
                }
                // Bytes copied from a shard that shrank under its map are zeros, not the file's.
                reader.set().checked(shard_id, &shard, Ok(())).py()
            },
        )?;
    }
    if listed_bytes >= streamx_core::heap::LARGE_BATCH {
        streamx_core::heap::keep_freed_heap();
    }
    Ok(lists)
}
