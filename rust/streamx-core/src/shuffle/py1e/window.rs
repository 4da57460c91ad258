//! One node's order at a few ranks, laying out only a window of its samples.
//!
//! Sample `i` of a node sits at position `i + d` with its shift `d` in `[low, high]` of its
//! span, so with `L` the lowest `low` and `H` the highest `high` of the node, and
//! `m = ceil(H - L) + 2`, every sample `k >= j + m` sorts after sample `j` (their positions
//! differ by at least `2 + L - H`, far beyond rounding). Hence sample `j`'s rank lies in
//! `j - m + 1 ..= j + m - 1`: the samples below `first - m` all rank before `first`, those
//! from `last + m + 1` on all rank after `last`, and the wanted ranks are those of the window
//! `first - m .. last + m + 1` shifted by its start.

use std::ops::Range;

use super::rank::pick_in_window;
use super::shift_range;
use crate::shuffle::rng::{Pcg64, Swaps};
use crate::shuffle::spans::Span;
use crate::Result;

/// A span's shift range, and the generator at its first shift draw.
pub(super) struct Shifts {
    pub(super) low: f64,
    pub(super) high: f64,
    draws: Pcg64,
}

impl Shifts {
    pub(super) fn new(low: f64, high: f64, draws: Pcg64) -> Self {
        Shifts { low, high, draws }
    }

    /// The generator at the span's first shift draw.
    pub(super) fn draws(&self) -> &Pcg64 {
        &self.draws
    }

    pub(super) fn is_zero(&self) -> bool {
        self.low == 0.0 && self.high == 0.0
    }
}

/// The node's order at the sorted, unique, non-empty `ranks`, drawing exactly what the whole
/// node draws but laying out only the window the actual shifts require.
///
/// The span shuffles are drawn before the block sizes that bound the shifts, so their swaps
/// are kept for the window the largest possible shifts would need, and applied once the
/// actual window is known.
pub(super) fn pick_node(
    rng: &mut Pcg64,
    node: &[Span],
    bounds: (i64, i64),
    small_block: &mut bool,
    ranks: &[usize],
) -> Result<Vec<i64>> {
    let sizes: Vec<usize> = node.iter().map(|&(b, e)| (e - b) as usize).collect();
    let n = sizes.iter().sum();
    let widest = window(ranks, 2 * max_reach(&sizes, bounds.1) + 2, n);
    let swaps: Vec<Option<Swaps>> = span_parts(&sizes, &widest)
        .map(|(size, (from, to))| {
            if from < to {
                return Some(rng.draw_swaps(size, from));
            }
            rng.skip_shuffle(size);
            None
        })
        .collect();
    let shifts = draw_shifts(rng, &sizes, bounds, small_block)?;
    let high = shifts.iter().map(|s| s.high).fold(0.0, f64::max);
    let low = shifts.iter().map(|s| s.low).fold(0.0, f64::min);
    let window = window(ranks, (high - low).ceil() as usize + 2, n);
    debug_assert!(widest.start <= window.start && window.end <= widest.end);
    let parts: Vec<(usize, usize)> = span_parts(&sizes, &window).map(|(_, p)| p).collect();
    let mut samples = Vec::with_capacity(window.len());
    for (((&(begin, _), &size), &(from, to)), swaps) in
        node.iter().zip(&sizes).zip(&parts).zip(&swaps)
    {
        if let (true, Some(swaps)) = (from < to, swaps) {
            shuffled_part(swaps, begin, size, from..to, &mut samples);
        }
    }
    let in_window = |k: &usize| parts[*k].0 < parts[*k].1;
    if (0..node.len())
        .filter(in_window)
        .all(|k| shifts[k].is_zero())
    {
        // Every position in the window is its index, and so is the order.
        return Ok(ranks.iter().map(|&r| samples[r - window.start]).collect());
    }
    let positions = window_positions(&sizes, &parts, &shifts, window.len());
    Ok(pick_in_window(&samples, &positions, window.start, ranks))
}

/// The largest shift any span of the node could get, rounded up: the cutoff is
/// `(block - size) / 2` with `block < hi`.
fn max_reach(sizes: &[usize], hi: i64) -> usize {
    let reach = |&size: &usize| (hi - 1 - size as i64).max(0) as usize / 2 + 1;
    sizes.iter().map(reach).max().unwrap_or(1)
}

/// The node indices that can hold or outrank the wanted ranks, given a rank `margin`.
pub(super) fn window(ranks: &[usize], margin: usize, n: usize) -> Range<usize> {
    let (first, last) = (ranks[0], ranks[ranks.len() - 1]);
    first.saturating_sub(margin)..(last + margin + 1).min(n)
}

/// Per span, its size and the part of `window` it holds, as offsets into the span.
pub(super) fn span_parts<'a>(
    sizes: &'a [usize],
    window: &'a Range<usize>,
) -> impl Iterator<Item = (usize, (usize, usize))> + 'a {
    let mut offset = 0;
    sizes.iter().map(move |&size| {
        let from = window.start.clamp(offset, offset + size) - offset;
        let to = window.end.clamp(offset, offset + size) - offset;
        offset += size;
        (size, (from, to))
    })
}

/// Draws every span's block size, keeping its shift range and where its shifts are drawn, and
/// moves the generator past all the shifts.
pub(super) fn draw_shifts(
    rng: &mut Pcg64,
    sizes: &[usize],
    bounds: (i64, i64),
    small_block: &mut bool,
) -> Result<Vec<Shifts>> {
    let n = sizes.iter().sum();
    let mut offset = 0;
    let mut out = Vec::with_capacity(sizes.len());
    for &size in sizes {
        let (low, high) = shift_range(rng, bounds, offset, size, n, small_block)?;
        out.push(Shifts {
            low,
            high,
            draws: rng.clone(),
        });
        rng.skip_uniform(size);
        offset += size;
    }
    Ok(out)
}

/// Appends the span's shuffled samples at offsets `part`, from its swaps.
pub(super) fn shuffled_part(
    swaps: &Swaps,
    begin: i64,
    size: usize,
    part: Range<usize>,
    out: &mut Vec<i64>,
) {
    if let Ok(size) = u32::try_from(size) {
        // Offsets into the span: half the memory traffic of sample ids.
        let mut offsets: Vec<u32> = (0..size).collect();
        swaps.apply(&mut offsets, part.start);
        out.extend(offsets[part].iter().map(|&o| begin + i64::from(o)));
    } else {
        let mut ids: Vec<i64> = (begin..begin + size as i64).collect();
        swaps.apply(&mut ids, part.start);
        out.extend_from_slice(&ids[part]);
    }
}

/// The jittered positions of the window's samples; a span without shifts draws nothing here,
/// since `uniform(0, 0)` is exactly zero.
pub(super) fn window_positions(
    sizes: &[usize],
    parts: &[(usize, usize)],
    shifts: &[Shifts],
    len: usize,
) -> Vec<f64> {
    let mut positions = Vec::with_capacity(len);
    let mut offset = 0;
    for ((&size, &(from, to)), s) in sizes.iter().zip(parts).zip(shifts) {
        let indices = offset + from..offset + to.max(from);
        if s.is_zero() {
            positions.extend(indices.map(|i| i as f64));
        } else {
            let mut draws = s.draws.clone();
            draws.skip_uniform(from);
            let d = draws.uniform(s.low, s.high, to.max(from) - from);
            positions.extend(indices.zip(d).map(|(i, d)| i as f64 + d));
        }
        offset += size;
    }
    positions
}
