//! `MDSShardWriter`: frames samples in Rust and writes whole shards atomically.

use std::path::PathBuf;
use std::sync::{Mutex, PoisonError};

use pyo3::prelude::*;
use pyo3::types::{PyBytes, PyDict, PyString};
use streamx_core::compression::Compression;
use streamx_core::hashing::HashAlgo;
use streamx_core::mds::files::{write_shard_files, FileInfo};
use streamx_core::mds::{ColumnLayout, ShardBuilder};

use crate::enter::enter_core;
use crate::errors::{IntoPy, PyExc};
use crate::kinds::{self, Kind};

/// Per-shard settings that do not change while writing.
struct Settings {
    dirname: PathBuf,
    names: Vec<Py<PyString>>,
    kinds: Vec<Kind>,
    layout: ColumnLayout,
    compression: Option<Compression>,
    hashes: Vec<HashAlgo>,
}

/// Mutable writing state, behind a mutex so the pyclass can be frozen.
struct State {
    builder: ShardBuilder,
    shards_written: usize,
    /// Reused per sample: concatenated column payloads, and each column's end offset.
    payload: Vec<u8>,
    ends: Vec<usize>,
    framed: Vec<u8>,
}

/// Frames samples into MDS shards and writes each finished shard file.
#[pyclass(frozen, module = "streamx._core")]
pub struct MDSShardWriter {
    settings: Settings,
    state: Mutex<State>,
}

#[pymethods]
impl MDSShardWriter {
    #[new]
    #[pyo3(signature = (dirname, column_names, column_kinds, column_sizes, config_json, size_limit, compression, hashes))]
    fn new(
        py: Python<'_>,
        dirname: PathBuf,
        column_names: Vec<String>,
        column_kinds: Vec<String>,
        column_sizes: Vec<Option<u64>>,
        config_json: Vec<u8>,
        size_limit: Option<u64>,
        compression: Option<&str>,
        hashes: Vec<String>,
    ) -> PyResult<Self> {
        let kinds = column_kinds
            .iter()
            .map(|k| Kind::parse(k))
            .collect::<PyResult<_>>()?;
        let hashes = hashes
            .iter()
            .map(|h| HashAlgo::from_name(h))
            .collect::<Result<_, _>>()
            .py()?;
        let settings = Settings {
            dirname,
            names: column_names
                .iter()
                .map(|n| PyString::intern(py, n).unbind())
                .collect(),
            kinds,
            layout: ColumnLayout::from_sizes(&column_sizes).py()?,
            compression: compression.map(Compression::parse).transpose().py()?,
            hashes,
        };
        let state = State {
            builder: ShardBuilder::new(config_json, size_limit),
            shards_written: 0,
            payload: Vec::new(),
            ends: Vec::new(),
            framed: Vec::new(),
        };
        Ok(Self {
            settings,
            state: Mutex::new(state),
        })
    }

    /// Encodes and adds one sample dict. Returns the index entry fields of a shard that had
    /// to be written first, or `None`. Raises `NeedsPythonEncoding` for values it leaves to
    /// the exact Python encoder.
    fn write<'py>(
        &self,
        py: Python<'py>,
        sample: &Bound<'py, PyAny>,
    ) -> PyResult<Option<Bound<'py, PyDict>>> {
        let mut guard = self.state.lock().unwrap_or_else(PoisonError::into_inner);
        let state = &mut *guard;
        state.payload.clear();
        state.ends.clear();
        for (name, kind) in self.settings.names.iter().zip(&self.settings.kinds) {
            let value = sample.get_item(name.bind(py))?;
            if !kinds::encode(*kind, &value, &mut state.payload)? {
                return Err(decline(py, name.bind(py)));
            }
            state.ends.push(state.payload.len());
        }
        let mut columns = Vec::with_capacity(state.ends.len());
        let mut start = 0;
        for &end in &state.ends {
            columns.push(&state.payload[start..end]);
            start = end;
        }
        state.framed.clear();
        if self
            .settings
            .layout
            .frame(&columns, &mut state.framed)
            .is_err()
        {
            return Err(decline(py, &PyString::new(py, "fixed-size column")));
        }
        let framed = std::mem::take(&mut state.framed);
        let flushed = self.push(py, state, &framed)?;
        state.framed = framed;
        Ok(flushed)
    }

    /// Adds one sample already framed by Python.
    fn write_encoded<'py>(
        &self,
        py: Python<'py>,
        sample: &[u8],
    ) -> PyResult<Option<Bound<'py, PyDict>>> {
        let mut guard = self.state.lock().unwrap_or_else(PoisonError::into_inner);
        self.push(py, &mut guard, sample)
    }

    /// Writes the pending samples as a shard, if there are any.
    fn flush<'py>(&self, py: Python<'py>) -> PyResult<Option<Bound<'py, PyDict>>> {
        let mut guard = self.state.lock().unwrap_or_else(PoisonError::into_inner);
        if guard.builder.is_empty() {
            return Ok(None);
        }
        self.write_shard(py, &mut guard).map(Some)
    }

    /// The file bytes the pending samples would be written as, without writing them.
    fn pending_shard_bytes<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyBytes>> {
        let guard = self.state.lock().unwrap_or_else(PoisonError::into_inner);
        let bytes = guard.builder.shard_bytes().py()?;
        Ok(PyBytes::new(py, &bytes))
    }

    /// Number of shard files written so far.
    #[getter]
    fn num_shards(&self) -> usize {
        self.state
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .shards_written
    }

    /// Samples waiting for the current shard.
    #[getter]
    fn pending_samples(&self) -> usize {
        self.state
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .builder
            .num_samples()
    }
}

impl MDSShardWriter {
    /// Applies the splitting rule: write the current shard (even an empty one, as upstream
    /// does) when this sample would cross the size limit, then add the sample.
    fn push<'py>(
        &self,
        py: Python<'py>,
        state: &mut State,
        sample: &[u8],
    ) -> PyResult<Option<Bound<'py, PyDict>>> {
        let flushed = if state.builder.needs_flush_before(sample.len()) {
            Some(self.write_shard(py, state)?)
        } else {
            None
        };
        state.builder.push(sample);
        Ok(flushed)
    }

    fn write_shard<'py>(&self, py: Python<'py>, state: &mut State) -> PyResult<Bound<'py, PyDict>> {
        let samples = state.builder.num_samples();
        let bytes = state.builder.take_shard_bytes().py()?;
        let basename = format!("shard.{:05}.mds", state.shards_written);
        let settings = &self.settings;
        let dir = settings.dirname.clone();
        let compression = settings.compression;
        let hashes = settings.hashes.clone();
        let (raw, zip) = enter_core(py, move || {
            write_shard_files(&dir, &basename, &bytes, compression.as_ref(), &hashes)
        })?;
        state.shards_written += 1;
        let entry = PyDict::new(py);
        entry.set_item("samples", samples)?;
        entry.set_item("raw_data", file_info_dict(py, &raw)?)?;
        match zip {
            Some(zip) => entry.set_item("zip_data", file_info_dict(py, &zip)?)?,
            None => entry.set_item("zip_data", py.None())?,
        }
        Ok(entry)
    }
}

fn decline(py: Python<'_>, column: &Bound<'_, PyString>) -> PyErr {
    PyExc::NeedsPythonEncoding.err(py, format!("column {column}"))
}

/// `{"basename", "bytes", "hashes": {algo: hex}}`, as in `index.json`.
pub fn file_info_dict<'py>(py: Python<'py>, info: &FileInfo) -> PyResult<Bound<'py, PyDict>> {
    let dict = PyDict::new(py);
    dict.set_item("basename", &info.basename)?;
    dict.set_item("bytes", info.bytes)?;
    let hashes = PyDict::new(py);
    for (algo, digest) in &info.hashes {
        hashes.set_item(algo, digest)?;
    }
    dict.set_item("hashes", hashes)?;
    Ok(dict)
}
