//! The py2s order of a canonical node at a few ranks at a time, for a reader that walks its
//! positions in pieces.
//!
//! py2s first scatters every shard's samples once per run (the run layout), then, per node,
//! shuffles the order of the node's pieces of that layout and each piece's samples with the
//! epoch generator. Both generators advance in order, so each is counted once, as far as a
//! piece needs: per shard, the run generator where its shuffle starts; per node, its pieces'
//! order and, up to the last piece asked for, the epoch generator where each piece's shuffle
//! starts (a node's first piece does not count the node's later pieces). A piece then rebuilds
//! only the pieces holding its ranks: their layout from the shards they cover
//! ([`RunLayout`]), then their shuffle.
//!
//! Given a [`CountCache`], the epoch's kept generators (per node begun, the one before its
//! pieces' shuffle, then its counted pieces') are read from the epoch's file and written there
//! as the count grows ([`MarkStore`]), under the epoch's lock; the run layout keeps its own,
//! and its problems are reported with the epoch's ([`LazyPy2s::count_cache_stats`]).

use super::marks::{key, MarkStore};
use super::py1e::draws_store::PY2S;
use super::py1e::{CountCache, CountCacheStats};
use super::py2s_run::RunLayout;
use super::rng::Pcg64;
use super::spans::{divide_spans, Span};

/// One node's pieces in epoch order.
struct NodePieces {
    /// The epoch generator before its pieces' shuffle.
    begin: Pcg64,
    /// Per piece, its run-layout range.
    pieces: Vec<Span>,
    /// Per piece, the node rank of its first sample.
    starts: Vec<usize>,
    /// Per piece counted so far (a prefix), the epoch generator at its shuffle's first draw.
    shuffles: Vec<Pcg64>,
}

/// py2s over a whole epoch, evaluated node by node as pieces ask for ranks.
pub(crate) struct LazyPy2s {
    run: RunLayout,
    /// The run layout divided among nodes, and where each node starts in it.
    pieces: Vec<Span>,
    groups: Vec<(usize, usize)>,
    node_starts: Vec<u64>,
    /// The epoch generator after the pieces counted so far: only the last node begun may be
    /// counted in part.
    epoch_rng: Pcg64,
    nodes: Vec<NodePieces>,
    /// The last piece rebuilt, `(node, piece)`, and its shuffled samples.
    last: Option<((usize, usize), Vec<i64>)>,
    store: Option<MarkStore>,
    /// The epoch file's stats with the run file's problem: refreshed as either changes.
    stats: Option<CountCacheStats>,
}

impl LazyPy2s {
    pub(crate) fn new(
        sizes: &[i64],
        num_nodes: usize,
        seed: u128,
        epoch_seed: u128,
        cache: Option<&CountCache>,
    ) -> Self {
        let (run, layout, total) = RunLayout::new(sizes, seed, cache);
        let (pieces, groups) = divide_spans(layout, total, num_nodes);
        let node_starts = groups
            .iter()
            .map(|&(a, _)| pieces.get(a).map_or(total, |p| p.0) as u64)
            .collect();
        let epoch_rng = Pcg64::new(epoch_seed);
        let digest = key("py2s", sizes, &[num_nodes as u128, seed, epoch_seed]);
        let most = pieces.len() + groups.len();
        let store = MarkStore::open(cache, PY2S, digest, epoch_rng.words().1, most);
        let mut lazy = LazyPy2s {
            run,
            pieces,
            groups,
            node_starts,
            epoch_rng,
            nodes: Vec::new(),
            last: None,
            store,
            stats: None,
        };
        lazy.load();
        lazy.refresh_stats();
        lazy
    }

    /// What was done with the [`CountCache`], if a cache was given: the epoch file's nodes
    /// read and written, and the problem of the epoch file or of the run layout's.
    pub(crate) fn count_cache_stats(&self) -> Option<&CountCacheStats> {
        self.stats.as_ref()
    }

    fn refresh_stats(&mut self) {
        let Some(epoch) = &self.store else {
            return;
        };
        let mut stats = epoch.stats.clone();
        let run_problem = self
            .run
            .count_cache_stats()
            .and_then(|s| s.problem.as_ref());
        if let Some(run) = run_problem {
            stats.problem = Some(match stats.problem.take() {
                Some(own) if own == *run => own, // one directory: its refusal is the same
                Some(own) => format!("{own}; {run}"),
                None => run.clone(),
            });
        }
        self.stats = Some(stats);
    }

    /// Node `next` begun from `begin`: its pieces in epoch order, the generator moved past
    /// their shuffle.
    fn begin_node(&self, next: usize, begin: &Pcg64) -> (NodePieces, Pcg64) {
        let (a, b) = self.groups[next];
        let mut pieces = self.pieces[a..b].to_vec();
        let mut rng = begin.clone();
        rng.shuffle(&mut pieces);
        let mut at = 0;
        let starts = pieces
            .iter()
            .map(|&(lo, hi)| {
                at += (hi - lo) as usize;
                at - (hi - lo) as usize
            })
            .collect();
        let node = NodePieces {
            begin: begin.clone(),
            pieces,
            starts,
            shuffles: Vec::new(),
        };
        (node, rng)
    }

    /// The epoch positions up to the end of the first `end` pieces of `node` (its start where
    /// it is not begun).
    fn reach(&self, node: usize, end: usize) -> u64 {
        let within = self.nodes.get(node).map_or(0, |open| {
            let end = end.min(open.pieces.len());
            open.starts.get(end).copied().unwrap_or_else(|| {
                end.checked_sub(1).map_or(0, |j| {
                    let (lo, hi) = open.pieces[j];
                    open.starts[j] + (hi - lo) as usize
                })
            })
        });
        self.node_starts[node] + within as u64
    }

    /// The epoch positions counted so far.
    fn known(&self) -> u64 {
        let last = self.nodes.len().checked_sub(1);
        last.map_or(0, |k| self.reach(k, self.nodes[k].shuffles.len()))
    }

    /// Every kept generator, node by node: its `begin`, then its counted pieces'.
    fn marks(&self) -> Vec<Pcg64> {
        let mut out = Vec::new();
        for node in &self.nodes {
            out.push(node.begin.clone());
            out.extend(node.shuffles.iter().cloned());
        }
        out
    }

    /// Takes the file's generators, if it holds more than are known here.
    fn load(&mut self) {
        let Some((marks, after)) = self.store.as_mut().and_then(MarkStore::load) else {
            return;
        };
        let have: usize = self.nodes.iter().map(|n| 1 + n.shuffles.len()).sum();
        if marks.len() <= have {
            return;
        }
        let mut nodes = Vec::new();
        let mut at = 0;
        while at < marks.len() && nodes.len() < self.groups.len() {
            let (mut node, _) = self.begin_node(nodes.len(), &marks[at]);
            let counted = node.pieces.len().min(marks.len() - at - 1);
            node.shuffles = marks[at + 1..at + 1 + counted].to_vec();
            nodes.push(node);
            at += 1 + counted;
        }
        if at == marks.len() {
            self.nodes = nodes;
            self.epoch_rng = after;
            let (known, begun) = (self.known(), self.nodes.len());
            if let Some(store) = &mut self.store {
                store.loaded(known, begun);
            }
        }
    }

    /// Counts whole nodes before `node`, then `node`'s pieces until `end` of them are known:
    /// under the epoch's lock, after reading the file again, where the count will be written.
    fn count_through(&mut self, node: usize, end: usize) {
        if self
            .nodes
            .get(node)
            .is_some_and(|n| n.shuffles.len() >= end)
        {
            return;
        }
        let more = self.reach(node, end).saturating_sub(self.known());
        let lock = self.store.as_mut().and_then(|s| s.lock(more));
        if lock.is_some() {
            self.load();
        }
        let loaded = self.known();
        while self.nodes.len() <= node {
            if let Some(open) = self.nodes.last() {
                let all = open.pieces.len();
                self.count_pieces(self.nodes.len() - 1, all);
            }
            let (begun, rng) = self.begin_node(self.nodes.len(), &self.epoch_rng);
            self.nodes.push(begun);
            self.epoch_rng = rng;
        }
        self.count_pieces(node, end);
        let known = self.known();
        if let Some(mut store) = self.store.take() {
            let counted = known.saturating_sub(loaded);
            store.save(
                counted,
                || self.marks(),
                &self.epoch_rng,
                known,
                self.nodes.len(),
            );
            self.store = Some(store);
        }
        drop(lock); // once written, for the processes waiting to read it
    }

    /// Counts the pieces of `node` (the last node begun) until `end` of them are known.
    fn count_pieces(&mut self, node: usize, end: usize) {
        let open = &mut self.nodes[node];
        while open.shuffles.len() < end {
            let (begin, stop) = open.pieces[open.shuffles.len()];
            open.shuffles.push(self.epoch_rng.clone());
            self.epoch_rng.skip_shuffle((stop - begin) as usize);
        }
    }

    /// Node `node`'s order at the sorted, unique `ranks` (each below the node's size).
    pub(crate) fn pick(&mut self, node: usize, ranks: &[usize]) -> Vec<i64> {
        self.count_through(node, 0);
        if let Some(&top) = ranks.last() {
            let j = self.nodes[node].starts.partition_point(|&s| s <= top);
            self.count_through(node, j);
        }
        let mut out = Vec::with_capacity(ranks.len());
        for &rank in ranks {
            let j = self.nodes[node].starts.partition_point(|&s| s <= rank) - 1;
            let values = match self.last.take() {
                Some((key, values)) if key == (node, j) => values,
                _ => {
                    let (begin, end) = self.nodes[node].pieces[j];
                    let mut values = self.run.samples(begin, end);
                    self.nodes[node].shuffles[j].clone().shuffle(&mut values);
                    values
                }
            };
            out.push(values[rank - self.nodes[node].starts[j]]);
            self.last = Some(((node, j), values));
        }
        self.refresh_stats();
        out
    }
}
