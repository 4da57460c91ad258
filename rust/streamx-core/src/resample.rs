//! Stream up/down-sampling for one epoch (`StreamingDataset.resample_streams`): which
//! underlying samples make up the epoch, and in what shuffle units.

use std::fmt;
use std::str::FromStr;

use crate::sampling::get_sampling;
use crate::shuffle::rng::Pcg64;
use crate::{Error, Result};

/// How the partial-repeat samples are picked across epochs.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub enum SamplingMethod {
    /// A fresh pick every epoch (`default_rng(seed + epoch)`).
    #[default]
    Balanced,
    /// The same pick every epoch (`default_rng(seed)`).
    Fixed,
}

impl FromStr for SamplingMethod {
    type Err = Error;

    fn from_str(name: &str) -> Result<Self> {
        match name {
            "balanced" => Ok(SamplingMethod::Balanced),
            "fixed" => Ok(SamplingMethod::Fixed),
            _ => Err(Error::InvalidArgument(format!(
                "Invalid sampling method: {name}. Must be one of `balanced` or `fixed`."
            ))),
        }
    }
}

impl fmt::Display for SamplingMethod {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            SamplingMethod::Balanced => "balanced",
            SamplingMethod::Fixed => "fixed",
        })
    }
}

/// One stream as resampling sees it.
#[derive(Clone, Debug, PartialEq)]
pub struct StreamShards<'a> {
    /// Sample count of each of the stream's shards.
    pub samples_per_shard: &'a [i64],
    /// Global sample id of the stream's first sample (shards of all streams are concatenated).
    pub sample_offset: i64,
    /// How many samples the stream contributes per epoch (`Stream.choose`).
    pub choose: i64,
}

/// The seeds and knobs of one resampling call.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ResampleParams {
    /// The dataset's `shuffle_seed`.
    pub seed: u64,
    /// The epoch being resampled.
    pub epoch: u64,
    /// `balanced` or `fixed`.
    pub sampling_method: SamplingMethod,
    /// `sampling_granularity` (positive).
    pub granularity: i64,
    /// streaming's `epoch_seed_change` (`shuffle and sampling_method == 'balanced'`), which
    /// decides whether `get_sampling` reseeds per epoch.
    pub epoch_seed_change: bool,
}

/// What resampling produces.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Resampled {
    /// The sizes of the pieces the shuffle treats as shards: per shard, one unit per full
    /// repeat plus one for a partial repeat.
    pub shuffle_units: Vec<i64>,
    /// For each epoch ("big") sample id, the underlying ("small") global sample id.
    pub small_per_big: Vec<i64>,
}

/// Resamples the given streams with one generator shared by all of them, in order, exactly as
/// `resample_streams(epoch)` does for all streams or `resample_streams(epoch, stream_id)` for
/// a one-element slice.
pub fn resample_streams(
    streams: &[StreamShards<'_>],
    params: &ResampleParams,
) -> Result<Resampled> {
    let seed = u128::from(params.seed);
    let mut rng = match params.sampling_method {
        SamplingMethod::Balanced => Pcg64::new(seed + u128::from(params.epoch)),
        SamplingMethod::Fixed => Pcg64::new(seed),
    };
    let mut out = Resampled::default();
    for stream in streams {
        let choose_per_shard = get_sampling(
            stream.samples_per_shard,
            stream.choose,
            params.granularity,
            params.seed,
            params.epoch,
            params.epoch_seed_change,
        )?;
        let mut offset = stream.sample_offset;
        for (&size, &choose) in stream.samples_per_shard.iter().zip(&choose_per_shard) {
            resample_shard(&mut rng, size, choose, offset, &mut out)?;
            offset += size;
        }
    }
    Ok(out)
}

/// Appends one shard's units and ids: full repeats in order, then a sorted random subset.
fn resample_shard(
    rng: &mut Pcg64,
    size: i64,
    choose: i64,
    offset: i64,
    out: &mut Resampled,
) -> Result<()> {
    // numpy's integer 0 // 0 is 0, so an empty shard contributes nothing.
    if size <= 0 {
        return Ok(());
    }
    let (repeats, partial) = (choose / size, choose % size);
    for _ in 0..repeats {
        out.shuffle_units.push(size);
        out.small_per_big.extend(offset..offset + size);
    }
    if partial > 0 {
        out.shuffle_units.push(partial);
        let mut picked = rng.choice_noreplace(size as u64, partial as u64)?;
        picked.sort_unstable();
        out.small_per_big
            .extend(picked.into_iter().map(|i| offset + i));
    }
    Ok(())
}
