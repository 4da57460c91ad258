//! `py1s`: shuffle shard spans per canonical node, then the samples within each span.

use super::spans::NodeSpans;
use super::{Parts, Picker, Want};

/// Span order shuffled within each canonical node, samples shuffled within each span. Only the
/// spans holding wanted positions are laid out; the rest, and skipped nodes before the last
/// wanted one, just advance the generator.
pub(crate) fn shuffle(
    sizes: &[i64],
    num_nodes: usize,
    seed: u128,
    epoch_seed: u128,
    wants: &[Want<'_>],
) -> Parts {
    let NodeSpans {
        spans,
        groups,
        mut epoch_rng,
        ..
    } = NodeSpans::new(sizes, num_nodes, seed, epoch_seed);
    let mut parts = Vec::with_capacity(groups.len());
    let mut buf = Vec::new();
    for (&(a, b), &want) in groups[..Want::end(wants)].iter().zip(wants) {
        let mut pick = Picker::new(want);
        let mut offset = 0;
        for &(begin, end) in &spans[a..b] {
            let len = (end - begin) as usize;
            if want.any_in(offset, offset + len) {
                buf.clear();
                buf.extend(begin..end);
                epoch_rng.shuffle(&mut buf);
                pick.take(offset, &buf);
            } else {
                epoch_rng.skip_shuffle(len);
            }
            offset += len;
        }
        parts.push((!matches!(want, Want::Skip)).then(|| pick.finish()));
    }
    parts.resize(groups.len(), None);
    parts
}
