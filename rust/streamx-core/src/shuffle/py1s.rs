//! `py1s`: shuffle shard spans per canonical node, then the samples within each span.

use super::spans::NodeSpans;

/// Span order shuffled within each canonical node, samples shuffled within each span.
pub(crate) fn shuffle(sizes: &[i64], num_nodes: usize, seed: u128, epoch_seed: u128) -> Vec<i64> {
    let NodeSpans {
        spans,
        total,
        mut epoch_rng,
        ..
    } = NodeSpans::new(sizes, num_nodes, seed, epoch_seed);
    let mut ids = Vec::with_capacity(total as usize);
    for (begin, end) in spans {
        let at = ids.len();
        ids.extend(begin..end);
        epoch_rng.shuffle(&mut ids[at..]);
    }
    ids
}
