//! The py1br order of a canonical node at a few ranks at a time, for a reader that walks its
//! positions in pieces.
//!
//! py1br draws a node's staggered block sizes, then shuffles the node's laid-out samples block
//! by block, overlapping blocks in order (a window). So a node is counted once, in order, when
//! a piece first needs it (or a later one): its windows and, per window, the generator where
//! its shuffles start. A piece then shuffles again only the windows holding its ranks; ranks
//! outside every window keep their laid-out sample.

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
    /// The generator at its first shuffle.
    rng: Pcg64,
}

/// py1br over a whole epoch, evaluated node by node as pieces ask for ranks.
pub(crate) struct LazyPy1br {
    spans: Vec<Span>,
    groups: Vec<(usize, usize)>,
    bounds: Vec<i64>,
    stagger: Vec<i64>,
    block: (i64, i64),
    /// The epoch generator at node `nodes.len()`'s block draws.
    rng: Pcg64,
    /// The nodes counted so far, in order: their windows.
    nodes: Vec<Vec<Window>>,
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

    /// Counts nodes until `end` of them are known.
    fn count_through(&mut self, end: usize) -> Result<()> {
        while self.nodes.len() < end {
            let node = self.nodes.len();
            let (start, stop) = (self.bounds[node], self.bounds[node + 1]);
            let blocks = node_blocks(&mut self.rng, start, stop, self.stagger[node], self.block)?;
            let mut kept = Vec::new();
            for window in windows(&blocks) {
                let from = (window[0].0 - start) as usize;
                let to = (window_end(window) - start) as usize;
                let rng = self.rng.clone();
                let mut relative = Vec::with_capacity(window.len());
                for &(begin, end) in window {
                    self.rng.skip_shuffle((end - begin) as usize);
                    relative.push((
                        (begin - start) as usize - from,
                        (end - start) as usize - from,
                    ));
                }
                kept.push(Window {
                    from,
                    to,
                    blocks: relative,
                    rng,
                });
            }
            self.nodes.push(kept);
        }
        Ok(())
    }

    /// Node `node`'s order at the sorted, unique `ranks` (each below the node's size).
    pub(crate) fn pick(&mut self, node: usize, ranks: &[usize]) -> Result<Vec<i64>> {
        self.count_through(node + 1)?;
        let (a, b) = self.groups[node];
        let laid = Laid::new(&self.spans[a..b]);
        let kept = &self.nodes[node];
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
                    let mut rng = window.rng.clone();
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
