//! The py1e order of a canonical node at a few ranks at a time, for a reader that walks its
//! positions in pieces.
//!
//! A node's draws are counted once, in order, when a piece first needs the node (or a later
//! one): per span, the generator where its shuffle starts, then its block size, shift range
//! and the generator where its shifts start. That is a few words per span. A piece then draws
//! the shifts of the indices its ranks may come from, and redraws the shuffles of only the
//! spans holding the samples at those ranks ([`super::pick`]), from their kept generators.
//!
//! Given a [`CountCache`], the counted draws are read from the epoch's file where one holds
//! them, and written there once a count took long enough to be worth skipping next time, node
//! by node under the epoch's lock, so that processes starting the epoch together count each
//! node once.

use super::draws_file::Key;
use super::draws_store::{CountCache, CountCacheStats};
use super::node_draws::NodeDraws;
use super::pick::{pick_ranks, rank_runs};
use super::seeded::pick_seeded;
use super::{check_nodes, tail_warns, SMALL_BLOCK};
use crate::shuffle::py1br::block_bounds;
use crate::shuffle::rng::Pcg64;
use crate::shuffle::spans::{NodeSpans, Span};
use crate::warning::{Warning, Warnings};
use crate::Result;

/// Ranks of one node laid out at once are at most this far apart, or the node's shift margin
/// if larger: a window (spread plus twice the margin) stays a few margins wide however a
/// piece's ranks are spread, and its margins cost at most twice the spread.
const RANK_SPREAD: usize = 1 << 20;

mod count_store;
use count_store::Store;

/// py1e over a whole epoch, evaluated node by node as pieces ask for ranks.
pub(crate) struct LazyPy1e {
    spans: Vec<Span>,
    groups: Vec<(usize, usize)>,
    bounds: (i64, i64),
    /// The epoch generator at the first draw of node `nodes.len()`.
    rng: Pcg64,
    /// The nodes counted so far, in order.
    nodes: Vec<NodeDraws>,
    /// Per canonical node, its draws from a resume's marks, while no piece needed more.
    seeds: Vec<Option<NodeDraws>>,
    store: Option<Store>,
}

impl LazyPy1e {
    /// Checks what the whole shuffle checks up front and decides streaming's small-block
    /// warning: from the span sizes where they decide it, else by counting every node now.
    pub(crate) fn new(
        sizes: &[i64],
        num_nodes: usize,
        seed: u128,
        epoch_seed: u128,
        block_size: usize,
        cache: Option<&CountCache>,
        warnings: &mut Warnings,
    ) -> Result<Self> {
        let NodeSpans {
            spans,
            groups,
            epoch_rng,
            ..
        } = NodeSpans::new(sizes, num_nodes, seed, epoch_seed);
        let bounds = block_bounds(block_size);
        check_nodes(&spans, &groups, &epoch_rng, bounds, num_nodes)?;
        let store = cache.map(|cache| Store {
            cache: cache.clone(),
            key: Key::new(sizes, num_nodes, seed, epoch_seed, block_size),
            unsaved: 0,
            off: false,
            stats: CountCacheStats::default(),
        });
        let mut lazy = LazyPy1e {
            spans,
            groups,
            bounds,
            rng: epoch_rng,
            nodes: Vec::new(),
            seeds: Vec::new(),
            store,
        };
        lazy.open_store();
        lazy.take_marks();
        let warns = if let Some(warns) = tail_warns(&lazy.spans, bounds) {
            warns
        } else {
            lazy.count_through(lazy.groups.len())?;
            lazy.nodes.iter().any(|n| n.small_block)
        };
        if warns {
            warnings.push(Warning::user(SMALL_BLOCK));
        }
        Ok(lazy)
    }

    /// What was done with the [`CountCache`], if one was given.
    pub(crate) fn count_cache_stats(&self) -> Option<&CountCacheStats> {
        self.store.as_ref().map(|s| &s.stats)
    }

    /// [`LazyPy1e::pick`] from the node's resume mark, if it has one and is not counted; `None`
    /// (the mark dropped) where a piece needs draws the mark cannot give.
    fn pick_from_mark(&mut self, node: usize, ranks: &[usize]) -> Option<Vec<i64>> {
        if node < self.nodes.len() {
            return None;
        }
        let draws = self.seeds.get_mut(node)?.as_mut()?;
        let (a, b) = self.groups[node];
        let picked = pick_seeded(draws, &self.spans[a..b], ranks, RANK_SPREAD, self.bounds);
        if picked.is_none() {
            self.seeds[node] = None; // counted from now on
        }
        picked
    }

    /// Node `node`'s order at the sorted, unique `ranks`.
    pub(crate) fn pick(&mut self, node: usize, ranks: &[usize]) -> Result<Vec<i64>> {
        if let Some(ids) = self.pick_from_mark(node, ranks) {
            return Ok(ids);
        }
        self.count_through(node + 1)?;
        let (a, b) = self.groups[node];
        let draws = &self.nodes[node];
        let mut out = Vec::with_capacity(ranks.len());
        for run in rank_runs(ranks, RANK_SPREAD.max(draws.margin)) {
            out.extend(pick_ranks(draws, &self.spans[a..b], run)?);
        }
        Ok(out)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::shuffle::{get_shuffle_warn, ShuffleAlgo};

    /// Every piece of every node equals the whole shuffle at those positions, whatever the
    /// piece size, and the warning is the whole shuffle's.
    #[test]
    fn pieces_equal_the_whole_shuffle() {
        let cases: [(&[i64], usize, usize); 4] = [
            (&[3, 5, 4, 6, 9, 1, 7], 2, 8),
            (&[100, 250, 90, 300, 41], 3, 64),
            (&[1000; 12], 4, 3000),
            (&[7, 0, 13, 2000, 5], 1, 1 << 18),
        ];
        for (sizes, ncn, block) in cases {
            for epoch in 0..3_u64 {
                let mut want_warn = Vec::new();
                let whole = get_shuffle_warn(
                    ShuffleAlgo::Py1e,
                    sizes,
                    ncn,
                    7,
                    epoch,
                    block,
                    &mut want_warn,
                )
                .unwrap();
                let total: i64 = sizes.iter().sum();
                let bounds = crate::shuffle::spans::node_bounds(total, ncn);
                for piece in [1, 3, 17, 1000, 100_000] {
                    let mut warns = Vec::new();
                    let mut lazy = LazyPy1e::new(
                        sizes,
                        ncn,
                        7,
                        7 + u128::from(epoch),
                        block,
                        None,
                        &mut warns,
                    )
                    .unwrap();
                    assert_eq!(warns, want_warn);
                    for node in 0..ncn {
                        let n = (bounds[node + 1] - bounds[node]) as usize;
                        let mut got = Vec::new();
                        for start in (0..n).step_by(piece) {
                            let ranks: Vec<usize> = (start..(start + piece).min(n)).collect();
                            got.extend(lazy.pick(node, &ranks).unwrap());
                        }
                        let lo = bounds[node] as usize;
                        assert_eq!(got, whole[lo..lo + n], "{sizes:?} ncn {ncn} piece {piece}");
                    }
                }
            }
        }
    }
}
