//! The py1s order of a canonical node at a few ranks at a time, for a reader that walks its
//! positions in pieces.
//!
//! py1s lays the nodes out as their (already shuffled) spans one after another, each span's
//! samples shuffled by the epoch generator in turn. So the spans' draws are counted once, in
//! order, only as far as the last span a piece needs, keeping per span the generator where its
//! shuffle starts: a few words per span. A node's first piece thus counts the nodes before it
//! and its own spans up to the piece, not the whole node. A piece then shuffles again only the
//! spans holding its ranks, from their kept generators. Unlike py1e, nothing is jittered, so a
//! rank's span is found by its position alone.
//!
//! Given a [`CountCache`], the kept generators are read from the epoch's file and written
//! there as the count grows ([`MarkStore`]), under the epoch's lock, so that the processes
//! of a node count each span once between them.

use super::marks::{key, MarkStore};
use super::py1e::draws_store::PY1S;
use super::py1e::{CountCache, CountCacheStats};
use super::rng::Pcg64;
use super::spans::{NodeSpans, Span};

/// py1s over a whole epoch, evaluated span by span as pieces ask for ranks.
pub(crate) struct LazyPy1s {
    /// Every node's spans, node after node, in epoch order.
    spans: Vec<Span>,
    groups: Vec<(usize, usize)>,
    /// Per span, the node rank of its first sample (known without drawing).
    starts: Vec<usize>,
    /// Per span counted so far (a prefix of `spans`), the generator at its shuffle's first draw.
    shuffles: Vec<Pcg64>,
    /// The epoch generator at the shuffle of span `shuffles.len()`.
    rng: Pcg64,
    /// The last span laid out and its shuffled samples (pieces ask for ranks in order, so
    /// consecutive ranks mostly share it).
    last: Option<(usize, Vec<i64>)>,
    store: Option<MarkStore>,
}

impl LazyPy1s {
    pub(crate) fn new(
        sizes: &[i64],
        num_nodes: usize,
        seed: u128,
        epoch_seed: u128,
        cache: Option<&CountCache>,
    ) -> Self {
        let NodeSpans {
            spans,
            groups,
            epoch_rng,
            ..
        } = NodeSpans::new(sizes, num_nodes, seed, epoch_seed);
        let mut starts = Vec::with_capacity(spans.len());
        for &(a, b) in &groups {
            let mut at = 0;
            for &(begin, end) in &spans[a..b] {
                starts.push(at);
                at += (end - begin) as usize;
            }
        }
        let digest = key("py1s", sizes, &[num_nodes as u128, seed, epoch_seed]);
        let inc = epoch_rng.words().1;
        let store = MarkStore::open(cache, PY1S, digest, inc, spans.len());
        let mut lazy = LazyPy1s {
            spans,
            groups,
            starts,
            shuffles: Vec::new(),
            rng: epoch_rng,
            last: None,
            store,
        };
        lazy.load();
        lazy
    }

    /// What was done with the [`CountCache`], if one was given.
    pub(crate) fn count_cache_stats(&self) -> Option<&CountCacheStats> {
        self.store.as_ref().map(|s| &s.stats)
    }

    /// The samples of spans `[from, to)`.
    fn samples(&self, from: usize, to: usize) -> u64 {
        self.spans[from..to]
            .iter()
            .map(|&(b, e)| (e - b) as u64)
            .sum()
    }

    /// The canonical nodes the first `spans` spans reach.
    fn nodes(&self, spans: usize) -> usize {
        self.groups.partition_point(|g| g.0 < spans)
    }

    /// Takes the file's generators, if it holds more than are known here.
    fn load(&mut self) {
        let Some((marks, after)) = self.store.as_mut().and_then(MarkStore::load) else {
            return;
        };
        let n = marks.len();
        if n > self.shuffles.len() && n <= self.spans.len() {
            let (known, nodes) = (self.samples(0, n), self.nodes(n));
            self.shuffles = marks;
            self.rng = after;
            if let Some(store) = &mut self.store {
                store.loaded(known, nodes);
            }
        }
    }

    /// Counts spans until `end` of them are known: under the count's lock, after reading the
    /// file again, where the count will be written.
    fn count_through(&mut self, end: usize) {
        if self.shuffles.len() >= end {
            return;
        }
        let more = self.samples(self.shuffles.len(), end);
        let lock = self.store.as_mut().and_then(|s| s.lock(more));
        if lock.is_some() {
            self.load();
        }
        let from = self.shuffles.len();
        while self.shuffles.len() < end {
            let (begin, stop) = self.spans[self.shuffles.len()];
            self.shuffles.push(self.rng.clone());
            self.rng.skip_shuffle((stop - begin) as usize);
        }
        let to = self.shuffles.len();
        let counted = self.samples(from, to);
        let (known, nodes) = (self.samples(0, to), self.nodes(to));
        if let Some(mut store) = self.store.take() {
            store.save(counted, || self.shuffles.clone(), &self.rng, known, nodes);
            self.store = Some(store);
        }
        drop(lock); // once written, for the processes waiting to read it
    }

    /// Node `node`'s order at the sorted, unique `ranks` (each below the node's size).
    pub(crate) fn pick(&mut self, node: usize, ranks: &[usize]) -> Vec<i64> {
        let (a, b) = self.groups[node];
        // The last span starting at or before a rank: an empty span starts where the next one
        // does, so it is never the one found.
        let span_of =
            |starts: &[usize], rank: usize| a + starts.partition_point(|&s| s <= rank) - 1;
        if let Some(&top) = ranks.last() {
            self.count_through(span_of(&self.starts[a..b], top) + 1);
        }
        let mut out = Vec::with_capacity(ranks.len());
        for &rank in ranks {
            let j = span_of(&self.starts[a..b], rank);
            let laid = match self.last.take() {
                Some((key, values)) if key == j => values,
                _ => {
                    let (begin, end) = self.spans[j];
                    let mut values: Vec<i64> = (begin..end).collect();
                    self.shuffles[j].clone().shuffle(&mut values);
                    values
                }
            };
            out.push(laid[rank - self.starts[j]]);
            self.last = Some((j, laid));
        }
        out
    }
}
