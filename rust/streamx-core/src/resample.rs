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

/// One shuffle unit: a full repeat of a shard, or a sorted random subset of it.
#[derive(Clone, Debug, PartialEq, Eq)]
struct Unit {
    /// First epoch ("big") id of the unit.
    big_start: i64,
    /// Global sample id of the shard's first sample.
    shard_offset: i64,
    /// Offsets within the shard of a partial repeat's samples (sorted); `None` for a full one.
    picked: Option<Vec<i64>>,
}

/// What resampling produces, without materializing the per-sample map: the shuffle units and,
/// per unit, enough to map any epoch id to its underlying sample id. Memory is proportional to
/// the number of units plus the partially repeated samples, not to the epoch.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct ResampledUnits {
    /// The sizes of the pieces the shuffle treats as shards.
    pub shuffle_units: Vec<i64>,
    units: Vec<Unit>,
    total: i64,
}

impl ResampledUnits {
    /// The epoch size.
    pub fn len(&self) -> i64 {
        self.total
    }

    /// Whether the epoch is empty.
    pub fn is_empty(&self) -> bool {
        self.total == 0
    }

    /// The underlying sample id of epoch id `big` (`small_per_big[big]`), or `None` if out of
    /// range.
    pub fn small(&self, big: i64) -> Option<i64> {
        if big < 0 || big >= self.total {
            return None;
        }
        let at = self.units.partition_point(|u| u.big_start <= big) - 1;
        let unit = &self.units[at];
        let within = big - unit.big_start;
        Some(match &unit.picked {
            None => unit.shard_offset + within,
            Some(picked) => unit.shard_offset + picked[within as usize],
        })
    }

    /// Whether `small_per_big` is the identity: every shard taken whole, once, in order (no
    /// resampling), so the map need not be built (800 MB at 10^8 samples) nor looked up.
    pub fn is_identity(&self) -> bool {
        self.units
            .iter()
            .all(|u| u.picked.is_none() && u.big_start == u.shard_offset)
    }

    /// The whole `small_per_big` map.
    pub fn into_resampled(self) -> Resampled {
        let mut small_per_big = Vec::with_capacity(self.total as usize);
        for (unit, &size) in self.units.iter().zip(&self.shuffle_units) {
            match &unit.picked {
                None => small_per_big.extend(unit.shard_offset..unit.shard_offset + size),
                Some(p) => small_per_big.extend(p.iter().map(|&i| unit.shard_offset + i)),
            }
        }
        Resampled {
            shuffle_units: self.shuffle_units,
            small_per_big,
        }
    }
}

/// Resamples the given streams with one generator shared by all of them, in order, exactly as
/// `resample_streams(epoch)` does for all streams or `resample_streams(epoch, stream_id)` for
/// a one-element slice.
pub fn resample_streams(
    streams: &[StreamShards<'_>],
    params: &ResampleParams,
) -> Result<Resampled> {
    Ok(resample_units(streams, params)?.into_resampled())
}

/// [`resample_streams`] as units, without the per-sample map.
pub fn resample_units(
    streams: &[StreamShards<'_>],
    params: &ResampleParams,
) -> Result<ResampledUnits> {
    let seed = u128::from(params.seed);
    let mut rng = match params.sampling_method {
        SamplingMethod::Balanced => Pcg64::new(seed + u128::from(params.epoch)),
        SamplingMethod::Fixed => Pcg64::new(seed),
    };
    let mut out = ResampledUnits::default();
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

/// Appends one shard's units: full repeats in order, then a sorted random subset.
fn resample_shard(
    rng: &mut Pcg64,
    size: i64,
    choose: i64,
    offset: i64,
    out: &mut ResampledUnits,
) -> Result<()> {
    // numpy's integer 0 // 0 is 0, so an empty shard contributes nothing.
    if size <= 0 {
        return Ok(());
    }
    let (repeats, partial) = (choose / size, choose % size);
    for _ in 0..repeats {
        out.push(size, offset, None);
    }
    if partial > 0 {
        let mut picked = rng.choice_noreplace(size as u64, partial as u64)?;
        picked.sort_unstable();
        out.push(partial, offset, Some(picked));
    }
    Ok(())
}

impl ResampledUnits {
    fn push(&mut self, size: i64, shard_offset: i64, picked: Option<Vec<i64>>) {
        self.shuffle_units.push(size);
        self.units.push(Unit {
            big_start: self.total,
            shard_offset,
            picked,
        });
        self.total += size;
    }
}
