//! The count cache's lock: a plan that waited for another holder reads the node it wrote
//! instead of counting it, a holder that keeps the lock too long is counted around, and a
//! removed lock file is never held by two processes at once.

use std::fs;
use std::os::unix::fs::PermissionsExt;
use std::path::Path;
use std::thread;
use std::time::Duration;

use super::draws_file::Key;
use super::draws_store::{self, CountCache, CountCacheStats};
use super::lazy::LazyPy1e;
use crate::shuffle::{get_shuffle_warn, ShuffleAlgo};

const SIZES: &[i64] = &[1000, 700, 1300, 900, 1100, 500];
const NODES: usize = 3;
const BLOCK: usize = 800;

fn private_dir() -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    fs::set_permissions(dir.path(), fs::Permissions::from_mode(0o700)).unwrap();
    dir
}

fn digest() -> u128 {
    Key::new(SIZES, NODES, 7, 7, BLOCK).digest
}

fn names(dir: &Path) -> Vec<String> {
    let mut names: Vec<String> = fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    names.sort();
    names
}

/// Every node's order from a fresh plan over `cache`, checked against the whole shuffle; what
/// the plan did with the cache.
fn plan(cache: &CountCache) -> CountCacheStats {
    let whole = get_shuffle_warn(
        ShuffleAlgo::Py1e,
        SIZES,
        NODES,
        7,
        0,
        BLOCK,
        &mut Vec::new(),
    );
    let whole = whole.unwrap();
    let mut lazy = LazyPy1e::new(SIZES, NODES, 7, 7, BLOCK, Some(cache), &mut Vec::new()).unwrap();
    let total: i64 = SIZES.iter().sum();
    let bounds = crate::shuffle::spans::node_bounds(total, NODES);
    for node in (0..NODES).rev() {
        let (lo, hi) = (bounds[node] as usize, bounds[node + 1] as usize);
        let ranks: Vec<usize> = (0..hi - lo).collect();
        assert_eq!(lazy.pick(node, &ranks).unwrap(), whole[lo..hi]);
    }
    lazy.count_cache_stats().unwrap().clone()
}

#[test]
fn a_plan_that_waited_reads_what_the_holder_wrote() {
    let dir = private_dir();
    let cache = CountCache::new(dir.path().to_path_buf(), 0);
    let held = draws_store::lock(dir.path(), digest(), Duration::ZERO).unwrap();
    let waiter = {
        let cache = cache.clone();
        thread::spawn(move || plan(&cache))
    };
    // What the holder writes: the epoch's draws, counted in another directory.
    let elsewhere = private_dir();
    let counted = plan(&CountCache::new(elsewhere.path().to_path_buf(), 0));
    assert_eq!((counted.loaded_nodes, counted.saved_nodes), (0, NODES));
    let name = draws_store::file_name(digest());
    fs::copy(elsewhere.path().join(&name), dir.path().join(&name)).unwrap();
    drop(held);
    let stats = waiter.join().unwrap();
    assert_eq!(
        stats,
        CountCacheStats {
            loaded_nodes: NODES,
            ..Default::default()
        }
    );
    assert_eq!(names(dir.path()), [name]);
}

#[test]
fn a_lock_held_too_long_is_counted_around() {
    let dir = private_dir();
    let mut cache = CountCache::new(dir.path().to_path_buf(), 0);
    cache.wait = Duration::from_millis(20);
    let held = draws_store::lock(dir.path(), digest(), Duration::ZERO).unwrap();
    let stats = plan(&cache);
    let problem = stats.problem.unwrap();
    assert!(problem.contains("held by another process"), "{problem}");
    assert_eq!((stats.loaded_nodes, stats.saved_nodes), (0, NODES));
    drop(held);
    assert_eq!(names(dir.path()), [draws_store::file_name(digest())]);
    let again = plan(&cache);
    assert_eq!(
        (again.loaded_nodes, again.saved_nodes, again.problem),
        (NODES, 0, None)
    );
}

#[test]
fn a_removed_lock_file_is_not_held_twice() {
    let dir = private_dir();
    let first = draws_store::lock(dir.path(), digest(), Duration::ZERO).unwrap();
    let waiter = {
        let path = dir.path().to_path_buf();
        thread::spawn(move || draws_store::lock(&path, digest(), Duration::from_secs(60)))
    };
    drop(first); // removes the file the waiter may be waiting on
    let second = waiter.join().unwrap().unwrap();
    let third = draws_store::lock(dir.path(), digest(), Duration::ZERO);
    assert_eq!(
        third.err().map(|e| e.kind()),
        Some(std::io::ErrorKind::TimedOut)
    );
    drop(second);
    assert!(names(dir.path()).is_empty());
}

#[test]
fn a_lock_file_that_is_a_symlink_is_refused() {
    let dir = private_dir();
    let target = dir.path().join("target");
    fs::write(&target, b"x").unwrap();
    let link = dir.path().join(draws_store::lock_name(digest()));
    std::os::unix::fs::symlink(&target, &link).unwrap();
    assert!(draws_store::lock(dir.path(), digest(), Duration::ZERO).is_err());
    assert_eq!(fs::read(&target).unwrap(), b"x");
}
