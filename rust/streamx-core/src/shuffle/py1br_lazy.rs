//! The py1br order of a canonical node at a few ranks at a time, for a reader that walks its
//! positions in pieces.
//!
//! py1br draws a node's staggered block sizes, then shuffles the node's laid-out samples block
//! by block, overlapping blocks in order (a window). So the draws are counted once, in order,
//! only as far as a piece needs: a node's windows when the node is begun (its block sizes come
//! first), then per window, up to the last one asked for, the generator where its shuffles
//! start. A piece then shuffles again only the windows holding its ranks; ranks outside every
//! window keep their laid-out sample.
//!
//! Given a [`CountCache`], the kept generators (per node begun, the one before its block
//! draws, then its counted windows') are read from the epoch's file and written there as the
//! count grows ([`MarkStore`]), under the epoch's lock.

use super::marks::{key, MarkStore};
use super::py1br::{block_bounds, node_blocks, staggers, window_end, windows, Laid};
use super::py1e::draws_store::PY1BR;
use super::py1e::{CountCache, CountCacheStats};
use super::rng::Pcg64;
use super::spans::{node_bounds, NodeSpans, Span};
use crate::Result;

/// One run of overlapping blocks, shuffled together.
struct Window {
    /// Node ranks `[from, to)` it covers.
    from: usize,
    to: usize,
    /// Its blocks, as ranks relative to `from`, shuffled in this order.
    blocks: Vec<(usize, usize)>,
}

/// A node begun: its windows, and the generators of those counted so far (a prefix).
struct Node {
    /// The generator before its block draws.
    begin: Pcg64,
    windows: Vec<Window>,
    rngs: Vec<Pcg64>,
}

/// py1br over a whole epoch, evaluated node by node as pieces ask for ranks.
pub(crate) struct LazyPy1br {
    spans: Vec<Span>,
    groups: Vec<(usize, usize)>,
    bounds: Vec<i64>,
    stagger: Vec<i64>,
    block: (i64, i64),
    /// The epoch generator after the windows counted so far: only the last node begun may be
    /// counted in part.
    rng: Pcg64,
    /// The nodes begun so far, in order.
    nodes: Vec<Node>,
    /// The last window laid out, `(node, window)`, and its shuffled samples.
    last: Option<((usize, usize), Vec<i64>)>,
    store: Option<MarkStore>,
}

impl LazyPy1br {
    /// Draws every node's stagger first, as the whole shuffle does (and fails as it does).
    pub(crate) fn new(
        sizes: &[i64],
        num_nodes: usize,
        seed: u128,
        epoch_seed: u128,
        block_size: usize,
        cache: Option<&CountCache>,
    ) -> Result<Self> {
        let NodeSpans {
            spans,
            groups,
            total,
            mut epoch_rng,
        } = NodeSpans::new(sizes, num_nodes, seed, epoch_seed);
        let block = block_bounds(block_size);
        let stagger = staggers(&mut epoch_rng, num_nodes, block.0)?;
        let words = [num_nodes as u128, seed, epoch_seed, block_size as u128];
        let digest = key("py1br", sizes, &words);
        // Per node its `begin` and at most one per block: every block but the first holds at
        // least `block.0` samples (at least 1 once the staggers were drawn).
        let per_block = block.0.max(1) as usize;
        let most = (total as usize / per_block).saturating_add(3 * num_nodes);
        let store = MarkStore::open(cache, PY1BR, digest, epoch_rng.words().1, most);
        let mut lazy = LazyPy1br {
            spans,
            groups,
            bounds: node_bounds(total, num_nodes),
            stagger,
            block,
            rng: epoch_rng,
            nodes: Vec::new(),
            last: None,
            store,
        };
        lazy.load();
        Ok(lazy)
    }

    /// What was done with the [`CountCache`], if one was given.
    pub(crate) fn count_cache_stats(&self) -> Option<&CountCacheStats> {
        self.store.as_ref().map(|s| &s.stats)
    }

    /// Node `next`'s windows, drawing its block sizes from `rng`.
    fn node_windows(&self, next: usize, rng: &mut Pcg64) -> Result<Vec<Window>> {
        let (start, stop) = (self.bounds[next], self.bounds[next + 1]);
        let blocks = node_blocks(rng, start, stop, self.stagger[next], self.block)?;
        Ok(windows(&blocks)
            .map(|window| {
                let from = (window[0].0 - start) as usize;
                Window {
                    from,
                    to: (window_end(window) - start) as usize,
                    blocks: window
                        .iter()
                        .map(|&(b, e)| ((b - start) as usize - from, (e - start) as usize - from))
                        .collect(),
                }
            })
            .collect())
    }

    /// The node positions up to the end of the first `end` windows of `node`, in the epoch
    /// (the node's start where it is not begun).
    fn reach(&self, node: usize, end: usize) -> u64 {
        let within = self.nodes.get(node).map_or(0, |open| {
            let end = end.min(open.windows.len());
            end.checked_sub(1).map_or(0, |w| open.windows[w].to)
        });
        self.bounds[node] as u64 + within as u64
    }

    /// The epoch positions counted so far (to the end of the last window counted).
    fn known(&self) -> u64 {
        self.nodes
            .len()
            .checked_sub(1)
            .map_or(0, |k| self.reach(k, self.nodes[k].rngs.len()))
    }

    /// Every kept generator, node by node: its `begin`, then its counted windows'.
    fn marks(&self) -> Vec<Pcg64> {
        let mut out = Vec::new();
        for node in &self.nodes {
            out.push(node.begin.clone());
            out.extend(node.rngs.iter().cloned());
        }
        out
    }

    /// Takes the file's generators, if it holds more than are known here (a file whose
    /// nodes do not rebuild is ignored).
    fn load(&mut self) {
        let Some((marks, after)) = self.store.as_mut().and_then(MarkStore::load) else {
            return;
        };
        let have: usize = self.nodes.iter().map(|n| 1 + n.rngs.len()).sum();
        if marks.len() <= have {
            return;
        }
        let mut nodes = Vec::new();
        let mut at = 0;
        while at < marks.len() && nodes.len() < self.groups.len() {
            let begin = marks[at].clone();
            let Ok(windows) = self.node_windows(nodes.len(), &mut begin.clone()) else {
                return;
            };
            let counted = windows.len().min(marks.len() - at - 1);
            let rngs = marks[at + 1..at + 1 + counted].to_vec();
            nodes.push(Node {
                begin,
                windows,
                rngs,
            });
            at += 1 + counted;
        }
        if at == marks.len() {
            self.nodes = nodes;
            self.rng = after;
            let (known, begun) = (self.known(), self.nodes.len());
            if let Some(store) = &mut self.store {
                store.loaded(known, begun);
            }
        }
    }

    /// Counts whole nodes before `node`, then `node`'s windows until `end` of them are known:
    /// under the count's lock, after reading the file again, where the count will be written.
    fn count_through(&mut self, node: usize, end: usize) -> Result<()> {
        let done = |me: &Self| me.nodes.get(node).is_some_and(|n| n.rngs.len() >= end);
        if done(self) {
            return Ok(());
        }
        let more = self.reach(node, end).saturating_sub(self.known());
        let lock = self.store.as_mut().and_then(|s| s.lock(more));
        if lock.is_some() {
            self.load();
        }
        let loaded = self.known();
        while self.nodes.len() <= node {
            if let Some(open) = self.nodes.last() {
                let all = open.windows.len();
                self.count_windows(self.nodes.len() - 1, all);
            }
            let begin = self.rng.clone();
            let mut rng = self.rng.clone();
            let windows = self.node_windows(self.nodes.len(), &mut rng)?;
            self.rng = rng;
            self.nodes.push(Node {
                begin,
                windows,
                rngs: Vec::new(),
            });
        }
        self.count_windows(node, end);
        let known = self.known();
        if let Some(mut store) = self.store.take() {
            let counted = known.saturating_sub(loaded);
            store.save(counted, || self.marks(), &self.rng, known, self.nodes.len());
            self.store = Some(store);
        }
        drop(lock); // once written, for the processes waiting to read it
        Ok(())
    }

    /// Counts the windows of `node` (the last node begun) until `end` of them are known.
    fn count_windows(&mut self, node: usize, end: usize) {
        let open = &mut self.nodes[node];
        while open.rngs.len() < end {
            open.rngs.push(self.rng.clone());
            for &(begin, stop) in &open.windows[open.rngs.len() - 1].blocks {
                self.rng.skip_shuffle(stop - begin);
            }
        }
    }

    /// Node `node`'s order at the sorted, unique `ranks` (each below the node's size).
    pub(crate) fn pick(&mut self, node: usize, ranks: &[usize]) -> Result<Vec<i64>> {
        self.count_through(node, 0)?;
        if let Some(&top) = ranks.last() {
            let end = self.nodes[node]
                .windows
                .partition_point(|win| win.from <= top);
            self.count_through(node, end)?;
        }
        let (a, b) = self.groups[node];
        let laid = Laid::new(&self.spans[a..b]);
        let Node {
            windows: kept,
            rngs,
            ..
        } = &self.nodes[node];
        let mut out = Vec::with_capacity(ranks.len());
        let mut one = Vec::with_capacity(1);
        for &rank in ranks {
            let w = kept.partition_point(|win| win.from <= rank);
            let inside = w > 0 && rank < kept[w - 1].to;
            if !inside {
                one.clear();
                laid.extend(rank, rank + 1, &mut one);
                out.extend_from_slice(&one);
                continue;
            }
            let window = &kept[w - 1];
            let values = match self.last.take() {
                Some((key, values)) if key == (node, w - 1) => values,
                _ => {
                    let mut values = Vec::with_capacity(window.to - window.from);
                    laid.extend(window.from, window.to, &mut values);
                    let mut rng = rngs[w - 1].clone();
                    for &(begin, end) in &window.blocks {
                        rng.shuffle(&mut values[begin..end]);
                    }
                    values
                }
            };
            out.push(values[rank - window.from]);
            self.last = Some(((node, w - 1), values));
        }
        Ok(out)
    }
}
