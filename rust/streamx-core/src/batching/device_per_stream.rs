//! `device_per_stream` batching: every device batch holds samples of a single stream, and each
//! physical node draws only from its own canonical nodes.

use super::{count_full, finish, interleave_by_origin, misaligned_log, stream_partition};
use crate::epoch_config::EpochConfig;
use crate::partition::Partition;
use crate::shuffle::rng::Pcg64;
use crate::warning::{Warning, Warnings};
use crate::{Error, Result};

/// The whole epoch.
pub(crate) fn generate(cfg: &EpochConfig, warnings: &mut Warnings) -> Result<Partition> {
    let (ncn, nodes, bs) = (cfg.num_canonical_nodes, cfg.world.num_nodes, cfg.batch_size);
    if ncn % nodes != 0 {
        return Err(Error::InvalidArgument(format!(
            "For `device_per_stream` batching, num_canonical_nodes must be divisible by physical \
             nodes. Got {ncn} canonical nodes and {nodes} physical nodes."
        )));
    }
    let mut partitions = Vec::with_capacity(cfg.streams.len());
    for stream_id in 0..cfg.streams.len() {
        // One "physical" node per canonical node and batch 1, so the order is world-independent.
        partitions.push(stream_partition(cfg, stream_id, ncn, 1, warnings)?);
    }
    let per_node = ncn / nodes;
    let mut node_batches = Vec::with_capacity(nodes);
    for node in 0..nodes {
        let range = node * per_node..(node + 1) * per_node;
        let mut streams = Vec::with_capacity(partitions.len());
        for (stream_id, partition) in partitions.iter().enumerate() {
            streams.push(device_batches(
                partition,
                range.clone(),
                bs,
                stream_id,
                warnings,
            )?);
        }
        node_batches.push(streams);
    }
    let batches = interleave_nodes(cfg, &node_batches);
    let global = cfg.global_batch_size();
    finish(
        batches,
        cfg,
        misaligned_log("device_per_stream", global),
        warnings,
    )
}

/// One stream's full device batches on one node, in traversal order. The sequence is always
/// padded by 1..=bs slots, so a trailing batch of only padding is possible and dropped.
fn device_batches(
    partition: &Partition,
    nodes: std::ops::Range<usize>,
    bs: usize,
    stream_id: usize,
    warnings: &mut Warnings,
) -> Result<Vec<i64>> {
    let mut seq = partition.traversal_of_nodes(nodes);
    seq.resize(seq.len() + bs - seq.len() % bs, -1);
    let full = count_full(&seq, bs);
    if full * bs != seq.len() {
        warnings.push(Warning::log(format!(
            "Because of the `device_per_stream` batching method, some batches with an inadequate \
             number of samples from stream with index {stream_id} will be dropped."
        )));
    }
    if full == 0 {
        return Err(Error::InvalidArgument(format!(
            "Stream with index {stream_id} does not have an adequate number of samples to \
             construct even a single device batch of size {bs}. Training will occur without any \
             samples from this stream!"
        )));
    }
    seq.truncate(full * bs);
    Ok(seq)
}

/// Shuffles each node's stream origins (one generator across nodes), pads every node to a common
/// device batch count (always adding at least one round of padding, as streaming does), then
/// interleaves the nodes' device batches into global order.
fn interleave_nodes(cfg: &EpochConfig, node_batches: &[Vec<Vec<i64>>]) -> Vec<i64> {
    let bs = cfg.batch_size;
    let devices = cfg.world.num_nodes * cfg.world.ranks_per_node;
    let most = node_batches
        .iter()
        .map(|streams| streams.iter().map(Vec::len).sum::<usize>() / bs)
        .max()
        .unwrap_or(0);
    let per_node = most + devices - most % devices;
    let mut rng = Pcg64::new(cfg.origin_seed());
    let mut ordered = Vec::with_capacity(node_batches.len());
    for streams in node_batches {
        let mut seq = interleave_by_origin(streams, bs, &mut rng);
        seq.resize(per_node * bs, -1);
        ordered.push(seq);
    }
    let mut out = Vec::with_capacity(per_node * bs * ordered.len());
    for k in 0..per_node {
        for seq in &ordered {
            out.extend_from_slice(&seq[k * bs..(k + 1) * bs]);
        }
    }
    out
}
