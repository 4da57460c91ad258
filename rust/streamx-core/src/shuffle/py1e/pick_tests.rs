//! The ranks picked from the positions first ([`super::pick`]) are the whole node's order at
//! those ranks: random rank sets, ranks at span edges and at the node's ends, spans without
//! shifts, sample ids past `u32::MAX`, and bounds that must widen many times.

use super::node_draws::{count_node, NodeDraws};
use super::pick::{pick_ranks, pick_with};
use super::sort::{jittered_positions, node_samples, sort_by_position};
use super::window::Shifts;
use crate::shuffle::rng::Pcg64;
use crate::shuffle::spans::Span;

/// Spans of `sizes` whose sample ids start at `first`.
fn spans_from(first: i64, sizes: &[i64]) -> Vec<Span> {
    let mut at = first;
    sizes
        .iter()
        .map(|&size| {
            at += size;
            (at - size, at)
        })
        .collect()
}

/// The node's whole order, and its counted draws, from the same generator.
fn whole_and_draws(seed: u128, node: &[Span], bounds: (i64, i64)) -> (Vec<i64>, NodeDraws) {
    let rng = Pcg64::new(seed);
    let mut whole = rng.clone();
    let samples = node_samples(&mut whole, node);
    let positions = jittered_positions(&mut whole, node, bounds, &mut false).unwrap();
    let draws = count_node(&mut rng.clone(), node, bounds).unwrap();
    (sort_by_position(&samples, &positions), draws)
}

/// Rank sets to try on a node of `n` samples with span starts `starts`.
fn rank_sets(n: usize, starts: &[usize], rng: &mut Pcg64) -> Vec<Vec<usize>> {
    let mut sets = vec![
        (0..n.min(5)).collect(),
        (n.saturating_sub(5)..n).collect(),
        vec![0, n - 1],
        (0..n).collect(),
    ];
    // Each span's first and last index, alone and together.
    for (k, &at) in starts.iter().enumerate() {
        let end = starts.get(k + 1).copied().unwrap_or(n);
        if at < end {
            sets.push(vec![at]);
            sets.push(vec![end - 1]);
            sets.push(if at + 1 < end {
                vec![at, end - 1]
            } else {
                vec![at]
            });
        }
    }
    for count in [1, 2, 7, 40, 300] {
        for _ in 0..4 {
            let mut set: Vec<usize> = (0..count)
                .map(|_| rng.bounded(n as u64 - 1) as usize)
                .collect();
            set.sort_unstable();
            set.dedup();
            sets.push(set);
        }
    }
    sets
}

/// `(first sample id, span sizes, block bounds)`: shifts on every span; none (blocks below
/// every span: cutoffs clamp to zero); some spans with, some without; empty and one-sample
/// spans; ids past `u32::MAX`; one span holding the whole node.
const NODES: [(i64, &[i64], (i64, i64)); 7] = [
    (0, &[40, 7, 0, 120, 1, 33, 64, 250, 3], (30, 200)),
    (0, &[500, 300, 800], (10, 50)),
    (0, &[50, 400, 20, 600, 35], (100, 300)),
    (1 << 33, &[90, 0, 210, 1, 55, 300], (60, 400)),
    (u32::MAX as i64 - 100, &[150, 150, 150], (100, 500)),
    (17, &[2000], (1000, 5000)),
    (5, &[300; 20], (2000, 4000)),
];

#[test]
fn picks_equal_the_whole_node_order() {
    for (case, &(first, sizes, bounds)) in NODES.iter().enumerate() {
        let node = spans_from(first, sizes);
        let mut rng = Pcg64::new(99);
        for seed in 0..4_u128 {
            let (whole, draws) = whole_and_draws(seed + 10 * case as u128, &node, bounds);
            let n = whole.len();
            for ranks in rank_sets(n, &draws.starts, &mut rng) {
                let want: Vec<i64> = ranks.iter().map(|&r| whole[r]).collect();
                let got = pick_ranks(&draws, &node, &ranks).unwrap();
                assert_eq!(got, want, "case {case} seed {seed} ranks {ranks:?}");
                // Bounds tried right at the ranks: they widen until they hold them.
                let got = pick_with(&draws, &node, &ranks, 0).unwrap();
                assert_eq!(got, want, "case {case} seed {seed} slack 0 ranks {ranks:?}");
            }
        }
    }
}

/// Spans whose shifts are all zero order by index, and the shuffles alone decide the ids.
#[test]
fn zero_shifts_leave_the_shuffled_spans_in_place() {
    let node = spans_from(3, &[500, 300, 800]);
    let (whole, draws) = whole_and_draws(5, &node, (10, 50));
    assert!(draws.shifts.iter().all(Shifts::is_zero));
    let mut rng = Pcg64::new(5);
    let shuffled = node_samples(&mut rng, &node);
    assert_eq!(whole, shuffled);
    let ranks = [0, 499, 500, 799, 800, 1599];
    let got = pick_ranks(&draws, &node, &ranks).unwrap();
    assert_eq!(got, ranks.map(|r| shuffled[r]));
}
