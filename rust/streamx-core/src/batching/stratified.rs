//! `stratified` batching: every global batch holds a fixed number of samples from each stream,
//! proportional to the stream's share of the epoch.

use super::{count_full, finish, stream_partition};
use crate::epoch_config::EpochConfig;
use crate::partition::Partition;
use crate::warning::{Warning, Warnings};
use crate::{Error, Result};

/// The whole epoch.
pub(crate) fn generate(cfg: &EpochConfig, warnings: &mut Warnings) -> Result<Partition> {
    let global = cfg.global_batch_size();
    let mut sequences = Vec::with_capacity(cfg.streams.len());
    for stream_id in 0..cfg.streams.len() {
        // One node and batch 1, so a stream's order does not depend on the world's shape.
        sequences.push(stream_partition(cfg, stream_id, 1, 1, warnings)?.traversal());
    }
    let shares = batch_shares(cfg, global)?;
    let mut rows_per_stream = Vec::with_capacity(sequences.len());
    let mut min_rows = usize::MAX;
    for (stream_id, (mut seq, &share)) in sequences.into_iter().zip(&shares).enumerate() {
        seq.resize(seq.len().div_ceil(share) * share, -1);
        let full = count_full(&seq, share);
        if full * share != seq.len() {
            warnings.push(Warning::log(format!(
                "Because of the `stratified` batching method, some batches with an inadequate \
                 number of samples from stream with index {stream_id} are being dropped."
            )));
        }
        min_rows = min_rows.min(full);
        rows_per_stream.push(seq);
    }
    let mut batches = Vec::with_capacity(min_rows * global);
    for row in 0..min_rows {
        for (seq, &share) in rows_per_stream.iter().zip(&shares) {
            batches.extend_from_slice(&seq[row * share..(row + 1) * share]);
        }
    }
    let misaligned = Warning::user(format!(
        "Because of the `stratified` batching method, resumption may only occur on a sample that \
         is a multiple of the current global batch size of {global}. Resuming training after the \
         most recently finished global batch. Set {global} to the original value for \
         deterministic resumption."
    ));
    finish(batches, cfg, misaligned, warnings)
}

/// Each stream's slots per global batch: `int(proportion * global)`, with the shortfall given to
/// the streams with the largest fractional parts (ties: the higher stream index first, as a
/// stable ascending argsort reversed gives).
fn batch_shares(cfg: &EpochConfig, global: usize) -> Result<Vec<usize>> {
    let g = global as f64;
    let mut shares: Vec<i64> = cfg
        .streams
        .iter()
        .map(|s| (s.proportion * g) as i64)
        .collect();
    let missing = global as i64 - shares.iter().sum::<i64>();
    if missing != 0 {
        let leftover: Vec<f64> = cfg
            .streams
            .iter()
            .zip(&shares)
            .map(|(s, &share)| g * s.proportion - share as f64)
            .collect();
        let mut order: Vec<usize> = (0..shares.len()).collect();
        order.sort_by(|&a, &b| leftover[a].total_cmp(&leftover[b]));
        order.reverse();
        // Python's `[:missing]`, negative counts included.
        let n = order.len() as i64;
        let take = if missing >= 0 {
            missing.min(n)
        } else {
            (n + missing).max(0)
        };
        for &i in &order[..take as usize] {
            shares[i] += 1;
        }
    }
    for (stream_id, &share) in shares.iter().enumerate() {
        if share <= 0 {
            return Err(Error::InvalidArgument(format!(
                "Number of samples for stream {stream_id} is {share} because the portion of this \
                 stream in the global batch, which is of size {global}, is too low. Please \
                 increase the global batch size or increase the proportion of total samples that \
                 come from stream {stream_id}."
            )));
        }
    }
    if shares.iter().sum::<i64>() != global as i64 {
        return Err(Error::InvalidArgument(format!(
            "Stream proportions give per-batch shares {shares:?} that do not add up to the \
             global batch size {global}."
        )));
    }
    Ok(shares.into_iter().map(|s| s as usize).collect())
}
