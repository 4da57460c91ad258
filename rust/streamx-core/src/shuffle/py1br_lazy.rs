//! The py1br order of a canonical node at a few ranks at a time, for a reader that walks its
//! positions in pieces.
//!
//! py1br draws a node's staggered block sizes, then shuffles the node's laid-out samples block
//! by block, overlapping blocks in order (a window). So the draws are counted once, in order,
//! only as far as a piece needs: a node's windows when the node is begun (its block sizes come
//! first), then per window, up to the last one asked for, the generator where its shuffles
//! start. A piece then shuffles again only the windows holding its ranks; ranks outside every
//! window keep their laid-out sample.

use super::py1br::{block_bounds, node_blocks, staggers, window_end, windows, Laid};
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
}

impl LazyPy1br {
    /// Draws every node's stagger first, as the whole shuffle does (and fails as it does).
    pub(crate) fn new(
        sizes: &[i64],
        num_nodes: usize,
        seed: u128,
        epoch_seed: u128,
        block_size: usize,
    ) -> Result<Self> {
        let NodeSpans {
            spans,
            groups,
            total,
            mut epoch_rng,
        } = NodeSpans::new(sizes, num_nodes, seed, epoch_seed);
        let block = block_bounds(block_size);
        let stagger = staggers(&mut epoch_rng, num_nodes, block.0)?;
        Ok(LazyPy1br {
            spans,
            groups,
            bounds: node_bounds(total, num_nodes),
            stagger,
            block,
            rng: epoch_rng,
            nodes: Vec::new(),
            last: None,
        })
    }

    /// Counts whole nodes before `node`, then `node`'s windows until `end` of them are known.
    fn count_through(&mut self, node: usize, end: usize) -> Result<()> {
        while self.nodes.len() <= node {
            if let Some(open) = self.nodes.last() {
                let all = open.windows.len();
                self.count_windows(self.nodes.len() - 1, all);
            }
            let next = self.nodes.len();
            let (start, stop) = (self.bounds[next], self.bounds[next + 1]);
            let blocks = node_blocks(&mut self.rng, start, stop, self.stagger[next], self.block)?;
            let windows = windows(&blocks)
                .map(|window| {
                    let from = (window[0].0 - start) as usize;
                    Window {
                        from,
                        to: (window_end(window) - start) as usize,
                        blocks: window
                            .iter()
                            .map(|&(b, e)| {
                                ((b - start) as usize - from, (e - start) as usize - from)
                            })
                            .collect(),
                    }
                })
                .collect();
            self.nodes.push(Node {
                windows,
                rngs: Vec::new(),
            });
        }
        self.count_windows(node, end);
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
