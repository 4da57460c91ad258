//! The py1s order of a canonical node at a few ranks at a time, for a reader that walks its
//! positions in pieces.
//!
//! py1s lays a node out as its (already shuffled) spans one after another, each span's samples
//! shuffled by the epoch generator in turn. So a node's draws are counted once, in order, when a
//! piece first needs the node (or a later one), keeping per span the generator where its
//! shuffle starts: a few words per span. A piece then shuffles again only the spans holding
//! its ranks, from their kept generators. Unlike py1e, nothing is jittered, so a rank's span is
//! found by its position alone.

use super::rng::Pcg64;
use super::spans::{NodeSpans, Span};

/// What a node's later pieces need from its draws.
struct NodeShuffles {
    /// Per span, the node rank of its first sample.
    starts: Vec<usize>,
    /// Per span, the generator at its shuffle's first draw.
    shuffles: Vec<Pcg64>,
}

/// py1s over a whole epoch, evaluated node by node as pieces ask for ranks.
pub(crate) struct LazyPy1s {
    spans: Vec<Span>,
    groups: Vec<(usize, usize)>,
    /// The epoch generator at the first shuffle of node `nodes.len()`.
    rng: Pcg64,
    /// The nodes counted so far, in order.
    nodes: Vec<NodeShuffles>,
    /// The last span laid out: `(node, span)` and its shuffled samples (pieces ask for ranks
    /// in order, so consecutive ranks mostly share it).
    last: Option<((usize, usize), Vec<i64>)>,
}

impl LazyPy1s {
    pub(crate) fn new(sizes: &[i64], num_nodes: usize, seed: u128, epoch_seed: u128) -> Self {
        let NodeSpans {
            spans,
            groups,
            epoch_rng,
            ..
        } = NodeSpans::new(sizes, num_nodes, seed, epoch_seed);
        LazyPy1s {
            spans,
            groups,
            rng: epoch_rng,
            nodes: Vec::new(),
            last: None,
        }
    }

    /// Counts nodes until `end` of them are known.
    fn count_through(&mut self, end: usize) {
        while self.nodes.len() < end {
            let (a, b) = self.groups[self.nodes.len()];
            let mut at = 0;
            let mut starts = Vec::with_capacity(b - a);
            let mut shuffles = Vec::with_capacity(b - a);
            for &(begin, stop) in &self.spans[a..b] {
                let len = (stop - begin) as usize;
                starts.push(at);
                shuffles.push(self.rng.clone());
                self.rng.skip_shuffle(len);
                at += len;
            }
            self.nodes.push(NodeShuffles { starts, shuffles });
        }
    }

    /// Node `node`'s order at the sorted, unique `ranks` (each below the node's size).
    pub(crate) fn pick(&mut self, node: usize, ranks: &[usize]) -> Vec<i64> {
        self.count_through(node + 1);
        let (a, _) = self.groups[node];
        let draws = &self.nodes[node];
        let mut out = Vec::with_capacity(ranks.len());
        for &rank in ranks {
            // The last span starting at or before `rank`: an empty span starts where the next
            // one does, so it is never the one found.
            let j = draws.starts.partition_point(|&s| s <= rank) - 1;
            let laid = match self.last.take() {
                Some((key, values)) if key == (node, j) => values,
                _ => {
                    let (begin, end) = self.spans[a + j];
                    let mut values: Vec<i64> = (begin..end).collect();
                    draws.shuffles[j].clone().shuffle(&mut values);
                    values
                }
            };
            out.push(laid[rank - draws.starts[j]]);
            self.last = Some(((node, j), laid));
        }
        out
    }
}
