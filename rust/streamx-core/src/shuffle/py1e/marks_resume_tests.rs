//! Resume marks: a plan seeded from the marks a counted epoch's file gives orders exactly as
//! the whole shuffle, without counting, from the resume point on; a piece before a mark counts
//! the node (same order); marks of another epoch, altered or cut short are ignored.

use std::fs;
use std::os::unix::fs::PermissionsExt;

use super::draws_store::{CountCache, CountCacheStats};
use super::lazy::LazyPy1e;
use super::resume_marks::from_count_cache;
use crate::shuffle::spans::node_bounds;
use crate::shuffle::{get_shuffle_warn, ShuffleAlgo};

/// `(sizes, canonical nodes, block size)`: many spans a node so that marks fall mid-node,
/// blocks smaller than spans (no shifts) and larger, nodes splitting a shard.
const CASES: [(&[i64], usize, usize); 4] = [
    (&[1000; 40], 2, 3000),
    (&[97; 300], 3, 800),
    (&[5000, 10, 4000, 33, 7000, 1, 2500], 2, 2048),
    (&[400; 50], 1, 128),
];

/// Nodes long enough that marks fall mid-node (past a pick's slack of 4096 positions).
const LONG: [(&[i64], usize, usize); 2] = [(&[50; 1000], 1, 400), (&[333; 120], 2, 1000)];

fn private_dir() -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    fs::set_permissions(dir.path(), fs::Permissions::from_mode(0o700)).unwrap();
    dir
}

fn whole(case: (&[i64], usize, usize), epoch: u64) -> Vec<i64> {
    let (sizes, ncn, block) = case;
    get_shuffle_warn(
        ShuffleAlgo::Py1e,
        sizes,
        ncn,
        7,
        epoch,
        block,
        &mut Vec::new(),
    )
    .unwrap()
}

/// The marks for a resume at `sample_in_epoch` of epoch `epoch`, from a directory where a
/// plan counted (and kept) every node.
fn marks(case: (&[i64], usize, usize), epoch: u64, sample_in_epoch: u64) -> Vec<u8> {
    let (sizes, ncn, block) = case;
    let dir = private_dir();
    let cache = CountCache::new(dir.path().to_path_buf(), 0);
    plan(case, epoch, &cache).pick(ncn - 1, &[0]).unwrap();
    let seeds = (7, 7 + u128::from(epoch));
    from_count_cache(sizes, ncn, seeds, block, dir.path(), sample_in_epoch).unwrap()
}

/// The lazy plan of `case`'s epoch `epoch` (seed 7) over `cache`.
fn plan(case: (&[i64], usize, usize), epoch: u64, cache: &CountCache) -> LazyPy1e {
    let (sizes, ncn, block) = case;
    let seeds = (7, 7 + u128::from(epoch));
    LazyPy1e::new(
        sizes,
        ncn,
        seeds.0,
        seeds.1,
        block,
        Some(cache),
        &mut vec![],
    )
    .unwrap()
}

/// Each node's order from `from[node]` on, in pieces, by a fresh plan given `marks` in an
/// empty cache directory, checked against the whole shuffle; what the plan did.
fn resumed(
    case: (&[i64], usize, usize),
    epoch: u64,
    marks: &[u8],
    from: &dyn Fn(usize) -> usize,
) -> CountCacheStats {
    let (sizes, ncn, _) = case;
    let want = whole(case, epoch);
    let dir = private_dir();
    let cache = CountCache {
        marks: marks.to_vec(),
        ..CountCache::new(dir.path().to_path_buf(), 0)
    };
    let mut lazy = plan(case, epoch, &cache);
    let bounds = node_bounds(sizes.iter().sum(), ncn);
    for node in (0..ncn).rev() {
        let (lo, hi) = (bounds[node] as usize, bounds[node + 1] as usize);
        let ranks: Vec<usize> = (from(node).min(hi - lo)..hi - lo).collect();
        for piece in ranks.chunks(701) {
            let got = lazy.pick(node, piece).unwrap();
            let at: Vec<i64> = piece.iter().map(|&r| want[lo + r]).collect();
            assert_eq!(got, at, "{sizes:?} node {node} ranks {}..", piece[0]);
        }
    }
    lazy.count_cache_stats().unwrap().clone()
}

/// From the resume point on, every node is laid out from its mark: the same order, and no
/// node counted (a count would have been written: the plan keeps every count here).
#[test]
fn a_plan_seeded_from_marks_orders_as_the_whole_shuffle_without_counting() {
    for case in CASES.into_iter().chain(LONG) {
        let total: i64 = case.0.iter().sum();
        let ncn = case.1;
        for epoch in 0..2 {
            for half in [1, 2, 3] {
                let sample_in_epoch = (total as u64) * half / 4;
                let marks = marks(case, epoch, sample_in_epoch);
                let rank = (sample_in_epoch / ncn as u64) as usize;
                let stats = resumed(case, epoch, &marks, &|_| rank);
                assert_eq!(stats.seeded_nodes, ncn, "{case:?}");
                assert_eq!((stats.saved_nodes, stats.problem), (0, None), "{case:?}");
            }
        }
    }
}

/// A piece before a mark (here: every node from rank 0) counts the node instead: same order.
#[test]
fn a_piece_before_the_mark_counts_the_node() {
    let case = LONG[1];
    let marks = marks(case, 1, 30_000);
    let stats = resumed(case, 1, &marks, &|_| 0);
    assert_eq!((stats.seeded_nodes, stats.saved_nodes), (2, 2));
}

/// Marks of another epoch, or altered or cut short, seed nothing: counted, same order, and
/// the reason kept.
#[test]
fn foreign_or_damaged_marks_are_ignored() {
    let case = CASES[0];
    let good = marks(case, 1, 20_000);
    let mut altered = good.clone();
    altered[60] ^= 1;
    let other_epoch = marks(case, 0, 20_000);
    let other_nodes = marks((case.0, 1, case.2), 1, 20_000);
    for bad in [
        &other_epoch,
        &other_nodes,
        &altered,
        &good[..good.len() - 1],
        &b"x"[..],
    ] {
        let stats = resumed(case, 1, bad, &|_| 10_000);
        assert_eq!((stats.seeded_nodes, stats.saved_nodes), (0, 2));
        let problem = stats.problem.unwrap();
        assert!(problem.contains("not this epoch's: ignored"), "{problem}");
    }
}

/// A plan that read node 0 only keeps node 0's draws: its marks seed that node alone. A count
/// of every node ahead (writing nothing on the way: its writes' bound is above the epoch)
/// writes the rest at its end, and the marks then seed every node, in the same order.
#[test]
fn counting_every_node_ahead_marks_them_all() {
    for case in CASES.into_iter().chain(LONG).filter(|c| c.1 > 1) {
        let (sizes, ncn, block) = case;
        let total: i64 = sizes.iter().sum();
        let sample_in_epoch = total as u64 / 2;
        let rank = (sample_in_epoch / ncn as u64) as usize;
        let dir = private_dir();
        let seeds = (7, 8);
        let node_zero = CountCache::new(dir.path().to_path_buf(), 0);
        plan(case, 1, &node_zero).pick(0, &[0]).unwrap();
        let one = from_count_cache(sizes, ncn, seeds, block, dir.path(), sample_in_epoch);
        assert_eq!(resumed(case, 1, &one.unwrap(), &|_| rank).seeded_nodes, 1);

        let ahead = CountCache::new(dir.path().to_path_buf(), u64::MAX);
        let mut lazy = plan(case, 1, &ahead);
        lazy.count_every_node().unwrap();
        let stats = lazy.count_cache_stats().unwrap();
        assert_eq!(
            (stats.loaded_nodes, stats.saved_nodes),
            (1, ncn),
            "{case:?}"
        );
        let all = from_count_cache(sizes, ncn, seeds, block, dir.path(), sample_in_epoch);
        let stats = resumed(case, 1, &all.unwrap(), &|_| rank);
        assert_eq!(
            (stats.seeded_nodes, stats.saved_nodes),
            (ncn, 0),
            "{case:?}"
        );

        // Counted again, nothing is rewritten: the file holds every node.
        let mut again = plan(case, 1, &ahead);
        again.count_every_node().unwrap();
        let stats = again.count_cache_stats().unwrap();
        assert_eq!(
            (stats.loaded_nodes, stats.saved_nodes),
            (ncn, 0),
            "{case:?}"
        );
    }
}
