//! The `orig` partition as a closed-form element function.
//!
//! Canonical node `c` owns the id row `row_c`; the global sequence `F` interleaves the rows
//! (`F[i] = row_{i % ncn}[i / ncn]`), drops the resumed prefix, stripes over physical nodes
//! (node `p` gets `F[p::pn]`), pads each node to a multiple of its ranks, stripes over ranks, and
//! deals each rank's batches round-robin to its workers, padding with -1.

use super::{positive, PartitionSpec};
use crate::warning::{Warning, Warnings};
use crate::{Error, Result};

/// How a node's sequence is lengthened to a multiple of its rank count.
#[derive(Clone, Copy, Debug)]
enum RankPad {
    /// Already a multiple.
    None,
    /// Repeat the window of the node's own sequence that starts here.
    Window(u64),
    /// Too short for a window: tile the node's sequence.
    Tile,
}

/// The `orig` partition of one [`PartitionSpec`], evaluated element by element.
#[derive(Clone, Debug)]
pub struct OrigLayout {
    n: u64,
    ncn: u64,
    pn: u64,
    rpn: u64,
    wpr: u64,
    bs: u64,
    drop: u64,
    spc: u64,
    pspc: u64,
    padding: u64,
    ratio: u64,
    tiled: bool,
    row_start: Vec<u64>,
    row_short: Vec<bool>,
    node_len: u64,
    rank_pad: RankPad,
    rank_len: u64,
    batches: u64,
}

const DIVISIBLE: &str = "Either canonical or physical nodes must be evenly divisible by the \
other, otherwise striping slices of shards over nodes may lead to each node downloading all shards";

impl OrigLayout {
    /// Validates `spec` like `get_partitions_orig` and precomputes the layout.
    pub fn new(spec: &PartitionSpec, warnings: &mut Warnings) -> Result<Self> {
        let dims = [
            spec.num_canonical_nodes,
            spec.num_physical_nodes,
            spec.ranks_per_node,
            spec.workers_per_rank,
            spec.batch_size,
        ];
        if dims.contains(&0) {
            return Err(positive(
                "num_canonical_nodes, num_physical_nodes, ranks_per_node, workers_per_rank and \
                 batch_size",
            ));
        }
        let [ncn, pn, rpn, wpr, bs] = dims.map(|d| d as u64);
        if (ncn < pn && pn % ncn != 0) || (pn < ncn && ncn % pn != 0) {
            return Err(Error::InvalidArgument(DIVISIBLE.to_string()));
        }
        let mut drop = spec.drop_first;
        if drop % pn != 0 {
            warnings.push(Warning::log(
                "`drop_first` was not divisible by `num_physical_nodes`. Rounding it down to \
                 make it divisible.",
            ));
            drop -= drop % pn;
        }
        let n = spec.num_samples;
        let mut layout = OrigLayout {
            n,
            ncn,
            pn,
            rpn,
            wpr,
            bs,
            drop,
            spc: n.div_ceil(ncn),
            pspc: 0,
            padding: 0,
            ratio: 0,
            tiled: !(n > ncn || (n == ncn && ncn >= pn)),
            row_start: Vec::new(),
            row_short: Vec::new(),
            node_len: 0,
            rank_pad: RankPad::None,
            rank_len: 0,
            batches: 0,
        };
        layout.plan_rows(warnings)?;
        layout.plan_ranks(warnings);
        Ok(layout)
    }

    /// Row lengths, padding and per-row starts (step 3-4 of the algorithm).
    fn plan_rows(&mut self, warnings: &mut Warnings) -> Result<()> {
        if self.ncn < self.pn {
            self.ratio = self.pn / self.ncn;
            let overflow = self.spc % self.ratio;
            if overflow != 0 {
                self.padding = self.ratio - overflow;
            }
        }
        self.pspc = self.spc + self.padding;
        if self.tiled {
            warnings.push(Warning::user(format!(
                "Trying to partition {} samples over {} canonical nodes. This will result in many \
                 samples being repeated, and depending on your batching method, batches being \
                 completely dropped. Check if your dataset has the expected number of samples, \
                 and consider decreasing the number of canonical nodes.",
                self.n, self.ncn
            )));
            if self.n == 0 {
                return Err(Error::InvalidArgument(
                    "integer division or modulo by zero (cannot partition 0 samples)".to_string(),
                ));
            }
            return Ok(());
        }
        self.check_padding_window()?;
        let (n, ncn) = (u128::from(self.n), u128::from(self.ncn));
        let bound = |c: u64| (u128::from(c) * n / ncn) as u64;
        self.row_start = (0..self.ncn).map(bound).collect();
        self.row_short = (0..self.ncn)
            .map(|c| bound(c + 1) - bound(c) < self.spc)
            .collect();
        Ok(())
    }

    /// The padding columns copy an earlier window of `padding` columns; numpy fails to broadcast
    /// when the row is too short to hold that window.
    fn check_padding_window(&self) -> Result<()> {
        let (pspc, pad, ratio) = (self.pspc, self.padding, self.ratio);
        if pad == 0 || pspc + 1 >= 2 * pad + ratio {
            return Ok(());
        }
        let end = (pspc + 1).saturating_sub(pad + ratio);
        let begin = (pspc + 1).saturating_sub(2 * pad + ratio);
        Err(Error::InvalidArgument(format!(
            "could not broadcast input array from shape ({},{}) into shape ({},{})",
            self.ncn,
            end - begin,
            self.ncn,
            pad
        )))
    }

    /// Node, rank and worker extents (steps 6-11).
    fn plan_ranks(&mut self, warnings: &mut Warnings) {
        let flat = self.ncn * self.pspc;
        let len = flat.saturating_sub(self.drop);
        self.node_len = len / self.pn;
        let (node_len, rpn) = (self.node_len, self.rpn);
        let mut padded = node_len;
        if node_len % rpn != 0 {
            let under = rpn - node_len % rpn;
            padded += under;
            self.rank_pad = if rpn + under - 1 <= node_len {
                RankPad::Window(node_len + 1 - rpn - under)
            } else {
                warnings.push(Warning::user(format!(
                    "Attempting to partition {node_len} samples per physical node over {rpn} gpus. \
                     This will result in many samples being repeated, and depending on your \
                     batching method, batches being completely dropped. Check if your dataset \
                     has the expected number of samples."
                )));
                RankPad::Tile
            };
        }
        self.rank_len = padded / rpn;
        let per = self.wpr * self.bs;
        self.batches = self.rank_len.div_ceil(per);
    }

    /// `(nodes, ranks_per_node, workers_per_rank, batches_per_worker, batch_size)`.
    pub fn shape(&self) -> [usize; 5] {
        [self.pn, self.rpn, self.wpr, self.batches, self.bs].map(|d| d as usize)
    }

    /// The id at `[node, rank, worker, batch, slot]` (-1 for padding).
    pub fn get(&self, [p, r, w, b, s]: [usize; 5]) -> i64 {
        let t = (b as u64 * self.wpr + w as u64) * self.bs + s as u64;
        if t >= self.rank_len {
            return -1;
        }
        self.node_elem(p as u64, r as u64 + t * self.rpn)
    }

    /// Element `k` of physical node `p`'s rank-padded sequence.
    fn node_elem(&self, p: u64, k: u64) -> i64 {
        let k = if k < self.node_len {
            k
        } else {
            match self.rank_pad {
                RankPad::Window(start) => start + (k - self.node_len),
                RankPad::Tile | RankPad::None => (k - self.node_len) % self.node_len,
            }
        };
        self.flat_elem(self.drop + p + k * self.pn)
    }

    /// `F[i]`: the interleaving of the canonical rows.
    fn flat_elem(&self, i: u64) -> i64 {
        let (c, j) = (i % self.ncn, i / self.ncn);
        if self.tiled {
            return ((c * self.pspc + j) % self.n) as i64;
        }
        let j = if self.padding > 0 && j + self.padding >= self.pspc {
            // Padding repeats the window ending `ratio - 1` columns before the padding.
            j + 1 - self.padding - self.ratio
        } else {
            j
        };
        let short = self.row_short[c as usize] && j + 1 == self.spc;
        (self.row_start[c as usize] + j) as i64 - i64::from(short)
    }
}
