//! The py2s order of a canonical node at a few ranks at a time, for a reader that walks its
//! positions in pieces.
//!
//! py2s first scatters every shard's samples once per run (the run layout), then, per node,
//! shuffles the order of the node's pieces of that layout and each piece's samples with the
//! epoch generator. Both generators advance in order, so each is counted once, as far as a
//! piece needs: per shard, the run generator where its shuffle starts; per node, its pieces'
//! order and, up to the last piece asked for, the epoch generator where each piece's shuffle
//! starts (a node's first piece does not count the node's later pieces). A piece then rebuilds
//! only the pieces holding its ranks: their layout from the shards they cover, then their
//! shuffle.

use super::rng::Pcg64;
use super::spans::{divide_spans, shard_spans, Span};

/// One node's pieces in epoch order.
struct NodePieces {
    /// Per piece, its run-layout range.
    pieces: Vec<Span>,
    /// Per piece, the node rank of its first sample.
    starts: Vec<usize>,
    /// Per piece counted so far (a prefix), the epoch generator at its shuffle's first draw.
    shuffles: Vec<Pcg64>,
}

/// py2s over a whole epoch, evaluated node by node as pieces ask for ranks.
pub(crate) struct LazyPy2s {
    /// Shards in run order, and where each one's samples start in the run layout.
    shards: Vec<Span>,
    shard_starts: Vec<i64>,
    /// Per shard counted so far, the run generator at its shuffle.
    fixed: Vec<Pcg64>,
    /// The run generator after the counted shards.
    fixed_rng: Pcg64,
    /// The run layout divided among nodes.
    pieces: Vec<Span>,
    groups: Vec<(usize, usize)>,
    /// The epoch generator after the pieces counted so far: only the last node begun may be
    /// counted in part.
    epoch_rng: Pcg64,
    nodes: Vec<NodePieces>,
    /// The last piece rebuilt, `(node, piece)`, and its shuffled samples.
    last: Option<((usize, usize), Vec<i64>)>,
}

impl LazyPy2s {
    pub(crate) fn new(sizes: &[i64], num_nodes: usize, seed: u128, epoch_seed: u128) -> Self {
        let (mut shards, total) = shard_spans(sizes);
        let mut fixed_rng = Pcg64::new(seed);
        fixed_rng.shuffle(&mut shards);
        let mut at = 0;
        let mut shard_starts = Vec::with_capacity(shards.len());
        let layout: Vec<Span> = shards
            .iter()
            .map(|&(b, e)| {
                shard_starts.push(at);
                at += e - b;
                (at - (e - b), at)
            })
            .collect();
        let (pieces, groups) = divide_spans(layout, total, num_nodes);
        LazyPy2s {
            shards,
            shard_starts,
            fixed: Vec::new(),
            fixed_rng,
            pieces,
            groups,
            epoch_rng: Pcg64::new(epoch_seed),
            nodes: Vec::new(),
            last: None,
        }
    }

    /// Counts whole nodes before `node`, then `node`'s pieces until `end` of them are known.
    fn count_through(&mut self, node: usize, end: usize) {
        while self.nodes.len() <= node {
            if let Some(open) = self.nodes.last() {
                let all = open.pieces.len();
                self.count_pieces(self.nodes.len() - 1, all);
            }
            let (a, b) = self.groups[self.nodes.len()];
            let mut pieces = self.pieces[a..b].to_vec();
            self.epoch_rng.shuffle(&mut pieces);
            let mut at = 0;
            let starts = pieces
                .iter()
                .map(|&(begin, stop)| {
                    at += (stop - begin) as usize;
                    at - (stop - begin) as usize
                })
                .collect();
            self.nodes.push(NodePieces {
                pieces,
                starts,
                shuffles: Vec::new(),
            });
        }
        self.count_pieces(node, end);
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

    /// Counts the run generator through every shard starting before layout position `end`.
    fn count_fixed_through(&mut self, end: i64) {
        while self.fixed.len() < self.shards.len() && self.shard_starts[self.fixed.len()] < end {
            let (begin, stop) = self.shards[self.fixed.len()];
            self.fixed.push(self.fixed_rng.clone());
            self.fixed_rng.skip_shuffle((stop - begin) as usize);
        }
    }

    /// The run layout's samples at positions `[begin, end)`.
    fn run_layout(&mut self, begin: i64, end: i64) -> Vec<i64> {
        self.count_fixed_through(end);
        let mut out = Vec::with_capacity((end - begin) as usize);
        let mut i = self
            .shard_starts
            .partition_point(|&s| s <= begin)
            .saturating_sub(1);
        let mut samples = Vec::new();
        while i < self.shards.len() && self.shard_starts[i] < end {
            let (lo, hi) = self.shards[i];
            let at = self.shard_starts[i];
            let (from, to) = (begin.max(at) - at, end.min(at + hi - lo) - at);
            if from < to {
                samples.clear();
                samples.extend(lo..hi);
                self.fixed[i].clone().shuffle(&mut samples);
                out.extend_from_slice(&samples[from as usize..to as usize]);
            }
            i += 1;
        }
        out
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
                    let mut values = self.run_layout(begin, end);
                    self.nodes[node].shuffles[j].clone().shuffle(&mut values);
                    values
                }
            };
            out.push(values[rank - self.nodes[node].starts[j]]);
            self.last = Some(((node, j), values));
        }
        out
    }
}
