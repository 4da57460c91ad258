//! `py2s`: two-level shuffle. Shards and their samples are scattered once per run, then shuffled
//! again per canonical node each epoch.

use super::rng::Pcg64;
use super::spans::{divide_spans, shard_spans, Span};

/// Run-fixed shuffle of shard order and of each shard's samples, then per canonical node an
/// epoch shuffle of its shard pieces followed by each piece's samples.
pub(crate) fn shuffle(sizes: &[i64], num_nodes: usize, seed: u128, epoch_seed: u128) -> Vec<i64> {
    let (mut shards, total) = shard_spans(sizes);
    let mut fixed = Pcg64::new(seed);
    fixed.shuffle(&mut shards);
    // Lay the shards out in their run order; each one's samples shuffled in place.
    let mut laid = Vec::with_capacity(total as usize);
    let mut pieces: Vec<Span> = Vec::with_capacity(shards.len());
    for (begin, end) in shards {
        let at = laid.len();
        laid.extend(begin..end);
        fixed.shuffle(&mut laid[at..]);
        pieces.push((at as i64, laid.len() as i64));
    }
    // Dividing the laid-out ranges is the same walk as dividing the shards: a split shard keeps
    // its first (already shuffled) samples in the earlier node.
    let (mut pieces, groups) = divide_spans(pieces, total, num_nodes);
    let mut epoch_rng = Pcg64::new(epoch_seed);
    let mut out = Vec::with_capacity(total as usize);
    for (a, b) in groups {
        let part = &mut pieces[a..b];
        epoch_rng.shuffle(part);
        for &(begin, end) in part.iter() {
            let at = out.len();
            out.extend_from_slice(&laid[begin as usize..end as usize]);
            epoch_rng.shuffle(&mut out[at..]);
        }
    }
    out
}
