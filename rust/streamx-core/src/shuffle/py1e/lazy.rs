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

use super::draws_file::{decode, encode, max_len, Key};
use super::draws_store::{self, CountCache, CountCacheStats};
use super::node_draws::{count_node, NodeDraws};
use super::pick::{pick_ranks, rank_runs};
use super::resume_marks;
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

/// The epoch's [`CountCache`], the key of its draws, and what was done with it.
struct Store {
    cache: CountCache,
    key: Key,
    /// Samples whose draws were counted here since the file was last read or written.
    unsaved: u64,
    /// No file is written: the directory is not private, or a write failed.
    off: bool,
    stats: CountCacheStats,
}

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

    /// Counts nodes until `end` of them are known, keeping them once that took long enough.
    /// A node whose count will be kept is counted under the epoch's lock, after reading the
    /// file again: the processes starting this epoch together count it once.
    fn count_through(&mut self, end: usize) -> Result<()> {
        while self.nodes.len() < end {
            let lock = self.lock_next();
            if lock.is_some() {
                self.load();
                if self.nodes.len() >= end {
                    break;
                }
            }
            let (a, b) = self.groups[self.nodes.len()];
            let node = count_node(&mut self.rng, &self.spans[a..b], self.bounds)?;
            let counted = node.total as u64;
            self.nodes.push(node);
            self.save(counted);
            drop(lock); // once the node is written, for the processes waiting to read it
        }
        Ok(())
    }

    /// The epoch's lock, if the next node's count would be written; `None` where it would
    /// not be, or where the lock could not be had (counted around, the reason kept).
    fn lock_next(&mut self) -> Option<draws_store::CountLock> {
        let store = self.store.as_mut().filter(|s| !s.off)?;
        let (a, b) = self.groups[self.nodes.len()];
        let samples: i64 = self.spans[a..b].iter().map(|&(lo, hi)| hi - lo).sum();
        if store.unsaved.saturating_add(samples as u64) < store.cache.min_samples {
            return None;
        }
        let cache = &store.cache;
        match draws_store::lock(&cache.dir, store.key.digest, cache.wait) {
            Ok(lock) => Some(lock),
            Err(err) => {
                store.stats.problem = Some(err.to_string());
                // A holder that did not let go in time: try, but wait no more, for later nodes.
                store.cache.wait = std::time::Duration::ZERO;
                None
            }
        }
    }

    /// Checks the directory before the first read: one that is not private is not used.
    fn open_store(&mut self) {
        let Some(store) = &mut self.store else {
            return;
        };
        if let Err(err) = draws_store::check_private(&store.cache.dir) {
            store.stats.problem = Some(err.to_string());
            store.off = true;
            return;
        }
        self.load();
    }

    /// Seeds the nodes the cache's resume marks hold (all or none: marks that are not this
    /// epoch's, whole, are ignored and the reason kept).
    fn take_marks(&mut self) {
        let Some(store) = self.store.as_mut().filter(|s| !s.cache.marks.is_empty()) else {
            return;
        };
        let inc = self.rng.words().1;
        let marks = &store.cache.marks;
        if let Some(seeds) = resume_marks::decode(marks, &store.key, inc, &self.spans, &self.groups)
        {
            store.stats.seeded_nodes = seeds.iter().flatten().count();
            self.seeds = seeds;
        } else {
            let len = marks.len();
            let msg = format!("resume marks of {len} bytes are not this epoch's: ignored");
            store.stats.problem = Some(msg);
        }
    }

    /// Takes the counted nodes from the epoch's file, if it holds more than are known here.
    fn load(&mut self) {
        let Some(store) = &mut self.store else {
            return;
        };
        let dir = &store.cache.dir;
        let name = draws_store::file_name(store.key.digest);
        let bytes = match draws_store::read(dir, &name, max_len(&self.groups)) {
            Ok(Some(bytes)) => bytes,
            Ok(None) => return,
            Err(err) => {
                store.stats.problem = Some(format!("{}: {err}", dir.join(&name).display()));
                return;
            }
        };
        let inc = self.rng.words().1;
        if let Some((nodes, after)) = decode(&bytes, &store.key, inc, &self.spans, &self.groups) {
            if nodes.len() > self.nodes.len() {
                store.stats.loaded_nodes = nodes.len();
                store.unsaved = 0; // what was counted here is in the file too
                self.nodes = nodes;
                self.rng = after;
            }
        } else {
            let path = dir.join(&name);
            store.stats.problem = Some(format!(
                "{} does not hold this epoch's draws: ignored",
                path.display()
            ));
        }
    }

    /// Counts every node, and writes what the last writes left out under the epoch's lock
    /// (the file is read first: one that holds every node is kept as it is).
    pub(super) fn count_every_node(&mut self) -> Result<()> {
        self.count_through(self.groups.len())?;
        let Some(store) = self.store.as_mut().filter(|s| !s.off && s.unsaved > 0) else {
            return Ok(());
        };
        let cache = &store.cache;
        let lock = match draws_store::lock(&cache.dir, store.key.digest, cache.wait) {
            Ok(lock) => lock,
            Err(err) => {
                store.stats.problem = Some(err.to_string());
                return Ok(());
            }
        };
        self.load();
        if let Some(store) = self.store.as_mut().filter(|s| s.unsaved > 0) {
            store.cache.min_samples = 0;
            self.save(0);
        }
        drop(lock);
        Ok(())
    }

    /// Writes every node counted so far, once `counted` more samples make it worth it.
    fn save(&mut self, counted: u64) {
        let Some(store) = &mut self.store else {
            return;
        };
        store.unsaved = store.unsaved.saturating_add(counted);
        if store.off || store.unsaved < store.cache.min_samples {
            return;
        }
        let bytes = encode(&store.key, self.rng.words().1, &self.nodes, &self.rng);
        let name = draws_store::file_name(store.key.digest);
        match draws_store::write(&store.cache.dir, &name, &bytes) {
            Ok(()) => {
                store.stats.saved_nodes = self.nodes.len();
                store.unsaved = 0;
            }
            Err(err) => {
                let path = store.cache.dir.join(&name);
                store.stats.problem = Some(format!("{}: {err}", path.display()));
                store.off = true;
            }
        }
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
