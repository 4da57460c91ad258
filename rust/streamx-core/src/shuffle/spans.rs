//! Shard spans and their division among canonical nodes, shared by py1s, py1br, py1e and py2s.

use super::rng::Pcg64;

/// A half-open range of sample ids, `(begin, end)`.
pub(crate) type Span = (i64, i64);

/// The consecutive spans of shards with the given sizes, and the total sample count.
pub(crate) fn shard_spans(sizes: &[i64]) -> (Vec<Span>, i64) {
    let mut total = 0;
    let spans = sizes
        .iter()
        .map(|&size| {
            let span = (total, total + size);
            total += size;
            span
        })
        .collect();
    (spans, total)
}

/// Cuts the span sequence into `parts` contiguous groups holding `total * (k + 1) / parts`
/// samples cumulatively. A span crossing a boundary is split and its head stays in the earlier
/// group. Returns the new spans and, per group, the `(first, last exclusive)` span indices.
pub(crate) fn divide_spans(
    mut spans: Vec<Span>,
    total: i64,
    parts: usize,
) -> (Vec<Span>, Vec<(usize, usize)>) {
    let mut out = Vec::with_capacity(spans.len() + parts);
    let mut groups = Vec::with_capacity(parts);
    let (mut idx, mut so_far, mut group_begin) = (0, 0_i64, 0);
    for part in 0..parts {
        let part_end = (i128::from(total) * (part as i128 + 1) / parts as i128) as i64;
        while idx < spans.len() {
            let (begin, end) = spans[idx];
            if part_end < so_far + (end - begin) {
                if so_far < part_end {
                    let cut = part_end - so_far;
                    out.push((begin, begin + cut));
                    spans[idx] = (begin + cut, end);
                    so_far += cut;
                }
                break;
            }
            out.push((begin, end));
            idx += 1;
            so_far += end - begin;
        }
        groups.push((group_begin, out.len()));
        group_begin = out.len();
    }
    (out, groups)
}

/// Where each canonical node's samples start in the shuffled order, plus the total at the end:
/// node `k` holds positions `total * k / parts .. total * (k + 1) / parts` (see
/// [`divide_spans`]).
pub(crate) fn node_bounds(total: i64, parts: usize) -> Vec<i64> {
    (0..=parts)
        .map(|k| (i128::from(total) * k as i128 / parts as i128) as i64)
        .collect()
}

/// The span layout common to py1s, py1br and py1e: shard spans shuffled once per run, divided
/// among canonical nodes, then shuffled within each node for this epoch.
pub(crate) struct NodeSpans {
    /// Spans, grouped by canonical node.
    pub spans: Vec<Span>,
    /// Per canonical node, its range of indices into `spans`.
    pub groups: Vec<(usize, usize)>,
    /// Total number of samples.
    pub total: i64,
    /// The epoch generator, positioned after the per-node span shuffles.
    pub epoch_rng: Pcg64,
}

impl NodeSpans {
    pub(crate) fn new(sizes: &[i64], num_nodes: usize, seed: u128, epoch_seed: u128) -> Self {
        let (mut spans, total) = shard_spans(sizes);
        Pcg64::new(seed).shuffle(&mut spans);
        let (mut spans, groups) = divide_spans(spans, total, num_nodes);
        let mut epoch_rng = Pcg64::new(epoch_seed);
        for &(a, b) in &groups {
            epoch_rng.shuffle(&mut spans[a..b]);
        }
        NodeSpans {
            spans,
            groups,
            total,
            epoch_rng,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn divide_splits_crossing_span() {
        let (spans, groups) = divide_spans(vec![(0, 3), (3, 8), (8, 12)], 12, 2);
        assert_eq!(spans, [(0, 3), (3, 6), (6, 8), (8, 12)]);
        assert_eq!(groups, [(0, 2), (2, 4)]);
    }
}
