//! `per_stream` batching: each global batch is drawn from a single stream; the order of
//! streams over batches is shuffled while each stream keeps its own batch order.

use super::{count_full, finish, interleave_by_origin, misaligned_log, stream_partition};
use crate::epoch_config::EpochConfig;
use crate::partition::Partition;
use crate::shuffle::rng::Pcg64;
use crate::warning::{Warning, Warnings};
use crate::{Error, Result};

/// The whole epoch.
pub(crate) fn generate(cfg: &EpochConfig, warnings: &mut Warnings) -> Result<Partition> {
    let global = cfg.global_batch_size();
    let mut partitions = Vec::with_capacity(cfg.streams.len());
    for stream_id in 0..cfg.streams.len() {
        let nodes = cfg.world.num_nodes;
        partitions.push(stream_partition(
            cfg,
            stream_id,
            nodes,
            cfg.batch_size,
            warnings,
        )?);
    }
    let mut per_stream = Vec::with_capacity(partitions.len());
    for (stream_id, partition) in partitions.iter().enumerate() {
        let mut rows = partition.traversal();
        let full = count_full(&rows, global);
        if full * global != rows.len() {
            warnings.push(Warning::log(format!(
                "Because of the `per_stream` batching method, some batches with an inadequate \
                 number of samples from stream with index {stream_id} will be dropped."
            )));
        }
        if full == 0 {
            return Err(Error::InvalidArgument(format!(
                "Stream with index {stream_id} does not have an adequate number of samples to \
                 construct a complete global batch. Training will occur without any samples \
                 from this stream."
            )));
        }
        rows.truncate(full * global);
        per_stream.push(rows);
    }
    let mut rng = Pcg64::new(cfg.origin_seed());
    let batches = interleave_by_origin(&per_stream, global, &mut rng);
    finish(batches, cfg, misaligned_log("per_stream", global), warnings)
}
