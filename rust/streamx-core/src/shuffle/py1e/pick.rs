//! A piece's ranks of one node from its kept draws: the jittered positions decide which node
//! indices sit at the wanted ranks, and only the spans holding those indices have their
//! shuffles redrawn.
//!
//! A sample's position is its node index plus a shift drawn for that index of its span,
//! whatever sample the shuffle put there: the shuffle only decides which sample id an index
//! holds. With `low <= 0 <= high` the node's extreme shifts, every index below `p0 - high`
//! has a position before `p0`, and every index from `p1 - low` on one at or after `p1`. One
//! pass over the indices between (drawing only their shifts) thus counts the samples before
//! `p0` and collects those in `p0..p1`; sorted by (position, index) after the count, they
//! hold every wanted rank once the count before `p0` is at most the first wanted rank and the
//! count before `p1` exceeds the last. The indices passed over span the ranks plus one
//! margin, where laying out every position a rank could take ([`super::window`]) spans two.
//! `p0..p1` starts a little outside the ranks and widens until it holds them.

use std::ops::Range;

use super::found::{Found, LANE};
use super::node_draws::NodeDraws;
use super::rank::pick_in_window;
use super::window::shuffled_part;
use crate::limits::probe_alloc;
use crate::shuffle::spans::Span;
use crate::{Error, Result};

/// Positions first tried on each side of the wanted ranks, at least. The count of samples
/// before a position strays from it by the imbalance of the shifts around it, more near a
/// node's ends; the bounds widen where that is not enough.
const SLACK: usize = 1 << 12;

/// The offsets `0..LANE` as floats: a position is `(first index + offset) + shift`, the same
/// double as the index converted on its own (every index is exact below 2^53).
const OFFSETS: [f64; LANE] = {
    let mut offsets = [0.0; LANE];
    let mut k = 0;
    while k < LANE {
        offsets[k] = k as f64;
        k += 1;
    }
    offsets
};

impl Found {
    /// Counts the positions `i + d[j]` of indices `i + j` before `p0`, and keeps those in
    /// `p0..p1`.
    fn add_shifted(&mut self, i: usize, d: &[f64], p0: f64, p1: f64) {
        #[cfg(streamx_ifma)]
        if super::pick_wide::available() {
            for (k, d) in (0..).zip(d.chunks(LANE)) {
                self.add_shifted_wide(i + k * LANE, d, p0, p1);
            }
            return;
        }
        self.add_scalar(i, d, p0, p1);
    }

    /// [`Found::add_shifted`] one index at a time.
    pub(super) fn add_scalar(&mut self, i: usize, d: &[f64], p0: f64, p1: f64) {
        let mut at = i;
        for d in d.chunks(LANE) {
            let base = at as f64;
            let mut kept_indices = [0_i64; LANE];
            let mut kept_positions = [0.0; LANE];
            let (mut before, mut kept) = (0, 0);
            for ((k, &offset), &d) in (0..).zip(&OFFSETS).zip(d) {
                let p = (base + offset) + d;
                before += usize::from(p < p0);
                // Written in every case, kept only when in the bounds: no branch to mispredict.
                kept_indices[kept] = (at + k) as i64;
                kept_positions[kept] = p;
                kept += usize::from(p >= p0 && p < p1);
            }
            self.before += before;
            self.indices.extend_from_slice(&kept_indices[..kept]);
            self.positions.extend_from_slice(&kept_positions[..kept]);
            at += d.len();
        }
    }
}

/// Spans a piece needs whose draws a node seeded from a resume's marks does not keep yet.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Missing {
    /// A span before the mark: only a count of the node gives it.
    Before,
    /// Spans up to (not including) this one: drawn on from the last one kept.
    Through(usize),
}

/// The node's order at the sorted, unique, non-empty `ranks`, from its kept draws.
/// The sorted `ranks` in runs, each within `spread` of its first rank, so that one pick's
/// window of positions stays bounded.
pub(super) fn rank_runs(ranks: &[usize], spread: usize) -> impl Iterator<Item = &[usize]> {
    let mut rest = ranks;
    std::iter::from_fn(move || {
        let limit = rest.first()?.saturating_add(spread.max(1));
        let (run, after) = rest.split_at(rest.partition_point(|&r| r < limit));
        rest = after;
        Some(run)
    })
}

pub(super) fn pick_ranks(draws: &NodeDraws, node: &[Span], ranks: &[usize]) -> Result<Vec<i64>> {
    pick_with(draws, node, ranks, slack(draws))
}

/// [`pick_ranks`] for a node that may not keep every span's draws: which it lacks, if any.
pub(super) fn try_pick_ranks(
    draws: &NodeDraws,
    node: &[Span],
    ranks: &[usize],
) -> Result<std::result::Result<Vec<i64>, Missing>> {
    try_pick(draws, node, ranks, slack(draws))
}

/// The bounds' first distance from the ranks: the count before a position strays from it by
/// some 10 times the root of the margin.
pub(super) fn slack(draws: &NodeDraws) -> usize {
    let slack = ((draws.margin as f64).sqrt() * 48.0) as usize;
    slack.max(SLACK)
}

/// [`pick_ranks`], the bounds first tried `slack` positions outside the ranks.
pub(super) fn pick_with(
    draws: &NodeDraws,
    node: &[Span],
    ranks: &[usize],
    slack: usize,
) -> Result<Vec<i64>> {
    try_pick(draws, node, ranks, slack)?.map_err(|missing| {
        Error::InvalidValue(format!("py1e: a counted node lacks the draws {missing:?}"))
    })
}

/// [`pick_with`], or the spans it needs that `draws` lacks.
fn try_pick(
    draws: &NodeDraws,
    node: &[Span],
    ranks: &[usize],
    slack: usize,
) -> Result<std::result::Result<Vec<i64>, Missing>> {
    let (first, last) = (ranks[0], ranks[ranks.len() - 1]);
    let mut grow = slack;
    let mut bounds = first.saturating_sub(grow)..last.saturating_add(1 + grow);
    loop {
        let found = match collect(draws, &bounds)? {
            Ok(found) => found,
            Err(missing) => return Ok(Err(missing)),
        };
        let after = found.before + found.indices.len();
        if found.before <= first && after > last {
            let indices = pick_in_window(&found.indices, &found.positions, found.before, ranks);
            return Ok(Ok(sample_ids(draws, node, &indices)));
        }
        // Every position lies in `0..total`, so these bounds hold every rank: not reached.
        if bounds.start == 0 && bounds.end > draws.total {
            return Err(Error::InvalidValue(format!(
                "py1e: positions {bounds:?} of a canonical node of {} samples hold its ranks \
                 {}..{after}, not {first}..={last}",
                draws.total, found.before
            )));
        }
        grow = grow.saturating_mul(2);
        if found.before > first {
            bounds.start = bounds.start.saturating_sub(found.before - first + grow);
        }
        if after <= last {
            let end = bounds.end.saturating_add(last + 1 - after + grow);
            bounds.end = end.min(draws.total + 1);
        }
    }
}

/// One pass over the node indices whose positions may lie before `bounds.end`.
fn collect(
    draws: &NodeDraws,
    bounds: &Range<usize>,
) -> Result<std::result::Result<Found, Missing>> {
    let (low, high) = draws.reach;
    let (p0, p1) = (bounds.start as f64, bounds.end as f64);
    // Two beyond the bounds the shifts allow: a rounded position strays by far less than one.
    let start = ((p0 - high).floor() - 2.0).max(0.0) as usize;
    let end = (((p1 - low).ceil() + 2.0) as usize).min(draws.total);
    let expect = bounds.len().min(end.saturating_sub(start));
    probe_alloc(
        (expect as u64).saturating_mul(40),
        "the shuffle positions of a piece of the epoch",
    )?;
    let mut found = Found {
        before: start,
        indices: Vec::with_capacity(expect + expect / 8),
        positions: Vec::with_capacity(expect + expect / 8),
    };
    let mut k = draws
        .starts
        .partition_point(|&s| s <= start)
        .saturating_sub(1);
    let known = draws.known();
    if k < known.start {
        return Ok(Err(Missing::Before));
    }
    while k < draws.sizes.len() && draws.starts[k] < end {
        if k >= known.end {
            let through = draws.starts.partition_point(|&s| s < end);
            return Ok(Err(Missing::Through(through)));
        }
        let at = draws.starts[k];
        let part = start.max(at)..end.min(at + draws.sizes[k]);
        let shifts = draws.shifts_at(k);
        k += 1;
        if part.is_empty() || at as f64 + shifts.low - 2.0 >= p1 {
            continue; // the span's positions all lie at or after `p1`
        }
        if (at + draws.sizes[k - 1]) as f64 + shifts.high + 2.0 <= p0 {
            found.before += part.len(); // ... or all before `p0`: no draw decides that
        } else if shifts.is_zero() {
            // `uniform(0, 0)` is exactly zero: each position is its index, and no draw is made.
            found.before += bounds.start.clamp(part.start, part.end) - part.start;
            for i in part.start.max(bounds.start)..part.end.min(bounds.end) {
                found.indices.push(i as i64);
                found.positions.push(i as f64);
            }
        } else {
            let mut rng = shifts.draws().clone();
            rng.skip_uniform(part.start - at);
            let mut i = part.start;
            rng.uniform_chunks(shifts.low, shifts.high, part.len(), |d| {
                found.add_shifted(i, d, p0, p1);
                i += d.len();
            });
        }
    }
    Ok(Ok(found))
}

/// The sample ids at the node `indices`: each span holding some redraws its shuffle down to
/// the lowest of them, and no further.
fn sample_ids(draws: &NodeDraws, node: &[Span], indices: &[i64]) -> Vec<i64> {
    let mut order: Vec<(usize, usize)> =
        (0..).zip(indices).map(|(s, &i)| (i as usize, s)).collect();
    order.sort_unstable();
    let mut out = vec![0; indices.len()];
    let mut offsets: Vec<u32> = Vec::new();
    let mut wide = Vec::new();
    let mut from = 0;
    while from < order.len() {
        let k = draws.starts.partition_point(|&s| s <= order[from].0) - 1;
        let (at, size, begin) = (draws.starts[k], draws.sizes[k], node[k].0);
        let to = from + order[from..].partition_point(|&(i, _)| i < at + size);
        let (lo, hi) = (order[from].0 - at, order[to - 1].0 - at + 1);
        let swaps = draws.shuffle_at(k).clone().into_swaps(size, lo);
        if let Ok(size) = u32::try_from(size) {
            // Offsets into the span: half the memory traffic of sample ids.
            offsets.clear();
            offsets.extend(0..size);
            swaps.apply(&mut offsets, lo);
            for &(i, slot) in &order[from..to] {
                out[slot] = begin + i64::from(offsets[i - at]);
            }
        } else {
            wide.clear();
            shuffled_part(&swaps, begin, size, lo..hi, &mut wide);
            for &(i, slot) in &order[from..to] {
                out[slot] = wide[i - at - lo];
            }
        }
        from = to;
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::shuffle::rng::Pcg64;

    /// The lane-wise count and gather equal one comparison per index, across lane edges and
    /// with positions right at the bounds.
    #[test]
    fn add_shifted_counts_and_keeps_as_one_index_at_a_time() {
        let mut rng = Pcg64::new(7);
        for len in [0, 1, 2, 255, 256, 257, 511, 513, 1000] {
            let mut d = rng.uniform(-300.0, 300.0, len);
            if len > 3 {
                d[1] = 100.0 - 1.0; // index 1 lands on p0 exactly
                d[2] = 400.0 - 2.0; // index 2 on p1
            }
            for (i, p0, p1) in [(0, 100.0, 400.0), (5, 0.0, 1e9), (1 << 40, 0.0, 0.0)] {
                let (p0, p1) = (i as f64 + p0, i as f64 + p1);
                let mut want = (0, Vec::new(), Vec::new());
                for (j, &d) in (i..).zip(&d) {
                    let p = j as f64 + d;
                    want.0 += usize::from(p < p0);
                    if p >= p0 && p < p1 {
                        want.1.push(j as i64);
                        want.2.push(p);
                    }
                }
                let mut found = Found {
                    before: 0,
                    indices: Vec::new(),
                    positions: Vec::new(),
                };
                // Handed over in uneven slices, as a pass's chunks may come; the vector
                // path (where the CPU has it) and the scalar one.
                let (head, tail) = d.split_at(len.min(300));
                let mut scalar = Found {
                    before: 0,
                    indices: Vec::new(),
                    positions: Vec::new(),
                };
                found.add_shifted(i, head, p0, p1);
                found.add_shifted(i + head.len(), tail, p0, p1);
                scalar.add_scalar(i, head, p0, p1);
                scalar.add_scalar(i + head.len(), tail, p0, p1);
                for found in [found, scalar] {
                    let bits: Vec<u64> = found.positions.iter().map(|p| p.to_bits()).collect();
                    let want_bits: Vec<u64> = want.2.iter().map(|p| p.to_bits()).collect();
                    assert_eq!(found.before, want.0, "len {len} i {i}");
                    assert_eq!(found.indices, want.1, "len {len} i {i}");
                    assert_eq!(bits, want_bits, "len {len} i {i}");
                }
            }
        }
    }
}
