//! What determines one epoch's sample order: the streams, the world and the run's settings
//! ([`EpochConfig`]). Below both the planner ([`crate::plan`], which re-exports these) and
//! the batching methods ([`crate::batching`]), which read it.

use std::fmt;
use std::str::FromStr;

use crate::limits::{check_alloc, checked_product};
use crate::partition::PartitionAlgo;
use crate::resample::{ResampleParams, SamplingMethod, StreamShards};
use crate::shuffle::ShuffleAlgo;
use crate::{Error, Result};

/// A batching method name accepted by mosaicml-streaming 0.13.0.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub enum BatchingMethod {
    /// Samples from all streams mixed freely.
    #[default]
    Random,
    /// Same stream mix in every global batch.
    Stratified,
    /// One stream per global batch.
    PerStream,
    /// One stream per device batch.
    DevicePerStream,
}

impl FromStr for BatchingMethod {
    type Err = Error;

    fn from_str(name: &str) -> Result<Self> {
        match name {
            "random" => Ok(BatchingMethod::Random),
            "stratified" => Ok(BatchingMethod::Stratified),
            "per_stream" => Ok(BatchingMethod::PerStream),
            "device_per_stream" => Ok(BatchingMethod::DevicePerStream),
            _ => Err(Error::InvalidArgument(format!(
                "Invalid batching method: {name}. Must be one of `random`, `stratified`, \
                 `per_stream`, or `device_per_stream`."
            ))),
        }
    }
}

impl fmt::Display for BatchingMethod {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            BatchingMethod::Random => "random",
            BatchingMethod::Stratified => "stratified",
            BatchingMethod::PerStream => "per_stream",
            BatchingMethod::DevicePerStream => "device_per_stream",
        })
    }
}

/// One stream after `Stream.apply_weights`.
#[derive(Clone, Debug, PartialEq)]
pub struct StreamSpec {
    /// Sample count of each of the stream's shards. Streams' shards are concatenated in order
    /// to form the dataset's global shard and sample ids.
    pub samples_per_shard: Vec<i64>,
    /// Samples drawn from the stream per epoch (`Stream.choose`).
    pub choose: i64,
    /// The stream's share of the epoch (`Stream.proportion`); scales its shuffle block size and
    /// its slots per global batch in the non-`random` batching methods.
    pub proportion: f64,
}

/// The physical world the epoch is laid out over (streaming's replicated `World`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct World {
    /// Physical nodes.
    pub num_nodes: usize,
    /// Ranks per node.
    pub ranks_per_node: usize,
    /// `DataLoader` workers per rank (1 when `num_workers=0`).
    pub workers_per_rank: usize,
}

/// Everything that determines one epoch's sample order.
#[derive(Clone, Debug, PartialEq)]
pub struct EpochConfig {
    /// The streams, in dataset order.
    pub streams: Vec<StreamSpec>,
    /// `shuffle_seed`.
    pub seed: u64,
    /// The epoch being planned.
    pub epoch: u64,
    /// Whether to shuffle.
    pub shuffle: bool,
    /// `shuffle_algo`.
    pub shuffle_algo: ShuffleAlgo,
    /// `shuffle_block_size` (already resolved from its `None` default).
    pub shuffle_block_size: usize,
    /// `num_canonical_nodes` (already resolved from its `None` default).
    pub num_canonical_nodes: usize,
    /// `partition_algo`.
    pub partition_algo: PartitionAlgo,
    /// `batching_method`.
    pub batching_method: BatchingMethod,
    /// Per-device batch size.
    pub batch_size: usize,
    /// The world.
    pub world: World,
    /// Samples of this epoch already consumed across all ranks (the partition's `drop_first`).
    pub sample_in_epoch: u64,
    /// Physical nodes when the run started, from the resume state.
    pub initial_physical_nodes: Option<usize>,
    /// `sampling_method`.
    pub sampling_method: SamplingMethod,
    /// `sampling_granularity`.
    pub sampling_granularity: i64,
}

impl EpochConfig {
    /// streaming's `epoch_seed_change`: shuffling with balanced sampling reseeds every epoch.
    pub fn epoch_seed_change(&self) -> bool {
        self.shuffle && self.sampling_method == SamplingMethod::Balanced
    }

    /// The seed of the generators that shuffle stream origins (`per_stream`,
    /// `device_per_stream`).
    pub(crate) fn origin_seed(&self) -> u128 {
        let epoch = if self.epoch_seed_change() {
            self.epoch
        } else {
            0
        };
        u128::from(self.seed) + u128::from(epoch)
    }

    /// Resampling parameters shared by every stream.
    pub(crate) fn resample_params(&self) -> ResampleParams {
        ResampleParams {
            seed: self.seed,
            epoch: self.epoch,
            sampling_method: self.sampling_method,
            granularity: self.sampling_granularity,
            epoch_seed_change: self.epoch_seed_change(),
        }
    }

    /// The streams as resampling sees them, with global sample offsets from concatenation.
    pub(crate) fn stream_shards(&self) -> Vec<StreamShards<'_>> {
        let mut offset = 0;
        self.streams
            .iter()
            .map(|s| {
                let view = StreamShards {
                    samples_per_shard: &s.samples_per_shard,
                    sample_offset: offset,
                    choose: s.choose,
                };
                offset += s.samples_per_shard.iter().sum::<i64>();
                view
            })
            .collect()
    }

    /// `batch_size * ranks_per_node * num_nodes`.
    pub fn global_batch_size(&self) -> usize {
        self.batch_size * self.world.ranks_per_node * self.world.num_nodes
    }

    pub(crate) fn validate(&self) -> Result<()> {
        self.validate_bounded(true)
    }

    /// [`EpochConfig::validate`]; with `whole_epoch` false, sizes are only checked for
    /// overflow, not against memory: a plan made in pieces never holds the epoch's ids.
    pub(crate) fn validate_bounded(&self, whole_epoch: bool) -> Result<()> {
        let w = &self.world;
        let dims = [
            self.batch_size,
            self.num_canonical_nodes,
            w.num_nodes,
            w.ranks_per_node,
            w.workers_per_rank,
        ];
        if dims.contains(&0) {
            return Err(Error::InvalidArgument(
                "batch_size, num_canonical_nodes, num_nodes, ranks_per_node and \
                 workers_per_rank must be positive integers"
                    .to_string(),
            ));
        }
        if self.sampling_granularity <= 0 {
            return Err(Error::InvalidArgument(format!(
                "`sampling_granularity` must be a positive integer, but got: {}.",
                self.sampling_granularity
            )));
        }
        if self.streams.is_empty() {
            return Err(Error::InvalidArgument(
                "need at least one stream".to_string(),
            ));
        }
        self.validate_sizes(whole_epoch)
    }

    /// Settings can come from an untrusted state dict: bound every size the plan allocates
    /// by, so absurd values give an error and never an overflow or a failed allocation.
    fn validate_sizes(&self, whole_epoch: bool) -> Result<()> {
        let w = &self.world;
        let dims = [
            self.batch_size,
            self.num_canonical_nodes,
            w.num_nodes,
            w.ranks_per_node,
            w.workers_per_rank,
        ]
        .map(|d| d as u64);
        // The padding of a partition never exceeds one slot per canonical node, rank, worker
        // and batch position.
        let padding = checked_product(
            &dims,
            "batch_size x num_canonical_nodes x num_nodes x ranks_per_node x workers_per_rank",
        )?;
        let mut total = 0u64;
        for stream in &self.streams {
            let samples = stream
                .samples_per_shard
                .iter()
                .try_fold(0i64, |acc, &n| {
                    (n >= 0).then(|| acc.checked_add(n)).flatten()
                })
                .ok_or_else(|| {
                    Error::InvalidArgument("stream sample counts overflow".to_string())
                })?;
            total = total
                .checked_add(samples.unsigned_abs())
                .and_then(|t| t.checked_add(stream.choose.unsigned_abs()))
                .ok_or_else(|| Error::InvalidArgument("epoch size overflows".to_string()))?;
        }
        let ids = total
            .checked_add(padding)
            .ok_or_else(|| Error::InvalidArgument("epoch size overflows".to_string()))?;
        if !whole_epoch {
            return Ok(());
        }
        // Shuffle and partition each hold the epoch's ids once.
        check_alloc(ids, 16, "the epoch's sample ids")
    }
}
