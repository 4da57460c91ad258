//! `py2s`: two-level shuffle. Shards and their samples are scattered once per run, then shuffled
//! again per canonical node each epoch.

use super::rng::Pcg64;
use super::spans::{divide_spans, node_bounds, shard_spans, Span};
use super::{Parts, Picker, Want};

/// Run-fixed shuffle of shard order and of each shard's samples, then per canonical node an
/// epoch shuffle of its shard pieces followed by each piece's samples. Only the wanted nodes
/// (and the shards they draw from) are laid out, and only their pieces holding wanted
/// positions are shuffled.
pub(crate) fn shuffle(
    sizes: &[i64],
    num_nodes: usize,
    seed: u128,
    epoch_seed: u128,
    wants: &[Want<'_>],
) -> Parts {
    let needed: Vec<bool> = wants.iter().map(|w| !matches!(w, Want::Skip)).collect();
    let (mut shards, total) = shard_spans(sizes);
    let mut fixed = Pcg64::new(seed);
    fixed.shuffle(&mut shards);
    let bounds = node_bounds(total, num_nodes);
    let laid = lay_out(&shards, &mut fixed, &bounds, &needed);
    // The shards laid out in run order, as ranges of that layout. Dividing them is the same walk
    // as dividing the shards: a split shard keeps its first (already shuffled) samples in the
    // earlier node, so node k's pieces cover exactly the layout's `bounds[k]..bounds[k + 1]`.
    let mut at = 0;
    let pieces: Vec<Span> = shards
        .iter()
        .map(|&(b, e)| {
            at += e - b;
            (at - (e - b), at)
        })
        .collect();
    let (mut pieces, groups) = divide_spans(pieces, total, num_nodes);
    let mut epoch_rng = Pcg64::new(epoch_seed);
    let mut parts = Vec::with_capacity(groups.len());
    let mut buf = Vec::new();
    for (node, &(a, b)) in groups[..Want::end(wants)].iter().enumerate() {
        let node_pieces = &mut pieces[a..b];
        epoch_rng.shuffle(node_pieces);
        let (want, base) = (wants[node], bounds[node]);
        let mut pick = Picker::new(want);
        let mut offset = 0;
        for &(begin, end) in node_pieces.iter() {
            let len = (end - begin) as usize;
            match &laid[node] {
                Some(src) if want.any_in(offset, offset + len) => {
                    buf.clear();
                    buf.extend_from_slice(&src[(begin - base) as usize..(end - base) as usize]);
                    epoch_rng.shuffle(&mut buf);
                    pick.take(offset, &buf);
                }
                _ => epoch_rng.skip_shuffle(len),
            }
            offset += len;
        }
        parts.push(laid[node].is_some().then(|| pick.finish()));
    }
    parts.resize(groups.len(), None);
    parts
}

/// The run-order layout of every shard's run-shuffled samples, kept only over the needed
/// nodes' ranges (`bounds[k]..bounds[k + 1]`); shards outside them only advance `rng`.
fn lay_out(
    shards: &[Span],
    rng: &mut Pcg64,
    bounds: &[i64],
    needed: &[bool],
) -> Vec<Option<Vec<i64>>> {
    let mut laid: Vec<Option<Vec<i64>>> = needed
        .iter()
        .enumerate()
        .map(|(k, &n)| n.then(|| Vec::with_capacity((bounds[k + 1] - bounds[k]) as usize)))
        .collect();
    // Shards laid out past the last needed node's range are never read.
    let last = needed.iter().rposition(|&n| n).map_or(0, |k| bounds[k + 1]);
    let mut at = 0_i64;
    let mut samples = Vec::new();
    for &(begin, end) in shards {
        if at >= last {
            break;
        }
        let (lo, hi) = (at, at + end - begin);
        at = hi;
        // Nodes whose range overlaps this shard's place in the layout.
        let first = bounds.partition_point(|&b| b <= lo).saturating_sub(1);
        let wanted = (first..needed.len())
            .take_while(|&k| bounds[k] < hi)
            .any(|k| needed[k] && bounds[k + 1] > lo);
        if !wanted {
            rng.skip_shuffle((end - begin) as usize);
            continue;
        }
        samples.clear();
        samples.extend(begin..end);
        rng.shuffle(&mut samples);
        for k in (first..needed.len()).take_while(|&k| bounds[k] < hi) {
            if let Some(part) = laid[k].as_mut() {
                let from = bounds[k].max(lo) - lo;
                let to = bounds[k + 1].min(hi) - lo;
                if from < to {
                    part.extend_from_slice(&samples[from as usize..to as usize]);
                }
            }
        }
    }
    laid
}
