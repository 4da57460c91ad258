//! `MDSReader`: global sample id -> decoded sample dict, over memory-mapped shards.

use std::ops::Range;
use std::path::PathBuf;
use std::sync::Arc;

use numpy::PyArray2;

use pyo3::exceptions::PyIndexError;
use pyo3::prelude::*;
use pyo3::types::{PyBytes, PyDict, PyList, PyString, PyTuple};
use streamx_core::compression::Compression;
use streamx_core::heap;
use streamx_core::mds::shard::Shard;
use streamx_core::mds::ColumnLayout;
use streamx_core::reader::{IndexedPart, ShardDesc, ShardSet};

use crate::enter::{enter_core_for, guard};
use crate::errors::{IntoPy, PyExc};
use crate::kinds::{self, Kind};
use crate::local::if_local;
use crate::sample_source::SampleSource;
use crate::shard_index::ShardIndex;

/// (raw path, zip path, compression, samples, schema id, raw bytes), as the Python side
/// passes shards; the raw size (from the index) bounds decompression.
type ShardArg = (
    PathBuf,
    Option<PathBuf>,
    Option<String>,
    u64,
    usize,
    Option<u64>,
);
/// (column names, column kinds, column sizes) of one schema.
type SchemaArg = (Vec<String>, Vec<String>, Vec<Option<u64>>);

struct Schema {
    names: Vec<Py<PyString>>,
    kinds: Vec<Kind>,
}

/// Random access to the samples of many MDS shards. Pickles by its constructor arguments.
#[pyclass(frozen, module = "streamx._core")]
pub struct MDSReader {
    set: ShardSet,
    schemas: Vec<Schema>,
    /// Each shard's schema id when given shard by shard; empty over index tables, whose
    /// shards' ids the set reads from the tables.
    listed_schema_ids: Vec<usize>,
    args: (Py<PyAny>, Py<PyAny>),
}

#[pymethods]
impl MDSReader {
    #[new]
    fn new(
        py: Python<'_>,
        shards: &Bound<'_, PyAny>,
        schemas: &Bound<'_, PyAny>,
    ) -> PyResult<Self> {
        let shard_args = shards.extract::<Vec<ShardArg>>();
        let schema_args: Vec<SchemaArg> = schemas.extract()?;
        let mut layouts = Vec::with_capacity(schema_args.len());
        let mut built = Vec::with_capacity(schema_args.len());
        for (names, kinds, sizes) in &schema_args {
            layouts.push(ColumnLayout::from_sizes(sizes).py()?);
            built.push(Schema {
                names: names
                    .iter()
                    .map(|n| PyString::intern(py, n).unbind())
                    .collect(),
                kinds: kinds
                    .iter()
                    .map(|k| Kind::parse(k))
                    .collect::<PyResult<_>>()?,
            });
        }
        let args = (shards.clone().unbind(), schemas.clone().unbind());
        let Ok(shard_args) = shard_args else {
            let parts = indexed_parts(shards.extract()?);
            return Ok(Self {
                set: ShardSet::from_indexes(parts, layouts).py()?,
                schemas: built,
                listed_schema_ids: Vec::new(),
                args,
            });
        };
        let mut descs = Vec::with_capacity(shard_args.len());
        let mut schema_ids = Vec::with_capacity(shard_args.len());
        for (raw_path, zip_path, compression, samples, schema, raw_bytes) in shard_args {
            let layout = layouts.get(schema).cloned().ok_or_else(|| {
                pyo3::exceptions::PyValueError::new_err(format!("No schema {schema}"))
            })?;
            let compression = compression
                .as_deref()
                .map(Compression::parse)
                .transpose()
                .py()?;
            descs.push(ShardDesc {
                raw_path,
                zip_path,
                compression,
                samples,
                raw_bytes,
                layout,
            });
            schema_ids.push(schema);
        }
        Ok(Self {
            set: ShardSet::new(descs),
            schemas: built,
            listed_schema_ids: schema_ids,
            args,
        })
    }

    fn __len__(&self) -> usize {
        self.set.num_samples() as usize
    }

    /// Total samples across all shards.
    #[getter]
    fn num_samples(&self) -> u64 {
        self.set.num_samples()
    }

    /// The schema id of each shard.
    #[getter]
    fn schema_ids(&self) -> Vec<usize> {
        (0..self.set.num_shards())
            .map(|shard| self.schema_id(shard))
            .collect()
    }

    /// The schema id of shard `shard`.
    #[pyo3(name = "schema_id")]
    fn py_schema_id(&self, shard: usize) -> PyResult<usize> {
        if shard >= self.set.num_shards() {
            return Err(PyIndexError::new_err(format!(
                "Shard {shard} out of range for {} shards",
                self.set.num_shards()
            )));
        }
        Ok(self.schema_id(shard))
    }

    /// Sample `index` as a dict; byte-level columns decoded, `raw` ones as bytes.
    fn get<'py>(&self, py: Python<'py>, index: u64) -> PyResult<Bound<'py, PyDict>> {
        let mut ranges = Vec::new();
        guard(
            py,
            || self.where_is(index),
            || self.decode(py, index, &mut ranges),
        )
    }

    /// `ds[index]` for a Python int: a negative index counts from the end, and one out of
    /// range raises `IndexError` worded as `Array.__getitem__` words it.
    fn get_item<'py>(&self, py: Python<'py>, index: i64) -> PyResult<Bound<'py, PyDict>> {
        let size = self.set.num_samples();
        let wrapped = if index < 0 {
            index.checked_add_unsigned(size)
        } else {
            Some(index)
        };
        match wrapped
            .and_then(|i| u64::try_from(i).ok())
            .filter(|&i| i < size)
        {
            Some(i) => self.get(py, i),
            None => Err(PyIndexError::new_err(format!(
                "Sample index {index} out of range for {size} samples"
            ))),
        }
    }

    /// Many samples at once, in the order of `indices`.
    fn get_many<'py>(
        &self,
        py: Python<'py>,
        indices: Vec<u64>,
    ) -> PyResult<Vec<Bound<'py, PyDict>>> {
        let mut ranges = Vec::new();
        indices
            .into_iter()
            .map(|i| guard(py, || self.where_is(i), || self.decode(py, i, &mut ranges)))
            .collect()
    }

    /// Copies column `columns[k]` (its position among the sorted columns) of each sample
    /// `indices[i]` into row `i` of `outs[k]`: C-contiguous uint8 arrays with a row per
    /// sample, each row as wide as the column's field. Returns, for each column of
    /// `listed`, the list of its decoded values. Raises `FileNotFoundError` for a shard not
    /// on disk (the rows are then incomplete) and `CorruptShardError` for a field of another
    /// width or a value that does not decode.
    #[pyo3(signature = (indices, columns, outs, listed=Vec::new()))]
    fn gather<'py>(
        &self,
        py: Python<'py>,
        indices: Vec<u64>,
        columns: Vec<usize>,
        outs: Vec<Bound<'py, PyArray2<u8>>>,
        listed: Vec<usize>,
    ) -> PyResult<Vec<Bound<'py, PyList>>> {
        crate::gather::gather(self, py, &indices, &columns, &outs, &listed)
    }

    /// `get`, or `None` while the sample's shard is not on local disk.
    fn get_if_local<'py>(
        &self,
        py: Python<'py>,
        index: u64,
    ) -> PyResult<Option<Bound<'py, PyDict>>> {
        if_local(py, self.get(py, index))
    }

    /// `get_item`, or `None` while the sample's shard is not on local disk.
    fn get_item_if_local<'py>(
        &self,
        py: Python<'py>,
        index: i64,
    ) -> PyResult<Option<Bound<'py, PyDict>>> {
        if_local(py, self.get_item(py, index))
    }

    /// `get_many`, or `None` while a shard of `indices` is not on local disk.
    fn get_many_if_local<'py>(
        &self,
        py: Python<'py>,
        indices: Vec<u64>,
    ) -> PyResult<Option<Vec<Bound<'py, PyDict>>>> {
        if_local(py, self.get_many(py, indices))
    }

    /// `gather`, or `None` while a shard of `indices` is not on local disk (the rows are
    /// then incomplete).
    #[pyo3(signature = (indices, columns, outs, listed=Vec::new()))]
    fn gather_if_local<'py>(
        &self,
        py: Python<'py>,
        indices: Vec<u64>,
        columns: Vec<usize>,
        outs: Vec<Bound<'py, PyArray2<u8>>>,
        listed: Vec<usize>,
    ) -> PyResult<Option<Vec<Bound<'py, PyList>>>> {
        if_local(py, self.gather(py, indices, columns, outs, listed))
    }

    /// The framed bytes of sample `index`.
    fn sample_bytes<'py>(&self, py: Python<'py>, index: u64) -> PyResult<Bound<'py, PyBytes>> {
        let shard_id = self.ensure_open(py, index)?;
        let (shard, range) = self.set.sample_range(index).py()?;
        let copy = PyBytes::new(py, &shard.bytes()[range]);
        self.set.checked(shard_id, &shard, Ok(copy)).py()
    }

    /// `(shard, index within shard)` of a global sample id.
    fn locate(&self, index: u64) -> PyResult<(usize, usize)> {
        self.set.locate(index).py()
    }

    /// Drops the memory map of one shard so its files can be deleted or replaced.
    fn evict(&self, shard: usize) {
        self.set.evict(shard);
    }

    fn __reduce__<'py>(
        slf: &Bound<'py, Self>,
    ) -> PyResult<(Bound<'py, PyAny>, Bound<'py, PyTuple>)> {
        let py = slf.py();
        let this = slf.get();
        let args = PyTuple::new(py, [this.args.0.bind(py), this.args.1.bind(py)])?;
        Ok((py.get_type::<Self>().into_any(), args))
    }
}

/// `(index, directory, first schema id)` parts as the set reads them: each table shared,
/// not copied, its paths joined only when a shard is opened.
fn indexed_parts(parts: Vec<(Bound<'_, ShardIndex>, PathBuf, usize)>) -> Vec<IndexedPart> {
    parts
        .into_iter()
        .map(|(index, dir, first_schema)| IndexedPart {
            table: Arc::clone(&index.get().table),
            dir,
            first_schema,
        })
        .collect()
}

impl MDSReader {
    /// "sample N of shard <path>", for errors about sample `index`.
    pub(crate) fn where_is(&self, index: u64) -> String {
        match self.set.locate(index) {
            Ok((shard, _)) => match self.set.desc(shard) {
                Ok(desc) => format!("sample {index} of shard {}", desc.raw_path.display()),
                Err(_) => format!("sample {index}"),
            },
            Err(_) => format!("sample {index}"),
        }
    }

    /// Opens (maps, maybe decompresses) the shard of `index` with the GIL released.
    fn ensure_open(&self, py: Python<'_>, index: u64) -> PyResult<usize> {
        let (shard, _) = self.set.locate(index).py()?;
        if !self.set.is_open(shard) {
            let set = &self.set;
            let what = || self.where_is(index);
            enter_core_for(py, what, || set.shard(shard).map(|_| ()))?;
        }
        Ok(shard)
    }

    /// The shard of sample `index` (mapped now if it was not) and its number, with `ranges`
    /// set to the sample's column ranges in the shard's bytes.
    pub(crate) fn open_sample(
        &self,
        py: Python<'_>,
        index: u64,
        ranges: &mut Vec<Range<usize>>,
    ) -> PyResult<(usize, Arc<Shard>)> {
        if let Some(found) = self.set.sample_columns_if_open(index, ranges).py()? {
            return Ok(found);
        }
        let shard_id = self.ensure_open(py, index)?;
        Ok((shard_id, self.set.sample_columns(index, ranges).py()?))
    }

    /// The kind of column `column` in the schema of shard `shard`.
    pub(crate) fn kind_of(&self, shard: usize, column: usize) -> Kind {
        self.schemas[self.schema_id(shard)].kinds[column]
    }

    /// The schema id of shard `shard` (< the number of shards).
    fn schema_id(&self, shard: usize) -> usize {
        self.set
            .schema_id(shard)
            .unwrap_or_else(|| self.listed_schema_ids[shard])
    }

    pub(crate) fn set(&self) -> &ShardSet {
        &self.set
    }

    fn decode<'py>(
        &self,
        py: Python<'py>,
        index: u64,
        ranges: &mut Vec<Range<usize>>,
    ) -> PyResult<Bound<'py, PyDict>> {
        let (shard_id, shard) = self.open_sample(py, index, ranges)?;
        let schema = &self.schemas[self.schema_id(shard_id)];
        let bytes = shard.bytes();
        let dict = PyDict::new(py);
        let mut decoded = Ok(());
        for ((name, kind), range) in schema.names.iter().zip(&schema.kinds).zip(ranges.iter()) {
            match kinds::decode(py, *kind, &bytes[range.clone()]) {
                Ok(value) => dict.set_item(name.bind(py), value)?,
                Err(reason) => {
                    let column = name.bind(py).to_string();
                    decoded = Err((column, reason));
                    break;
                }
            }
        }
        // Values decoded from a shard that shrank under its map are zeros, not the file's.
        self.set.checked(shard_id, &shard, Ok(())).py()?;
        if ranges.iter().map(ExactSizeIterator::len).sum::<usize>() >= heap::LARGE_SAMPLE {
            heap::keep_freed_heap();
        }
        decoded.map_err(|(column, reason)| {
            let message = format!(
                "Corrupt shard {}: sample {index}, column {column}: {reason}",
                shard.path().display(),
            );
            PyExc::CorruptShard.err(py, message)
        })?;
        Ok(dict)
    }
}

impl SampleSource for MDSReader {
    fn where_is(&self, index: u64) -> String {
        MDSReader::where_is(self, index)
    }

    fn open_sample(
        &self,
        py: Python<'_>,
        index: u64,
        ranges: &mut Vec<Range<usize>>,
    ) -> PyResult<(usize, Arc<Shard>)> {
        MDSReader::open_sample(self, py, index, ranges)
    }

    fn kind_of(&self, shard: usize, column: usize) -> Kind {
        MDSReader::kind_of(self, shard, column)
    }

    fn set(&self) -> &ShardSet {
        MDSReader::set(self)
    }
}
