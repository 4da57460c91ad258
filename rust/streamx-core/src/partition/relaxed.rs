//! The `relaxed` partition: resume on a physical node count that does not divide (or is not
//! divided by) the canonical node count, keeping the global batch size and order.

use super::orig::OrigLayout;
use super::{positive, Layout, PartitionSpec};
use crate::warning::Warnings;
use crate::{Error, Result};

/// The initial world's `orig` partition, re-cut in traversal order for the current world.
#[derive(Clone, Debug)]
pub struct RelaxedLayout {
    inner: OrigLayout,
    inner_shape: [usize; 5],
    shape: [usize; 5],
}

/// `orig` when it applies (first run, or node counts that divide), else the re-cut layout.
pub(crate) fn layout(spec: &PartitionSpec, warnings: &mut Warnings) -> Result<Layout> {
    let (ncn, pn) = (spec.num_canonical_nodes, spec.num_physical_nodes);
    let divides = (pn <= ncn && pn > 0 && ncn % pn == 0) || (pn > ncn && ncn > 0 && pn % ncn == 0);
    let Some(initial) = spec.initial_physical_nodes.filter(|_| !divides) else {
        return Ok(Layout::Orig(OrigLayout::new(spec, warnings)?));
    };
    let global = pn * spec.ranks_per_node * spec.batch_size;
    let initial_devices = initial * spec.ranks_per_node;
    if initial_devices == 0 {
        return Err(positive("initial_physical_nodes and ranks_per_node"));
    }
    if global % initial_devices != 0 {
        return Err(Error::InvalidArgument(format!(
            "A global batch size of {global} is not evenly divisible by the initial total number \
             of devices of {initial_devices}. Make sure that when using the `relaxed` \
             partitioning algorithm, the global batch size does not change during resumption of \
             training."
        )));
    }
    let inner_spec = PartitionSpec {
        num_physical_nodes: initial,
        batch_size: global / initial_devices,
        ..*spec
    };
    let inner = OrigLayout::new(&inner_spec, warnings)?;
    let inner_shape = inner.shape();
    // Same total, same workers and global batch, so the batch count carries over unchanged.
    let shape = [
        pn,
        spec.ranks_per_node,
        spec.workers_per_rank,
        inner_shape[3],
        spec.batch_size,
    ];
    Ok(Layout::Relaxed(RelaxedLayout {
        inner,
        inner_shape,
        shape,
    }))
}

impl RelaxedLayout {
    /// `(nodes, ranks_per_node, workers_per_rank, batches_per_worker, batch_size)`.
    pub fn shape(&self) -> [usize; 5] {
        self.shape
    }

    /// The id at `[node, rank, worker, batch, slot]`: find its traversal position in the new
    /// world, then the element at that traversal position in the initial world.
    pub fn get(&self, [p, r, w, b, s]: [usize; 5]) -> i64 {
        let [pn, rpn, wpr, _, bs] = self.shape;
        let pos = (((b * wpr + w) * pn + p) * rpn + r) * bs + s;
        let [ipn, _, _, _, ibs] = self.inner_shape;
        let (rest, si) = (pos / ibs, pos % ibs);
        let (rest, ri) = (rest / rpn, rest % rpn);
        let (rest, pi) = (rest / ipn, rest % ipn);
        let (bi, wi) = (rest / wpr, rest % wpr);
        self.inner.get([pi, ri, wi, bi, si])
    }
}
