//! A partial epoch permutation: only the values at the positions that were asked for.

use super::Parts;
use super::ShuffleAlgo;
use crate::{Error, Result};

/// Part of an epoch's permutation: the values at the positions that were asked for.
///
/// Every algorithm but `naive` keeps canonical node `k`'s samples in positions
/// `total * k / ncn .. total * (k + 1) / ncn`, and its generator draws node after node, so a
/// node nobody reads only needs its draws counted, and in a node that is read only the pieces
/// (spans, blocks) holding wanted positions need laying out.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct PartialShuffle {
    /// Where each part starts, plus the total at the end.
    pub(super) bounds: Vec<i64>,
    /// Per part, the offsets its values are for, or `None` when it holds every position.
    pub(super) offsets: Vec<Option<Vec<usize>>>,
    /// Each part's values, or `None` if it was skipped.
    pub(super) parts: Parts,
}

impl PartialShuffle {
    /// The part (canonical node) that output position `pos` belongs to, for any algorithm but
    /// `naive` (which is one part).
    pub fn part_of(algo: ShuffleAlgo, total: i64, num_canonical_nodes: usize, pos: i64) -> usize {
        if algo == ShuffleAlgo::Naive || total <= 0 {
            return 0;
        }
        let ncn = num_canonical_nodes as i128;
        // The largest k with total * k / ncn <= pos.
        let mut k = ((i128::from(pos) * ncn) / i128::from(total)) as usize;
        while k + 1 < num_canonical_nodes
            && i128::from(total) * (k as i128 + 1) / ncn <= i128::from(pos)
        {
            k += 1;
        }
        k
    }

    /// The value at output position `pos`, if it was computed.
    pub fn get(&self, pos: i64) -> Option<i64> {
        let part = self.bounds.partition_point(|&b| b <= pos).checked_sub(1)?;
        let values = self.parts.get(part)?.as_ref()?;
        let offset = usize::try_from(pos - self.bounds[part]).ok()?;
        let at = match &self.offsets[part] {
            None => offset,
            Some(offsets) => offsets.binary_search(&offset).ok()?,
        };
        values.get(at).copied()
    }

    /// Every computed value, in position order: for a shuffle computed at some positions,
    /// the values at exactly those positions, in the order of the positions.
    pub fn into_values(self) -> Vec<i64> {
        let mut parts = self.parts.into_iter().flatten();
        let first = parts.next().unwrap_or_default();
        parts.fold(first, |mut all, part| {
            all.extend_from_slice(&part);
            all
        })
    }

    /// The whole permutation; every position must have been computed.
    pub fn into_full(self) -> Result<Vec<i64>> {
        if self.offsets.iter().any(Option::is_some) {
            return Err(skipped());
        }
        let mut parts = self.parts.into_iter();
        if parts.len() == 1 {
            return parts.next().flatten().ok_or_else(skipped);
        }
        let total = self.bounds.last().copied().unwrap_or(0) as usize;
        let mut out = Vec::with_capacity(total);
        for part in parts {
            out.extend_from_slice(&part.ok_or_else(skipped)?);
        }
        Ok(out)
    }
}

pub(super) fn skipped() -> Error {
    Error::InvalidArgument("a part of the shuffle that was skipped was asked for".to_string())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::shuffle::{get_shuffle_parts, ShuffleArgs};

    fn iproduct<'a, A, B, C>(
        a: &'a [A],
        b: &'a [B],
        c: &'a [C],
    ) -> impl Iterator<Item = (&'a A, &'a B, &'a C)> {
        a.iter()
            .flat_map(move |x| b.iter().flat_map(move |y| c.iter().map(move |z| (x, y, z))))
    }

    #[test]
    fn partial_shuffles_agree_with_the_whole() {
        let sizes = [7, 0, 13, 2, 40, 1, 0, 25, 9, 11];
        let total: i64 = sizes.iter().sum();
        let algos = [
            ShuffleAlgo::Naive,
            ShuffleAlgo::Py1s,
            ShuffleAlgo::Py2s,
            ShuffleAlgo::Py1br,
            ShuffleAlgo::Py1e,
        ];
        // Blocks smaller than, around and larger than the spans: the warning is certain,
        // random, or impossible for the nodes a partial shuffle does not visit.
        for (algo, ncn, block_size) in iproduct(&algos, &[1, 2, 3, 5, 8], &[4, 12, 30, 200]) {
            let (algo, ncn) = (*algo, *ncn);
            {
                let args = ShuffleArgs {
                    algo,
                    shard_sizes: &sizes,
                    num_canonical_nodes: ncn,
                    seed: 77,
                    epoch: 2,
                    block_size: *block_size,
                };
                let whole = get_shuffle_parts(&args, None, &mut Vec::new()).unwrap();
                let full = whole.clone().into_full().unwrap();
                for mask in 0..(1_u32 << ncn) {
                    // Positions in the masked nodes, thinned to every third one for half of
                    // the masks so partial nodes are covered too.
                    let stride = 1 + mask as usize % 3;
                    let positions: Vec<i64> = (0..total)
                        .filter(|&p| {
                            (mask >> PartialShuffle::part_of(algo, total, ncn, p)) & 1 == 1
                        })
                        .step_by(stride)
                        .collect();
                    let mut warnings = Vec::new();
                    let part = get_shuffle_parts(&args, Some(&positions), &mut warnings).unwrap();
                    let mut expected = Vec::new();
                    get_shuffle_parts(&args, None, &mut expected).unwrap();
                    assert_eq!(warnings, expected);
                    for pos in 0..total {
                        let want = positions
                            .binary_search(&pos)
                            .is_ok()
                            .then(|| full[pos as usize]);
                        assert_eq!(
                            part.get(pos),
                            want,
                            "{algo} ncn={ncn} mask={mask} pos={pos}"
                        );
                    }
                }
            }
        }
    }

    #[test]
    fn partial_shuffles_of_position_runs() {
        // Runs of wanted positions much shorter than a node: py1e lays out only a window
        // around them, as wide as the largest shift the blocks allow.
        let sizes = [3000, 2000, 0, 5000, 400, 1];
        let total: i64 = sizes.iter().sum();
        let runs = [
            (0, 1),
            (total - 1, total),
            (5000, 5003),
            (9000, 10_401),
            (4000, 4100),
        ];
        let algos = [
            ShuffleAlgo::Py1e,
            ShuffleAlgo::Py1s,
            ShuffleAlgo::Py1br,
            ShuffleAlgo::Py2s,
        ];
        for (algo, ncn, block_size) in iproduct(&algos, &[1, 2, 3], &[1000, 4000, 9000, 20_000]) {
            let args = ShuffleArgs {
                algo: *algo,
                shard_sizes: &sizes,
                num_canonical_nodes: *ncn,
                seed: 5,
                epoch: 1,
                block_size: *block_size,
            };
            let mut expected = Vec::new();
            let full = get_shuffle_parts(&args, None, &mut expected)
                .unwrap()
                .into_full()
                .unwrap();
            for &(from, to) in &runs {
                let positions: Vec<i64> = (from..to).collect();
                let mut warnings = Vec::new();
                let part = get_shuffle_parts(&args, Some(&positions), &mut warnings).unwrap();
                assert_eq!(warnings, expected);
                for &pos in &positions {
                    assert_eq!(
                        part.get(pos),
                        Some(full[pos as usize]),
                        "{algo} {ncn} {pos}"
                    );
                }
            }
        }
    }
}
