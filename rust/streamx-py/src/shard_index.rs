//! `ShardIndex`: an `index.json` read by the core into columns; Python materializes one
//! shard's entry only when asked for it.

use std::collections::BTreeSet;
use std::path::PathBuf;
use std::sync::Arc;

use numpy::{IntoPyArray, PyArray1};
use pyo3::prelude::*;
use pyo3::types::{PyBytes, PyTuple};
use streamx_core::mds::index::{parse_index_slice, read_index, IndexFault, IndexTable};

use crate::enter::enter_core;
use crate::errors::{to_py, PyExc};

/// The shard entries of one index, as compact columns. Pickles by its columns.
#[pyclass(frozen, module = "streamx._core")]
pub struct ShardIndex {
    pub table: Arc<IndexTable>,
}

type FilePy = Option<(String, u64, Vec<(String, String)>)>;
type SchemaPy = Option<(Vec<String>, Vec<String>, Vec<Option<u64>>)>;

#[pymethods]
impl ShardIndex {
    /// Reads and checks the index at `path` (GIL released). Returns the index, or the
    /// parser's message when the file is not well-formed JSON.
    #[staticmethod]
    fn read(py: Python<'_>, path: PathBuf) -> PyResult<Py<PyAny>> {
        let outcome = enter_core(py, move || Ok(read_index(&path)))?;
        Self::answer(py, outcome)
    }

    /// Reads and checks an index held in `data`; `shown` names it in errors.
    #[staticmethod]
    fn parse(py: Python<'_>, data: Vec<u8>, shown: String) -> PyResult<Py<PyAny>> {
        let outcome = enter_core(py, move || Ok(parse_index_slice(&data, &shown)))?;
        Self::answer(py, outcome)
    }

    fn __len__(&self) -> usize {
        self.table.len()
    }

    /// Samples of each shard.
    fn samples<'py>(&self, py: Python<'py>) -> Bound<'py, PyArray1<i64>> {
        let counts: Vec<i64> = self.table.samples.iter().map(|&n| n as i64).collect();
        counts.into_pyarray(py)
    }

    /// Bytes each shard may take in a cache (raw and compressed files).
    fn max_sizes<'py>(&self, py: Python<'py>) -> Bound<'py, PyArray1<i64>> {
        let sizes: Vec<i64> = (0..self.table.len())
            .map(|s| self.table.max_size(s) as i64)
            .collect();
        sizes.into_pyarray(py)
    }

    /// Size of each shard's raw (uncompressed) data file.
    fn raw_sizes<'py>(&self, py: Python<'py>) -> Bound<'py, PyArray1<i64>> {
        let raw = &self.table.file_columns()[0].bytes;
        let sizes: Vec<i64> = raw.iter().map(|&b| b as i64).collect();
        sizes.into_pyarray(py)
    }

    /// The schema id of each shard.
    fn schema_ids<'py>(&self, py: Python<'py>) -> Bound<'py, PyArray1<i64>> {
        let ids: Vec<i64> = self
            .table
            .schema_ids()
            .iter()
            .map(|&i| i64::from(i))
            .collect();
        ids.into_pyarray(py)
    }

    /// The distinct MDS column layouts `(names, encodings, sizes)`, `None` for other formats.
    fn schemas(&self) -> Vec<SchemaPy> {
        let schemas = self.table.schemas().iter();
        schemas
            .map(|s| {
                s.as_ref()
                    .map(|s| (s.names.clone(), s.encodings.clone(), s.sizes.clone()))
            })
            .collect()
    }

    /// The distinct formats of the shards, sorted.
    fn formats(&self) -> Vec<&str> {
        self.table.distinct_formats()
    }

    /// Shard `shard`'s entry: `(format, compression, hashes, samples, size_limit, raw_data,
    /// zip_data, raw_meta, zip_meta, schema_id, extra_json)`; files are
    /// `(basename, bytes, [(algo, digest)])` or `None`.
    fn entry<'py>(&self, py: Python<'py>, shard: usize) -> PyResult<Bound<'py, PyTuple>> {
        let t = &self.table;
        if shard >= t.len() {
            return Err(pyo3::exceptions::PyIndexError::new_err(format!(
                "Shard {shard} out of range for {} shards",
                t.len()
            )));
        }
        let file = |column: usize| -> FilePy {
            t.file(shard, column).map(|(name, bytes, hashes)| {
                let hashes = hashes
                    .into_iter()
                    .map(|(a, d)| (a.to_owned(), d.to_owned()));
                (name.to_owned(), bytes, hashes.collect())
            })
        };
        let values = (
            t.format(shard),
            t.compression(shard),
            t.hash_list(shard).to_vec(),
            t.samples[shard],
            t.size_limit(shard),
            file(0),
            file(1),
            file(2),
            file(3),
            t.schema_ids()[shard],
            t.extra(shard),
        );
        values.into_pyobject(py)
    }

    /// The distinct directory parts of the shards' file names (`""`: the top), sorted.
    fn file_dirs(&self) -> Vec<&str> {
        self.table.file_dirs()
    }

    /// The shards (in order) with a file named by one of `found`'s `(directory part, name)`.
    fn shards_with(&self, py: Python<'_>, found: Vec<(String, String)>) -> Vec<usize> {
        let table = &self.table;
        py.detach(|| {
            let wanted: BTreeSet<(&str, &str)> = found
                .iter()
                .map(|(d, n)| (d.as_str(), n.as_str()))
                .collect();
            table.shards_with(&wanted)
        })
    }

    #[staticmethod]
    fn _from_state(py: Python<'_>, state: Vec<u8>) -> PyResult<Self> {
        let table = enter_core(py, move || IndexTable::from_state(&state))?;
        Ok(Self {
            table: Arc::new(table),
        })
    }

    fn __reduce__<'py>(
        slf: &Bound<'py, Self>,
    ) -> PyResult<(Bound<'py, PyAny>, Bound<'py, PyTuple>)> {
        let py = slf.py();
        let state = slf.get().table.to_state();
        let make = py.get_type::<Self>().getattr("_from_state")?;
        Ok((make, PyTuple::new(py, [PyBytes::new(py, &state)])?))
    }
}

impl ShardIndex {
    /// The index, the JSON parser's message (str), or the exception for an invalid index.
    fn answer(py: Python<'_>, outcome: Result<IndexTable, IndexFault>) -> PyResult<Py<PyAny>> {
        match outcome {
            Ok(table) => {
                let table = Arc::new(table);
                Ok(Py::new(py, Self { table })?.into_any())
            }
            Err(IndexFault::Syntax { reason, .. }) => {
                Ok(reason.into_pyobject(py)?.into_any().unbind())
            }
            Err(IndexFault::Invalid(message)) => Err(PyExc::CorruptIndex.err(py, message)),
            Err(IndexFault::Io(err)) => Err(to_py(err)),
        }
    }
}

/// Adds `ShardIndex` to `_core`.
pub fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_class::<ShardIndex>()
}
