//! `MDSShardWriter`: frames samples in Rust straight into the shard buffer, and hands each
//! finished shard to a background thread that hashes, compresses and writes it.

use std::path::PathBuf;
use std::sync::{Mutex, PoisonError};

use pyo3::prelude::*;
use pyo3::types::{PyBytes, PyDict, PyString};
use streamx_core::compression::Compression;
use streamx_core::hashing::HashAlgo;
use streamx_core::mds::files::FileInfo;
use streamx_core::mds::{
    BufferPool, Encoding, Finisher, Mark, ShardBuilder, ShardDone, ShardParts,
};

use crate::array_write::encode_array;
use crate::errors::{to_py, IntoPy, PyExc};
use crate::kinds::{self, Kind};
use crate::shared_bytes::share;

/// How one column's value is encoded on the write path.
enum WriteKind {
    Native(Kind),
    NdArray {
        dtype: Option<streamx_core::mds::ScalarType>,
        shape: Option<Vec<u64>>,
    },
}

impl WriteKind {
    /// A kind name (see `kinds::Kind::parse`), or an `ndarray[:dtype[:shape]]` encoding.
    fn parse(name: &str) -> PyResult<WriteKind> {
        if name.starts_with("ndarray") {
            if let Ok(Encoding::NdArray { dtype, shape }) = Encoding::parse(name) {
                return Ok(WriteKind::NdArray { dtype, shape });
            }
        }
        Kind::parse(name).map(WriteKind::Native)
    }

    /// Appends `value`'s bytes; `false` (with `out` unchanged) leaves it to Python.
    fn encode(&self, value: &Bound<'_, PyAny>, out: &mut Vec<u8>) -> PyResult<bool> {
        match self {
            WriteKind::Native(kind) => kinds::encode(*kind, value, out),
            WriteKind::NdArray { dtype, shape } => {
                if let Ok(bytes) = value.cast::<PyBytes>() {
                    out.extend_from_slice(bytes.as_bytes());
                    return Ok(true);
                }
                Ok(encode_array(*dtype, shape.as_deref(), value, out))
            }
        }
    }
}

/// Per-shard settings that do not change while writing.
struct Settings {
    names: Vec<Py<PyString>>,
    kinds: Vec<WriteKind>,
    sizes: Vec<Option<u64>>,
    /// Variable-size columns: each gets a `u32` length at the head of the sample.
    variable: usize,
}

/// Mutable writing state, behind a mutex so the pyclass can be frozen.
struct State {
    builder: ShardBuilder,
    finisher: Finisher,
    shards_written: usize,
    /// Samples added, in every shard.
    samples_written: u64,
    /// The first background failure, raised again by every later call.
    failure: Option<PyErr>,
}

impl State {
    fn check(&self, py: Python<'_>) -> PyResult<()> {
        match &self.failure {
            Some(err) => Err(err.clone_ref(py)),
            None => Ok(()),
        }
    }

    fn fail(&mut self, py: Python<'_>, err: PyErr) -> PyErr {
        self.failure = Some(err.clone_ref(py));
        err
    }
}

/// Frames samples into MDS shards; finished shards are written by a background thread.
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
            .map(|k| WriteKind::parse(k))
            .collect::<PyResult<_>>()?;
        let hashes = hashes
            .iter()
            .map(|h| HashAlgo::from_name(h))
            .collect::<Result<_, _>>()
            .py()?;
        let compression = compression.map(Compression::parse).transpose().py()?;
        let settings = Settings {
            names: column_names
                .iter()
                .map(|n| PyString::intern(py, n).unbind())
                .collect(),
            kinds,
            variable: column_sizes.iter().filter(|s| s.is_none()).count(),
            sizes: column_sizes,
        };
        let pool = BufferPool::new();
        let state = State {
            builder: ShardBuilder::new(config_json, size_limit).with_pool(pool.clone()),
            finisher: Finisher::new(dirname, compression, hashes).with_pool(pool),
            shards_written: 0,
            samples_written: 0,
            failure: None,
        };
        Ok(Self {
            settings,
            state: Mutex::new(state),
        })
    }

    /// Encodes and adds one sample dict, straight into the current shard. Returns whether
    /// finished shards wait for `drain`. Raises `NeedsPythonEncoding` for values it leaves
    /// to the exact Python encoder, and any earlier background failure.
    fn write(&self, py: Python<'_>, sample: &Bound<'_, PyAny>) -> PyResult<bool> {
        let mut guard = self.lock();
        let state = &mut *guard;
        state.check(py)?;
        let mark = state.builder.mark();
        match self.frame(py, sample, &mut state.builder) {
            Ok(None) => {}
            Ok(Some(column)) => {
                state.builder.rollback(mark);
                let name = self.settings.names[column].bind(py);
                return Err(PyExc::NeedsPythonEncoding.err(py, format!("column {name}")));
            }
            Err(err) => {
                state.builder.rollback(mark);
                return Err(err);
            }
        }
        commit(py, state, mark)
    }

    /// Adds one sample already framed by Python; returns as `write` does.
    fn write_encoded(&self, py: Python<'_>, sample: &[u8]) -> PyResult<bool> {
        let mut guard = self.lock();
        let state = &mut *guard;
        state.check(py)?;
        let mark = state.builder.mark();
        state.builder.buffer().extend_from_slice(sample);
        commit(py, state, mark)
    }

    /// Queues the pending samples as a shard, if there are any; returns as `write` does.
    fn flush(&self, py: Python<'_>) -> PyResult<bool> {
        let mut guard = self.lock();
        let state = &mut *guard;
        state.check(py)?;
        if !state.builder.is_empty() {
            let parts = state.builder.take_parts().py()?;
            submit(py, state, parts)?;
        }
        Ok(state.finisher.has_results())
    }

    /// Index entry fields of the shards written since the last call, in order, without
    /// waiting. Raises the background failure, if there was one.
    fn drain<'py>(&self, py: Python<'py>) -> PyResult<Vec<Bound<'py, PyDict>>> {
        let mut guard = self.lock();
        let state = &mut *guard;
        state.check(py)?;
        match state.finisher.drain() {
            Ok(done) => done.iter().map(|d| entry_dict(py, d)).collect(),
            Err(err) => Err(state.fail(py, to_py(err))),
        }
    }

    /// Waits until every queued shard is on disk; returns what `drain` would. Pending
    /// samples are not flushed (call `flush` first).
    fn finish<'py>(&self, py: Python<'py>) -> PyResult<Vec<Bound<'py, PyDict>>> {
        let mut guard = self.lock();
        let state = &mut *guard;
        state.check(py)?;
        let finisher = &mut state.finisher;
        match py.detach(|| finisher.finish()) {
            Ok(done) => done.iter().map(|d| entry_dict(py, d)).collect(),
            Err(err) => Err(state.fail(py, to_py(err))),
        }
    }

    /// The file bytes the pending samples would be written as, without writing them.
    fn pending_shard_bytes<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyBytes>> {
        let bytes = self.lock().builder.shard_bytes().py()?;
        Ok(PyBytes::new(py, &bytes))
    }

    /// Number of shards queued or written so far.
    #[getter]
    fn num_shards(&self) -> usize {
        self.lock().shards_written
    }

    /// Samples added so far, in every shard (the next sample's index in the dataset).
    #[getter]
    fn num_samples(&self) -> u64 {
        self.lock().samples_written
    }

    /// Samples waiting for the current shard.
    #[getter]
    fn pending_samples(&self) -> usize {
        self.lock().builder.num_samples()
    }
}

impl MDSShardWriter {
    fn lock(&self) -> std::sync::MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Frames one sample into the current shard: the `u32` lengths of its variable-size
    /// columns, then each column (large `bytes` values held by reference). Returns the
    /// column Python must encode, if any; the caller rolls back either way.
    fn frame(
        &self,
        py: Python<'_>,
        sample: &Bound<'_, PyAny>,
        builder: &mut ShardBuilder,
    ) -> PyResult<Option<usize>> {
        let settings = &self.settings;
        let buf = builder.buffer();
        let mut slot = buf.len();
        buf.resize(slot + 4 * settings.variable, 0);
        let columns = settings
            .names
            .iter()
            .zip(&settings.kinds)
            .zip(&settings.sizes);
        for (i, ((name, kind), size)) in columns.enumerate() {
            let value = sample.get_item(name.bind(py))?;
            let len = if let Some(shared) = share(&value) {
                let len = shared.bytes().len();
                builder.push_shared(shared);
                len
            } else {
                let buf = builder.buffer();
                let start = buf.len();
                if !kind.encode(&value, buf)? {
                    return Ok(Some(i));
                }
                buf.len() - start
            };
            match (size, u32::try_from(len)) {
                (Some(size), _) if *size != len as u64 => return Ok(Some(i)),
                (Some(_), _) => {}
                (None, Ok(len)) => {
                    builder.buffer()[slot..slot + 4].copy_from_slice(&len.to_le_bytes());
                    slot += 4;
                }
                (None, Err(_)) => return Ok(Some(i)),
            }
        }
        Ok(None)
    }
}

/// Takes what was framed since `mark` as a sample, queueing the shard it closes, if any.
fn commit(py: Python<'_>, state: &mut State, mark: Mark) -> PyResult<bool> {
    if let Some(parts) = state.builder.commit_at(mark).py()? {
        submit(py, state, parts)?;
    }
    state.samples_written += 1;
    Ok(state.finisher.has_results())
}

/// Hands a finished shard to the background thread, waiting (detached) while it is busy.
fn submit(py: Python<'_>, state: &mut State, parts: ShardParts) -> PyResult<()> {
    let basename = format!("shard.{:05}.mds", state.shards_written);
    state.shards_written += 1;
    let finisher = &mut state.finisher;
    if let Err(err) = py.detach(|| finisher.submit(basename, parts)) {
        // The thread stopped on an earlier failure: that one is the error to report.
        let cause = state.finisher.drain().err().unwrap_or(err);
        return Err(state.fail(py, to_py(cause)));
    }
    Ok(())
}

/// `{"samples", "raw_data", "zip_data"}` of one written shard, as in `index.json`.
fn entry_dict<'py>(py: Python<'py>, done: &ShardDone) -> PyResult<Bound<'py, PyDict>> {
    let entry = PyDict::new(py);
    entry.set_item("samples", done.samples)?;
    entry.set_item("raw_data", file_info_dict(py, &done.raw)?)?;
    match &done.zip {
        Some(zip) => entry.set_item("zip_data", file_info_dict(py, zip)?)?,
        None => entry.set_item("zip_data", py.None())?,
    }
    Ok(entry)
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
