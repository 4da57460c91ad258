//! `naive`: one global permutation per epoch, ignoring shards and canonical nodes.

use super::rng::Pcg64;

/// `default_rng(seed + epoch).permutation(total)`.
pub(crate) fn shuffle(total: usize, epoch_seed: u128) -> Vec<i64> {
    Pcg64::new(epoch_seed).permutation(total)
}
