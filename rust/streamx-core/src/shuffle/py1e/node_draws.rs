//! What counting a canonical node's py1e draws yields: per span, the generators where its
//! shuffle and its shifts start, and its shift range. [`super::lazy`] keeps these to lay
//! out pieces, and [`super::draws_file`] stores them between processes.

use std::ops::Range;

use super::window::{draw_shifts, Shifts};
use crate::shuffle::rng::Pcg64;
use crate::shuffle::spans::Span;
use crate::Result;

/// What a node's later pieces need from its draws.
pub(super) struct NodeDraws {
    /// Per span, its size.
    pub(super) sizes: Vec<usize>,
    /// The first span whose draws are kept: 0 for a counted node, the span of a resume's
    /// mark for one seeded from it ([`super::seeded`]), which knows no span before.
    pub(super) first: usize,
    /// Per span from `first` on, the generator at its shuffle's first draw.
    pub(super) shuffles: Vec<Pcg64>,
    /// Per span from `first` on, its shift range and the generator at its first shift.
    pub(super) shifts: Vec<Shifts>,
    /// Per span, the node index of its first sample.
    pub(super) starts: Vec<usize>,
    /// The lowest and highest shift of the node's spans (with zero: `low <= 0 <= high`).
    pub(super) reach: (f64, f64),
    /// The rank margin of the node's actual shifts (see `window`).
    pub(super) margin: usize,
    /// The node's sample count.
    pub(super) total: usize,
    /// Whether a block drawn for the node was smaller than its span (streaming's warning).
    pub(super) small_block: bool,
}

impl NodeDraws {
    pub(super) fn new(
        sizes: Vec<usize>,
        shuffles: Vec<Pcg64>,
        shifts: Vec<Shifts>,
        small_block: bool,
    ) -> Self {
        let high = shifts.iter().map(|s| s.high).fold(0.0, f64::max);
        let low = shifts.iter().map(|s| s.low).fold(0.0, f64::min);
        let starts = sizes
            .iter()
            .scan(0, |at, &size| {
                let start = *at;
                *at += size;
                Some(start)
            })
            .collect();
        NodeDraws {
            total: sizes.iter().sum(),
            first: 0,
            starts,
            reach: (low, high),
            sizes,
            shuffles,
            shifts,
            margin: (high - low).ceil() as usize + 2,
            small_block,
        }
    }
}

impl NodeDraws {
    /// The spans whose draws are kept (every span of a counted node).
    pub(super) fn known(&self) -> Range<usize> {
        self.first..self.first + self.shuffles.len()
    }

    /// The generator at span `k`'s shuffle (`k` among [`NodeDraws::known`]).
    pub(super) fn shuffle_at(&self, k: usize) -> &Pcg64 {
        &self.shuffles[k - self.first]
    }

    /// Span `k`'s shift range and generator (`k` among [`NodeDraws::known`]).
    pub(super) fn shifts_at(&self, k: usize) -> &Shifts {
        &self.shifts[k - self.first]
    }
}

/// One node's draws, the generator moved past them.
pub(super) fn count_node(rng: &mut Pcg64, node: &[Span], bounds: (i64, i64)) -> Result<NodeDraws> {
    let sizes: Vec<usize> = node.iter().map(|&(b, e)| (e - b) as usize).collect();
    let shuffles = sizes
        .iter()
        .map(|&size| {
            let at = rng.clone();
            rng.skip_shuffle(size);
            at
        })
        .collect();
    let mut small_block = false;
    let shifts = draw_shifts(rng, &sizes, bounds, &mut small_block)?;
    Ok(NodeDraws::new(sizes, shuffles, shifts, small_block))
}
