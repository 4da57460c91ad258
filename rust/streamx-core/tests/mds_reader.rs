//! `ShardSet`: global ids over Python-written datasets, lazy open, decompress-on-open,
//! not-found signalling, eviction and concurrent use.

mod mds_common;

use std::sync::Arc;

use mds_common::{copy_fixture, descs_from_index, example_columns, fixture};
use streamx_core::reader::ShardSet;
use streamx_core::Error;

/// Checks every sample of a fixture dataset via ranges. The split datasets were written with
/// `id = i` for pair i; the two-sample ones with ids 7 and -1.
fn check_all(set: &ShardSet) {
    let two = set.num_samples() == 2;
    let mut ranges = Vec::new();
    for global in 0..set.num_samples() {
        let shard = set.sample_columns(global, &mut ranges).unwrap();
        let cols: Vec<&[u8]> = ranges.iter().map(|r| &shard.bytes()[r.clone()]).collect();
        let id = if two {
            [7, -1][global as usize]
        } else {
            (global / 2) as i64
        };
        let expected = example_columns(id, global % 2 == 1);
        assert_eq!(
            cols,
            expected.iter().map(Vec::as_slice).collect::<Vec<_>>(),
            "sample {global}"
        );
    }
}

#[test]
fn locate_skips_the_empty_shard() {
    let set = ShardSet::new(descs_from_index(&fixture("ds_split")));
    assert_eq!((set.num_shards(), set.num_samples()), (11, 10));
    assert_eq!(set.locate(0).unwrap(), (1, 0));
    assert_eq!(set.locate(9).unwrap(), (10, 0));
    assert!(matches!(
        set.locate(10),
        Err(Error::IndexOutOfRange { index: 10, len: 10 })
    ));
    check_all(&set);
    assert!(!set.is_open(0), "the empty shard is never opened");
}

#[test]
fn multi_sample_shards() {
    let set = ShardSet::new(descs_from_index(&fixture("ds_split400")));
    let located: Vec<_> = (0..10).map(|g| set.locate(g).unwrap()).collect();
    assert_eq!(located[..4], [(0, 0), (0, 1), (0, 2), (1, 0)]);
    assert_eq!(located[9], (3, 0));
    check_all(&set);
}

#[test]
fn compressed_shards_are_decompressed_on_open() {
    let dir = copy_fixture("ds_zstd");
    let set = ShardSet::new(descs_from_index(dir.path()));
    let raw = dir.path().join("shard.00000.mds");
    assert!(!raw.exists());
    check_all(&set);
    assert!(raw.exists() && dir.path().join("shard.00000.mds.zstd").exists());
    assert_eq!(
        std::fs::read_dir(dir.path()).unwrap().count(),
        3,
        "no temp files left"
    );
}

#[test]
fn missing_files_are_not_found_for_the_raw_path() {
    let dir = copy_fixture("ds_zstd");
    std::fs::remove_file(dir.path().join("shard.00000.mds.zstd")).unwrap();
    let set = ShardSet::new(descs_from_index(dir.path()));
    let raw = dir.path().join("shard.00000.mds");
    assert!(matches!(set.sample_range(0), Err(Error::NotFound(p)) if p == raw));
    // Once the file arrives (the Python layer downloaded it), the same set reads it.
    std::fs::copy(fixture("ds_plain/shard.00000.mds"), &raw).unwrap();
    let mut descs = descs_from_index(dir.path());
    descs[0].zip_path = None;
    check_all(&ShardSet::new(descs));
}

#[test]
fn evict_drops_the_map_but_not_outstanding_views() {
    let dir = copy_fixture("ds_plain");
    let set = ShardSet::new(descs_from_index(dir.path()));
    let (held, range) = set.sample_range(1).unwrap();
    assert!(set.is_open(0));
    set.evict(0);
    assert!(!set.is_open(0));
    std::fs::remove_file(dir.path().join("shard.00000.mds")).unwrap();
    assert_eq!(
        held.bytes()[range].len(),
        32,
        "the evicted map stays valid while held"
    );
    assert!(matches!(set.sample_range(0), Err(Error::NotFound(_))));
}

#[test]
fn sample_count_must_match_the_index() {
    let mut descs = descs_from_index(&fixture("ds_plain"));
    descs[0].samples = 3;
    let set = ShardSet::new(descs);
    match set.locate(2).and_then(|(s, _)| set.shard(s)) {
        Err(Error::CorruptShard { reason, .. }) => assert!(reason.contains("index says 3")),
        other => panic!("{other:?}"),
    }
}

#[test]
fn wrong_layout_errors_name_path_and_sample() {
    let mut descs = descs_from_index(&fixture("ds_plain"));
    descs[0].layout = streamx_core::mds::ColumnLayout::new(vec![None, Some(100)]);
    let set = ShardSet::new(descs);
    match set.sample_columns(1, &mut Vec::new()) {
        Err(Error::CorruptShard { path, reason }) => {
            assert!(path.ends_with("shard.00000.mds"));
            assert!(
                reason.contains("sample 1") && reason.contains("global sample 1"),
                "{reason}"
            );
        }
        other => panic!("{other:?}"),
    }
}

#[test]
fn concurrent_readers_share_one_map() {
    let dir = copy_fixture("ds_zstd");
    let set = Arc::new(ShardSet::new(descs_from_index(dir.path())));
    std::thread::scope(|s| {
        for _ in 0..4 {
            let set = Arc::clone(&set);
            s.spawn(move || {
                for _ in 0..200 {
                    check_all(&set);
                }
            });
        }
    });
    let a = set.shard(0).unwrap();
    let b = set.shard(0).unwrap();
    assert!(Arc::ptr_eq(&a, &b));
}
