//! How many samples each shard of a stream contributes to an epoch (`streaming.base.sampling`).

use crate::shuffle::rng::Pcg64;
use crate::{Error, Result};

/// Per shard, how many samples to draw so that the stream contributes `choose` in total.
///
/// Whole multiples of the stream size scale every shard evenly. Otherwise shards are cut into
/// picks of `granularity` samples, the picks are ordered by
/// `default_rng(seed + epoch if use_epoch else seed).permutation`, and the remainder is taken
/// pick by pick in that order.
///
/// ```
/// use streamx_core::sampling::get_sampling;
/// assert_eq!(get_sampling(&[4, 4, 4], 5, 1, 42, 0, true).unwrap(), [1, 2, 2]);
/// assert_eq!(get_sampling(&[4, 4, 4], 30, 2, 42, 0, true).unwrap(), [8, 12, 10]);
/// ```
pub fn get_sampling(
    samples_per_shard: &[i64],
    choose: i64,
    granularity: i64,
    seed: u64,
    epoch: u64,
    use_epoch: bool,
) -> Result<Vec<i64>> {
    if choose < 0 {
        return Err(Error::InvalidArgument(format!(
            "`choose` must be a non-negative integer, but got: {choose}."
        )));
    }
    if granularity <= 0 {
        return Err(Error::InvalidArgument(format!(
            "`granularity` must be a positive integer, but got: {granularity}."
        )));
    }
    let total: i64 = samples_per_shard.iter().sum();
    // numpy turns the 0 / 0 of an empty stream into zeros (with a RuntimeWarning).
    if total == 0 || choose % total == 0 {
        let scale = |s: i64| {
            (i128::from(s) * i128::from(choose))
                .checked_div(i128::from(total))
                .unwrap_or(0) as i64
        };
        return Ok(samples_per_shard.iter().map(|&s| scale(s)).collect());
    }
    let (pick_shard, pick_size) = picks(samples_per_shard, granularity);
    let epoch_seed = u128::from(seed) + if use_epoch { u128::from(epoch) } else { 0 };
    let order = Pcg64::new(epoch_seed).permutation(pick_shard.len());
    let mut out: Vec<i64> = samples_per_shard
        .iter()
        .map(|&s| s * (choose / total))
        .collect();
    let mut left = choose % total;
    for pick in order {
        let take = left.min(pick_size[pick as usize]);
        out[pick_shard[pick as usize]] += take;
        left -= take;
        if left == 0 {
            break;
        }
    }
    Ok(out)
}

/// The shard and size of every pick, in shard order. Only a shard's last pick can be short.
fn picks(samples_per_shard: &[i64], granularity: i64) -> (Vec<usize>, Vec<i64>) {
    let mut pick_shard = Vec::new();
    let mut pick_size = Vec::new();
    let mut last_pick = Vec::with_capacity(samples_per_shard.len());
    for (shard, &size) in samples_per_shard.iter().enumerate() {
        let count = (size + granularity - 1) / granularity;
        pick_shard.extend(std::iter::repeat_n(shard, count as usize));
        pick_size.extend(std::iter::repeat_n(granularity, count as usize));
        last_pick.push((
            pick_shard.len() as i64 - 1,
            size - (count - 1) * granularity,
        ));
    }
    // streaming writes each shard's last-pick size by fancy indexing with `cumsum - 1`; an empty
    // shard aims at the previous pick (or wraps to the very last) and overwrites it, in order.
    let num = pick_size.len() as i64;
    for (at, size) in last_pick {
        pick_size[at.rem_euclid(num) as usize] = size;
    }
    (pick_shard, pick_size)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn whole_repeats_scale_evenly() {
        assert_eq!(get_sampling(&[3, 5], 16, 1, 0, 0, true).unwrap(), [6, 10]);
    }

    #[test]
    fn rejects_bad_arguments() {
        assert!(get_sampling(&[3], -1, 1, 0, 0, true).is_err());
        assert!(get_sampling(&[3], 1, 0, 0, 0, true).is_err());
    }
}
