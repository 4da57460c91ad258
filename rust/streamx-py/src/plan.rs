//! Epoch order entry points: the whole plan, one worker's share, and the building blocks
//! (shuffle, partition, sampling) that the parity tests compare with mosaicml-streaming.

use std::path::PathBuf;
use std::sync::Mutex;

use numpy::{IntoPyArray, PyArray1, PyArrayDyn, PyArrayMethods};
use pyo3::prelude::*;
use pyo3::types::PyBytes;
use streamx_core::partition::{self, PartitionAlgo, PartitionSpec};
use streamx_core::plan::{self, EpochConfig, StreamSpec, World};
use streamx_core::resample::{self, ResampleParams, StreamShards};
use streamx_core::sampling;
use streamx_core::shuffle::{self, CountCache, ShuffleAlgo};
use streamx_core::warning::{Warning, WarningKind};

use crate::enter::enter_core;
use crate::errors::IntoPy;

/// `(message, is_user_warning)` pairs, emitted by Python as `UserWarning` or a log record.
type PyWarnings = Vec<(String, bool)>;

fn py_warnings(warnings: Vec<Warning>) -> PyWarnings {
    warnings
        .into_iter()
        .map(|w| (w.message, w.kind == WarningKind::User))
        .collect()
}

/// The epoch settings, as the Python dataset resolves them.
#[derive(FromPyObject)]
#[pyo3(from_item_all)]
struct ConfigArg {
    streams: Vec<(Vec<i64>, i64, f64)>,
    seed: u64,
    epoch: u64,
    shuffle: bool,
    shuffle_algo: String,
    shuffle_block_size: usize,
    num_canonical_nodes: usize,
    partition_algo: String,
    batching_method: String,
    batch_size: usize,
    world: (usize, usize, usize),
    sample_in_epoch: u64,
    initial_physical_nodes: Option<usize>,
    sampling_method: String,
    sampling_granularity: i64,
}

impl ConfigArg {
    fn build(self) -> PyResult<EpochConfig> {
        let (num_nodes, ranks_per_node, workers_per_rank) = self.world;
        Ok(EpochConfig {
            streams: self
                .streams
                .into_iter()
                .map(|(samples_per_shard, choose, proportion)| StreamSpec {
                    samples_per_shard,
                    choose,
                    proportion,
                })
                .collect(),
            seed: self.seed,
            epoch: self.epoch,
            shuffle: self.shuffle,
            shuffle_algo: self.shuffle_algo.parse().py()?,
            shuffle_block_size: self.shuffle_block_size,
            num_canonical_nodes: self.num_canonical_nodes,
            partition_algo: self.partition_algo.parse().py()?,
            batching_method: self.batching_method.parse().py()?,
            batch_size: self.batch_size,
            world: World {
                num_nodes,
                ranks_per_node,
                workers_per_rank,
            },
            sample_in_epoch: self.sample_in_epoch,
            initial_physical_nodes: self.initial_physical_nodes,
            sampling_method: self.sampling_method.parse().py()?,
            sampling_granularity: self.sampling_granularity,
        })
    }
}

/// The whole epoch: ids of shape (nodes, ranks/node, workers/rank, batches, batch), -1 padded.
#[pyfunction]
fn plan_epoch<'py>(
    py: Python<'py>,
    config: ConfigArg,
) -> PyResult<(Bound<'py, PyArrayDyn<i64>>, PyWarnings)> {
    let cfg = config.build()?;
    let plan = enter_core(py, move || plan::plan_epoch(&cfg))?;
    let shape = plan.partition.shape;
    let ids = plan
        .partition
        .ids
        .into_pyarray(py)
        .reshape(shape.to_vec())?;
    Ok((ids, py_warnings(plan.warnings)))
}

/// One worker's ids of the epoch, `plan_epoch(...)[node, rank, worker].flatten()`.
#[pyfunction]
fn plan_worker<'py>(
    py: Python<'py>,
    config: ConfigArg,
    node: usize,
    rank: usize,
    worker: usize,
) -> PyResult<(Bound<'py, PyArray1<i64>>, PyWarnings)> {
    let cfg = config.build()?;
    let plan = enter_core(py, move || plan::plan_worker(&cfg, node, rank, worker))?;
    Ok((plan.ids.into_pyarray(py), py_warnings(plan.warnings)))
}

/// One worker's ids of the epoch in pieces, `plan_worker(...)` cut where they are asked for.
#[pyclass(frozen, module = "streamx._core")]
struct WorkerPieces {
    cursor: Mutex<plan::WorkerCursor>,
}

impl WorkerPieces {
    fn cursor(&self) -> std::sync::MutexGuard<'_, plan::WorkerCursor> {
        // A panic inside a call is caught at its boundary; the cursor stays usable.
        self.cursor
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }
}

#[pymethods]
impl WorkerPieces {
    /// The ids of the next `max_len` slots (-1 for padding); empty once all were handed out.
    fn next_piece<'py>(
        &self,
        py: Python<'py>,
        max_len: usize,
    ) -> PyResult<Bound<'py, PyArray1<i64>>> {
        if max_len == 0 {
            return Err(pyo3::exceptions::PyValueError::new_err(
                "max_len must be a positive number of slots",
            ));
        }
        let cursor = &self.cursor;
        let ids = enter_core(py, move || {
            let mut cursor = cursor
                .lock()
                .unwrap_or_else(std::sync::PoisonError::into_inner);
            cursor.next_piece(max_len)
        })?;
        Ok(ids.into_pyarray(py))
    }

    fn __len__(&self) -> usize {
        self.cursor().len()
    }

    /// How many slots were handed out.
    #[getter]
    fn position(&self) -> usize {
        self.cursor().position()
    }

    /// Whether pieces are computed as they are asked for (else planned whole at the start).
    #[getter]
    fn lazy(&self) -> bool {
        self.cursor().is_lazy()
    }

    /// `(nodes loaded, nodes saved, problem)` of the count cache; `None` without one.
    #[getter]
    fn count_cache_stats(&self) -> Option<PyCountStats> {
        let cursor = self.cursor();
        let stats = cursor.count_cache_stats()?;
        Some((stats.loaded_nodes, stats.saved_nodes, stats.problem.clone()))
    }

    /// Canonical nodes the resume marks given were valid for (0 without marks).
    #[getter]
    fn resume_marks_nodes(&self) -> usize {
        let cursor = self.cursor();
        cursor.count_cache_stats().map_or(0, |s| s.seeded_nodes)
    }
}

/// One worker's ids of the epoch as a [`WorkerPieces`] at its first slot, and the warnings;
/// the shuffle's counted draws read from and kept in `count_cache_dir` (best effort), and
/// py1e's canonical nodes laid out from `resume_marks` where they are this epoch's.
#[pyfunction]
#[pyo3(signature = (
    config, node, rank, worker, *, count_cache_dir=None, count_cache_min_samples=0,
    resume_marks=None,
))]
#[allow(clippy::too_many_arguments)]
fn plan_worker_pieces(
    py: Python<'_>,
    config: ConfigArg,
    node: usize,
    rank: usize,
    worker: usize,
    count_cache_dir: Option<PathBuf>,
    count_cache_min_samples: u64,
    resume_marks: Option<Vec<u8>>,
) -> PyResult<(WorkerPieces, PyWarnings)> {
    let cfg = config.build()?;
    let cache = count_cache_dir.map(|dir| CountCache {
        marks: resume_marks.unwrap_or_default(),
        ..CountCache::new(dir, count_cache_min_samples)
    });
    let mut cursor = enter_core(py, move || {
        plan::plan_worker_pieces_cached(&cfg, [node, rank, worker], cache.as_ref())
    })?;
    let warnings = std::mem::take(&mut cursor.warnings);
    let pieces = WorkerPieces {
        cursor: Mutex::new(cursor),
    };
    Ok((pieces, py_warnings(warnings)))
}

/// py1e's resume marks for a state dict at `config`'s `sample_in_epoch`, from the counted
/// draws kept in `count_cache_dir`; `None` where it holds none of this epoch's. Never counts.
#[pyfunction]
fn py1e_resume_marks<'py>(
    py: Python<'py>,
    config: ConfigArg,
    count_cache_dir: PathBuf,
) -> PyResult<Option<Bound<'py, PyBytes>>> {
    let cfg = config.build()?;
    let marks = enter_core(py, move || shuffle::resume_marks(&cfg, &count_cache_dir))?;
    Ok(marks.map(|m| PyBytes::new(py, &m)))
}

/// `(nodes loaded, nodes saved, problem)` of a count cache, as Python reads them.
type PyCountStats = (usize, usize, Option<String>);

/// Counts every canonical node of `config`'s py1e epoch into `count_cache_dir` now (what is
/// there is read), for state dicts that mark every node; what it did, or `None` for another
/// shuffle.
#[pyfunction]
fn py1e_count_every_node(
    py: Python<'_>,
    config: ConfigArg,
    count_cache_dir: PathBuf,
    count_cache_min_samples: u64,
) -> PyResult<Option<PyCountStats>> {
    let cfg = config.build()?;
    let cache = CountCache::new(count_cache_dir, count_cache_min_samples);
    let stats = enter_core(py, move || shuffle::count_every_node(&cfg, &cache))?;
    Ok(stats.map(|s| (s.loaded_nodes, s.saved_nodes, s.problem)))
}

/// [`py1e_count_every_node`] in a thread of its own that holds no Python state (it may
/// outlive the interpreter's teardown): whether it started. Its outcome is the file it writes.
#[pyfunction]
fn py1e_count_every_node_in_background(
    config: ConfigArg,
    count_cache_dir: PathBuf,
    count_cache_min_samples: u64,
) -> PyResult<bool> {
    let cfg = config.build()?;
    let cache = CountCache::new(count_cache_dir, count_cache_min_samples);
    Ok(shuffle::spawn_count_every_node(cfg, cache).is_ok())
}

/// mosaicml-streaming's `get_shuffle(algo, shard_sizes, ncn, seed, epoch, block_size)`.
#[pyfunction]
fn get_shuffle<'py>(
    py: Python<'py>,
    algo: &str,
    shard_sizes: Vec<i64>,
    num_canonical_nodes: usize,
    seed: u64,
    epoch: u64,
    block_size: usize,
) -> PyResult<(Bound<'py, PyArray1<i64>>, PyWarnings)> {
    let algo: ShuffleAlgo = algo.parse().py()?;
    let (perm, warnings) = enter_core(py, move || {
        let mut warnings = Vec::new();
        let perm = shuffle::get_shuffle_warn(
            algo,
            &shard_sizes,
            num_canonical_nodes,
            seed,
            epoch,
            block_size,
            &mut warnings,
        )?;
        Ok((perm, warnings))
    })?;
    Ok((perm.into_pyarray(py), py_warnings(warnings)))
}

/// mosaicml-streaming's `get_partitions(...)`, as a 5-D array.
#[pyfunction]
#[pyo3(signature = (algo, num_samples, num_canonical_nodes, num_physical_nodes, ranks_per_node, workers_per_rank, batch_size, drop_first=0, initial_physical_nodes=None))]
fn get_partitions<'py>(
    py: Python<'py>,
    algo: &str,
    num_samples: u64,
    num_canonical_nodes: usize,
    num_physical_nodes: usize,
    ranks_per_node: usize,
    workers_per_rank: usize,
    batch_size: usize,
    drop_first: u64,
    initial_physical_nodes: Option<usize>,
) -> PyResult<(Bound<'py, PyArrayDyn<i64>>, PyWarnings)> {
    let algo: PartitionAlgo = algo.parse().py()?;
    let spec = PartitionSpec {
        num_samples,
        num_canonical_nodes,
        num_physical_nodes,
        ranks_per_node,
        workers_per_rank,
        batch_size,
        drop_first,
        initial_physical_nodes,
    };
    let (part, warnings) = enter_core(py, move || {
        let mut warnings = Vec::new();
        Ok((
            partition::get_partitions(algo, &spec, &mut warnings)?,
            warnings,
        ))
    })?;
    let ids = part.ids.into_pyarray(py).reshape(part.shape.to_vec())?;
    Ok((ids, py_warnings(warnings)))
}

/// mosaicml-streaming's `get_sampling(samples_per_shard, choose, granularity, seed, epoch, use_epoch)`.
#[pyfunction]
fn get_sampling<'py>(
    py: Python<'py>,
    samples_per_shard: Vec<i64>,
    choose: i64,
    granularity: i64,
    seed: u64,
    epoch: u64,
    use_epoch: bool,
) -> PyResult<Bound<'py, PyArray1<i64>>> {
    let out = sampling::get_sampling(
        &samples_per_shard,
        choose,
        granularity,
        seed,
        epoch,
        use_epoch,
    )
    .py()?;
    Ok(out.into_pyarray(py))
}

/// mosaicml-streaming's `resample_streams(epoch, stream_id)`: (shuffle units, sample ids).
#[pyfunction]
#[pyo3(signature = (config, stream_id=None))]
fn resample_streams<'py>(
    py: Python<'py>,
    config: ConfigArg,
    stream_id: Option<usize>,
) -> PyResult<(Bound<'py, PyArray1<i64>>, Bound<'py, PyArray1<i64>>)> {
    let cfg = config.build()?;
    let out = enter_core(py, move || {
        let mut offset = 0;
        let mut views = Vec::new();
        for (i, stream) in cfg.streams.iter().enumerate() {
            if stream_id.is_none_or(|id| id == i) {
                views.push(StreamShards {
                    samples_per_shard: &stream.samples_per_shard,
                    sample_offset: offset,
                    choose: stream.choose,
                });
            }
            offset += stream.samples_per_shard.iter().sum::<i64>();
        }
        let params = ResampleParams {
            seed: cfg.seed,
            epoch: cfg.epoch,
            sampling_method: cfg.sampling_method,
            granularity: cfg.sampling_granularity,
            epoch_seed_change: cfg.epoch_seed_change(),
        };
        resample::resample_streams(&views, &params)
    })?;
    Ok((
        out.shuffle_units.into_pyarray(py),
        out.small_per_big.into_pyarray(py),
    ))
}

/// Adds this module's functions to `_core`.
pub fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_function(wrap_pyfunction!(plan_epoch, m)?)?;
    m.add_function(wrap_pyfunction!(plan_worker, m)?)?;
    m.add_function(wrap_pyfunction!(plan_worker_pieces, m)?)?;
    m.add_function(wrap_pyfunction!(py1e_resume_marks, m)?)?;
    m.add_function(wrap_pyfunction!(py1e_count_every_node, m)?)?;
    m.add_function(wrap_pyfunction!(py1e_count_every_node_in_background, m)?)?;
    m.add_class::<WorkerPieces>()?;
    m.add_function(wrap_pyfunction!(get_shuffle, m)?)?;
    m.add_function(wrap_pyfunction!(get_partitions, m)?)?;
    m.add_function(wrap_pyfunction!(get_sampling, m)?)?;
    m.add_function(wrap_pyfunction!(resample_streams, m)?)?;
    Ok(())
}
