//! py1s, py2s and py1br with a count cache: a fresh shuffle reading what another one counted
//! (all of it, or a part) orders exactly as the whole shuffle, and an altered file is ignored.

use std::fs;
use std::os::unix::fs::PermissionsExt;
use std::path::Path;

use super::marks::{decode, encode};
use super::rng::Pcg64;
use super::{get_shuffle_warn, CountCache, CountCacheStats, LazyShuffle, ShuffleAlgo, ShuffleArgs};

const ALGOS: [ShuffleAlgo; 3] = [ShuffleAlgo::Py1s, ShuffleAlgo::Py2s, ShuffleAlgo::Py1br];

/// `(sizes, canonical nodes, block size)`: spans split across nodes, empty shards.
const CASES: [(&[i64], usize, usize); 4] = [
    (&[3, 5, 4, 6, 9, 1, 7], 2, 8),
    (&[100, 250, 90, 300, 41], 3, 64),
    (&[1000; 12], 4, 3000),
    (&[7, 0, 13, 2000, 0, 5], 1, 40),
];

fn private_dir() -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    fs::set_permissions(dir.path(), fs::Permissions::from_mode(0o700)).unwrap();
    dir
}

fn lazy(algo: ShuffleAlgo, case: (&[i64], usize, usize), cache: &CountCache) -> LazyShuffle {
    let (sizes, ncn, block) = case;
    let args = ShuffleArgs {
        algo,
        shard_sizes: sizes,
        num_canonical_nodes: ncn,
        seed: 7,
        epoch: 2,
        block_size: block,
    };
    LazyShuffle::new(&args, Some(cache), &mut Vec::new())
        .unwrap()
        .unwrap()
}

fn whole(algo: ShuffleAlgo, (sizes, ncn, block): (&[i64], usize, usize)) -> Vec<i64> {
    get_shuffle_warn(algo, sizes, ncn, 7, 2, block, &mut Vec::new()).unwrap()
}

/// A fresh shuffle over `cache` asked for the positions `[0, upto)` in pieces of 7: checked
/// against the whole shuffle; what it did with the cache.
fn walk(
    algo: ShuffleAlgo,
    case: (&[i64], usize, usize),
    cache: &CountCache,
    upto: i64,
) -> CountCacheStats {
    let want = whole(algo, case);
    let mut shuffle = lazy(algo, case, cache);
    for start in (0..upto).step_by(7) {
        let positions: Vec<i64> = (start..(start + 7).min(upto)).collect();
        let got = shuffle.values_at(&positions).unwrap();
        let at: Vec<i64> = positions.iter().map(|&p| want[p as usize]).collect();
        assert_eq!(got, at, "{algo} {case:?} at {start}");
    }
    shuffle.count_cache_stats().cloned().unwrap()
}

fn files(dir: &Path) -> Vec<String> {
    let mut names: Vec<String> = fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    names.sort();
    names
}

#[test]
fn marks_read_back_exactly_and_a_changed_byte_is_refused() {
    let mut rng = Pcg64::new(9);
    let mut marks = Vec::new();
    for len in [0, 1, 5, 300, 7] {
        marks.push(rng.clone());
        rng.skip_shuffle(len);
        rng.next_u32(); // some with a buffered half
    }
    let inc = rng.words().1;
    let bytes = encode(42, inc, &marks, &rng);
    let (back, after) = decode(&bytes, 42, inc).unwrap();
    let words = |v: &[Pcg64]| v.iter().map(Pcg64::words).collect::<Vec<_>>();
    assert_eq!(words(&back), words(&marks));
    assert_eq!(after.words(), rng.words());
    assert!(decode(&bytes, 43, inc).is_none(), "another key");
    assert!(decode(&bytes, 42, inc + 2).is_none(), "another generator");
    assert!(
        decode(&bytes[..bytes.len() - 1], 42, inc).is_none(),
        "short"
    );
    for at in [0, 20, 60, bytes.len() - 1] {
        let mut bad = bytes.clone();
        bad[at] ^= 1;
        assert!(decode(&bad, 42, inc).is_none(), "byte {at}");
    }
}

#[test]
fn a_fresh_shuffle_reads_what_another_counted_and_orders_the_same() {
    for algo in ALGOS {
        for case in CASES {
            let dir = private_dir();
            let cache = CountCache::new(dir.path().to_path_buf(), 1);
            let total: i64 = case.0.iter().sum();
            // The first counts half the epoch and keeps it; the second reads that half and
            // counts the rest (kept where it grew the file enough); the third reads what was
            // kept.
            let first = walk(algo, case, &cache, total / 2);
            assert!(
                first.saved_nodes > 0 && first.problem.is_none(),
                "{algo} {first:?}"
            );
            let second = walk(algo, case, &cache, total);
            assert_eq!(second.loaded_nodes, first.saved_nodes, "{algo} {case:?}");
            let third = walk(algo, case, &cache, total);
            let kept = second.saved_nodes.max(first.saved_nodes);
            assert_eq!(third.loaded_nodes, kept, "{algo} {case:?}");
            assert!(third.problem.is_none(), "{algo} {third:?}");
            // One file per count (py2s's run layout has its own), no temp or lock file left.
            let names = files(dir.path());
            let want = if algo == ShuffleAlgo::Py2s { 2 } else { 1 };
            assert_eq!(names.len(), want, "{names:?}");
            assert!(names.iter().all(|n| n.starts_with(&format!("{algo}-"))
                && Path::new(n).extension().is_some_and(|e| e == "bin")));
        }
    }
}

#[test]
fn an_altered_file_is_ignored_and_the_order_kept() {
    for algo in ALGOS {
        let case = CASES[2];
        let dir = private_dir();
        let cache = CountCache::new(dir.path().to_path_buf(), 1);
        let total: i64 = case.0.iter().sum();
        walk(algo, case, &cache, total);
        for name in files(dir.path()) {
            let path = dir.path().join(name);
            let mut bytes = fs::read(&path).unwrap();
            let at = bytes.len() / 2;
            bytes[at] ^= 8;
            fs::write(&path, &bytes).unwrap();
        }
        let stats = walk(algo, case, &cache, total);
        let problem = stats.problem.unwrap_or_default();
        assert!(
            problem.contains("does not hold this epoch's draws"),
            "{algo}: {problem}"
        );
        assert_eq!(stats.loaded_nodes, 0, "{algo}");
    }
}

#[test]
fn a_directory_others_can_write_is_not_used() {
    for algo in ALGOS {
        let dir = private_dir();
        fs::set_permissions(dir.path(), fs::Permissions::from_mode(0o777)).unwrap();
        let cache = CountCache::new(dir.path().to_path_buf(), 1);
        let total: i64 = CASES[1].0.iter().sum();
        let stats = walk(algo, CASES[1], &cache, total);
        assert!(
            stats
                .problem
                .is_some_and(|p| p.contains("only it can write")),
            "{algo}"
        );
        assert!(files(dir.path()).is_empty(), "{algo}");
    }
}

#[test]
fn py2s_reports_its_run_layout_file_too() {
    let case = CASES[2];
    let dir = private_dir();
    let cache = CountCache::new(dir.path().to_path_buf(), 1);
    let total: i64 = case.0.iter().sum();
    walk(ShuffleAlgo::Py2s, case, &cache, total);
    let run = files(dir.path())
        .into_iter()
        .find(|n| n.starts_with("py2s-run-"))
        .unwrap();
    let path = dir.path().join(&run);
    let mut bytes = fs::read(&path).unwrap();
    let at = bytes.len() / 2;
    bytes[at] ^= 8;
    fs::write(&path, &bytes).unwrap();
    // The epoch's file is read; only the run layout's is refused, and that is reported.
    let stats = walk(ShuffleAlgo::Py2s, case, &cache, total);
    assert!(stats.loaded_nodes >= 1, "{stats:?}");
    let problem = stats.problem.unwrap_or_default();
    assert!(problem.contains(&run), "{problem}");
    assert!(
        problem.contains("does not hold this run's layout draws"),
        "{problem}"
    );
}
