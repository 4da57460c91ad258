//! `py1s`: shuffle shard spans per canonical node, then the samples within each span.

use super::spans::NodeSpans;
use super::Parts;

/// Span order shuffled within each canonical node, samples shuffled within each span. Only the
/// `needed` nodes are laid out; the ones before them just advance the generator.
pub(crate) fn shuffle(
    sizes: &[i64],
    num_nodes: usize,
    seed: u128,
    epoch_seed: u128,
    needed: &[bool],
) -> Parts {
    let NodeSpans {
        spans,
        groups,
        mut epoch_rng,
        ..
    } = NodeSpans::new(sizes, num_nodes, seed, epoch_seed);
    // Nodes after the last needed one draw nothing anyone reads.
    let last = needed.iter().rposition(|&n| n).map_or(0, |k| k + 1);
    let mut parts = Vec::with_capacity(groups.len());
    for (&(a, b), &need) in groups[..last].iter().zip(needed) {
        let node = &spans[a..b];
        if !need {
            for &(begin, end) in node {
                epoch_rng.skip_shuffle((end - begin) as usize);
            }
            parts.push(None);
            continue;
        }
        let mut ids = Vec::with_capacity(node.iter().map(|&(b, e)| (e - b) as usize).sum());
        for &(begin, end) in node {
            let at = ids.len();
            ids.extend(begin..end);
            epoch_rng.shuffle(&mut ids[at..]);
        }
        parts.push(Some(ids));
    }
    parts.resize(groups.len(), None);
    parts
}
