//! A canonical node's draws from a resume's mark rather than a count: the generators where one
//! span's shuffle and shifts start, and the node's shift reach, carried by a state dict from a
//! process that counted the node ([`super::resume_marks`]).
//!
//! The spans after the mark are drawn on from it as pieces reach them: a span's shuffle starts
//! where the one before ends (its swaps skipped), and its shifts start after the one before's
//! shifts and its own block draw, as a count draws them. Spans before the mark are not known:
//! a piece that needs one counts the node instead ([`super::pick::Missing::Before`]).

use super::node_draws::NodeDraws;
use super::pick::{rank_runs, try_pick_ranks, Missing};
use super::shift_range;
use super::window::Shifts;
use crate::shuffle::rng::Pcg64;
use crate::shuffle::spans::Span;
use crate::Result;

/// What a resume's mark gives of a node: its draws at span `first`, and the node's reach.
pub(super) struct Mark {
    pub(super) first: usize,
    pub(super) shuffle: Pcg64,
    pub(super) shifts: Shifts,
    /// The lowest and highest shift of all the node's spans (`low <= 0 <= high`).
    pub(super) reach: (f64, f64),
}

impl NodeDraws {
    /// The node's draws known from `mark`; `None` if the mark cannot be one of this node's
    /// (a span it does not have, a shift range outside the span's room or the reach).
    pub(super) fn seeded(node: &[Span], mark: Mark) -> Option<Self> {
        let sizes: Vec<usize> = node.iter().map(|&(b, e)| (e - b) as usize).collect();
        let total: usize = sizes.iter().sum();
        let offset: usize = sizes.get(..mark.first)?.iter().sum();
        let size = *sizes.get(mark.first)?;
        let (low, high) = mark.reach;
        let room = (total - offset - size) as f64;
        let (s_low, s_high) = (mark.shifts.low, mark.shifts.high);
        let fits = s_low >= -(offset as f64) && s_low <= 0.0 && s_high >= 0.0 && s_high <= room;
        if !(fits && low <= s_low && s_high <= high && low >= -(total as f64))
            || high > total as f64
        {
            return None;
        }
        let mut draws = NodeDraws::new(sizes, vec![mark.shuffle], vec![mark.shifts], false);
        draws.first = mark.first;
        draws.reach = mark.reach;
        draws.margin = (high - low).ceil() as usize + 2;
        Some(draws)
    }

    /// Draws on the spans after the last known one until `end` are known. `Ok(false)` if a
    /// span's shift range falls outside the reach the mark gave: the mark was not this node's.
    pub(super) fn extend_to(&mut self, end: usize, bounds: (i64, i64)) -> Result<bool> {
        let end = end.min(self.sizes.len());
        let mut small_block = false;
        while self.known().end < end {
            let last = self.known().end - 1;
            let size = self.sizes[last];
            let mut shuffle = self.shuffle_at(last).clone();
            shuffle.skip_shuffle(size);
            let mut rng = self.shifts_at(last).draws().clone();
            rng.skip_uniform(size);
            let k = last + 1;
            let offset = self.starts[k];
            let size = self.sizes[k];
            let range = shift_range(&mut rng, bounds, offset, size, self.total, &mut small_block)?;
            if range.0 < self.reach.0 || range.1 > self.reach.1 {
                return Ok(false);
            }
            self.shuffles.push(shuffle);
            self.shifts.push(Shifts::new(range.0, range.1, rng));
        }
        Ok(true)
    }

    /// The mark at span `first`, if known here.
    pub(super) fn mark_at(&self, first: usize) -> Option<Mark> {
        if !self.known().contains(&first) {
            return None;
        }
        let shifts = self.shifts_at(first);
        Some(Mark {
            first,
            shuffle: self.shuffle_at(first).clone(),
            shifts: Shifts::new(shifts.low, shifts.high, shifts.draws().clone()),
            reach: self.reach,
        })
    }
}

/// The seeded node's order at the sorted, unique `ranks`, in windows at most `spread` ranks
/// apart as a counted node's; `None` if a piece needs draws the mark cannot give (a span
/// before it, or a shift range outside its reach), or fails from them: the node is then
/// counted (where the failure is real, it recurs there).
pub(super) fn pick_seeded(
    draws: &mut NodeDraws,
    node: &[Span],
    ranks: &[usize],
    spread: usize,
    bounds: (i64, i64),
) -> Option<Vec<i64>> {
    let mut out = Vec::with_capacity(ranks.len());
    for run in rank_runs(ranks, spread.max(draws.margin)) {
        loop {
            match try_pick_ranks(draws, node, run) {
                Ok(Ok(ids)) => break out.extend(ids),
                Ok(Err(Missing::Through(end))) if draws.extend_to(end, bounds).ok()? => {}
                _ => return None,
            }
        }
    }
    Some(out)
}
