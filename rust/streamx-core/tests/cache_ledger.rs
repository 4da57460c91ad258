//! Cache ledger integration tests, including several processes sharing one ledger and a
//! process killed mid-download. Child processes re-run this test binary with
//! `STREAMX_LEDGER_CHILD` set, which `child_entry` dispatches on.

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use streamx_core::cache::{Decision, Ledger, ShardState};

const CHILD_ENV: &str = "STREAMX_LEDGER_CHILD";
const HAMMER_SHARDS: usize = 64;
const HAMMER_LIMIT: u64 = 4_000;
const HAMMER_CHILDREN: usize = 4;
const MAX_SHARD: u64 = 300;

fn shard_files(dir: &Path, n: usize) -> Vec<Vec<PathBuf>> {
    (0..n)
        .map(|i| vec![dir.join(format!("shard.{i:05}.mds"))])
        .collect()
}

fn hammer_size(shard: usize) -> u64 {
    100 + (shard as u64 * 37) % (MAX_SHARD - 100)
}

fn spawn_child(mode: &str, dir: &Path) -> std::process::Child {
    Command::new(std::env::current_exe().unwrap())
        .args(["child_entry", "--exact", "--nocapture", "--test-threads=1"])
        .env(CHILD_ENV, format!("{mode}|{}", dir.display()))
        .stdout(Stdio::null())
        .spawn()
        .unwrap()
}

#[test]
fn child_entry() {
    let Ok(spec) = std::env::var(CHILD_ENV) else {
        return;
    };
    let (mode, dir) = spec.split_once('|').unwrap();
    let dir = PathBuf::from(dir);
    match mode {
        "hammer" => hammer(&dir),
        "crash" => crash_holder(&dir),
        other => panic!("unknown child mode {other}"),
    }
}

/// Random downloads, reads and aborts against one shared ledger, checking invariants as it goes.
fn hammer(dir: &Path) {
    let ledger = Ledger::open(dir.join("ledger"), HAMMER_SHARDS, Some(HAMMER_LIMIT))
        .unwrap()
        .with_shard_files(shard_files(dir, HAMMER_SHARDS))
        .unwrap();
    let files = shard_files(dir, HAMMER_SHARDS);
    let mut rng = u64::from(std::process::id()) | 1;
    for _ in 0..3_000 {
        rng ^= rng << 13;
        rng ^= rng >> 7;
        rng ^= rng << 17;
        let shard = (rng % HAMMER_SHARDS as u64) as usize;
        let size = hammer_size(shard);
        // Pin first: a pinned local shard cannot be evicted while it is read.
        ledger.pin(shard).unwrap();
        match ledger.begin_download(shard, size).unwrap() {
            Decision::AlreadyLocal => {
                let len = std::fs::metadata(&files[shard][0])
                    .expect("local shard file")
                    .len();
                assert_eq!(len, size, "shard {shard} has the wrong size");
                ledger.touch(shard).unwrap();
            }
            Decision::Download { .. } => {
                let path = &files[shard][0];
                std::fs::write(path, vec![7u8; size as usize]).unwrap();
                if rng % 10 == 0 {
                    std::fs::remove_file(path).unwrap();
                    ledger.abort_download(shard).unwrap();
                } else {
                    ledger.finish_download(shard, size).unwrap();
                }
            }
            Decision::WaitForOther { .. } => std::thread::sleep(Duration::from_micros(50)),
        }
        ledger.unpin(shard).unwrap();
        let bound = HAMMER_LIMIT + HAMMER_CHILDREN as u64 * MAX_SHARD;
        assert!(
            ledger.usage() <= bound,
            "usage {} over {bound}",
            ledger.usage()
        );
    }
}

#[test]
fn processes_share_one_budget() {
    let dir = tempfile::tempdir().unwrap();
    let children: Vec<_> = (0..HAMMER_CHILDREN)
        .map(|_| spawn_child("hammer", dir.path()))
        .collect();
    for mut child in children {
        assert!(child.wait().unwrap().success(), "a hammer child failed");
    }
    let ledger =
        Ledger::open(dir.path().join("ledger"), HAMMER_SHARDS, Some(HAMMER_LIMIT)).unwrap();
    let files = shard_files(dir.path(), HAMMER_SHARDS);
    let mut local_bytes = 0;
    for (shard, paths) in files.iter().enumerate() {
        assert_eq!(ledger.pins(shard).unwrap(), 0);
        match ledger.state(shard).unwrap() {
            ShardState::Local => {
                assert_eq!(
                    std::fs::metadata(&paths[0]).unwrap().len(),
                    hammer_size(shard)
                );
                local_bytes += ledger.bytes(shard).unwrap();
            }
            ShardState::Remote => assert!(!paths[0].exists(), "evicted shard {shard} left a file"),
            ShardState::Preparing => panic!("shard {shard} left preparing"),
        }
    }
    assert_eq!(ledger.usage(), local_bytes);
    assert!(
        local_bytes <= HAMMER_LIMIT,
        "{local_bytes} bytes cached over the limit"
    );
}

/// Holds shard 0 mid-download and a pin on local shard 1, then waits to be killed.
fn crash_holder(dir: &Path) {
    let ledger = Ledger::open(dir.join("ledger"), 4, Some(250)).unwrap();
    assert!(matches!(
        ledger.begin_download(0, 100).unwrap(),
        Decision::Download { .. }
    ));
    ledger.sync(1, Some(100)).unwrap();
    ledger.pin(1).unwrap();
    std::fs::write(dir.join("ready"), b"").unwrap();
    std::thread::sleep(Duration::from_secs(120));
}

#[test]
fn a_killed_process_leaves_nothing_behind() {
    let dir = tempfile::tempdir().unwrap();
    let mut child = spawn_child("crash", dir.path());
    let start = Instant::now();
    while !dir.path().join("ready").exists() {
        assert!(
            start.elapsed() < Duration::from_secs(60),
            "child never got ready"
        );
        std::thread::sleep(Duration::from_millis(5));
    }
    let ledger = Ledger::open(dir.path().join("ledger"), 4, Some(250)).unwrap();
    assert!(matches!(
        ledger.begin_download(0, 100).unwrap(),
        Decision::WaitForOther { .. }
    ));
    // Shard 1 is pinned by a live process, so room cannot be made: the download overshoots.
    assert_eq!(
        ledger.begin_download(2, 100).unwrap(),
        Decision::Download { evicted: vec![] }
    );
    assert_eq!(ledger.usage(), 300);
    ledger.abort_download(2).unwrap();

    child.kill().unwrap();
    child.wait().unwrap();
    let ledger = Ledger::open(dir.path().join("ledger"), 4, Some(150)).unwrap();
    assert_eq!(ledger.state(0).unwrap(), ShardState::Remote);
    assert_eq!(ledger.pins(1).unwrap(), 0);
    assert_eq!(ledger.usage(), 100);
    assert_eq!(
        ledger.begin_download(2, 100).unwrap(),
        Decision::Download { evicted: vec![1] }
    );
}

#[test]
fn lru_eviction_deletes_victim_files() {
    let dir = tempfile::tempdir().unwrap();
    let files = shard_files(dir.path(), 4);
    let ledger = Ledger::open(dir.path().join("l"), 4, Some(250))
        .unwrap()
        .with_shard_files(files.clone())
        .unwrap();
    for (shard, paths) in files.iter().enumerate().take(2) {
        assert_eq!(
            ledger.begin_download(shard, 100).unwrap(),
            Decision::Download { evicted: vec![] }
        );
        std::fs::write(&paths[0], [0u8; 100]).unwrap();
        ledger.finish_download(shard, 100).unwrap();
    }
    ledger.touch(0).unwrap();
    assert_eq!(
        ledger.begin_download(0, 100).unwrap(),
        Decision::AlreadyLocal
    );
    assert_eq!(
        ledger.begin_download(2, 100).unwrap(),
        Decision::Download { evicted: vec![1] }
    );
    assert!(!files[1][0].exists());
    assert!(files[0][0].exists());
    ledger.finish_download(2, 120).unwrap();
    assert_eq!(ledger.usage(), 220);
}

#[test]
fn pinned_and_unevictable_shards_stay() {
    let dir = tempfile::tempdir().unwrap();
    let ledger = Ledger::open(dir.path().join("l"), 4, Some(200)).unwrap();
    ledger.sync(0, Some(100)).unwrap();
    ledger.sync(1, Some(100)).unwrap();
    ledger.set_evictable(0..1, false).unwrap();
    ledger.pin(1).unwrap();
    assert_eq!(
        ledger.begin_download(2, 100).unwrap(),
        Decision::Download { evicted: vec![] }
    );
    ledger.abort_download(2).unwrap();
    ledger.unpin(1).unwrap();
    assert_eq!(
        ledger.begin_download(2, 100).unwrap(),
        Decision::Download { evicted: vec![1] }
    );
    assert!(!ledger.is_evictable(0).unwrap());
    assert_eq!(ledger.state(0).unwrap(), ShardState::Local);
}

#[test]
fn ownership_and_shape_are_checked() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("l");
    let ledger = Ledger::open(&path, 2, None).unwrap();
    assert!(ledger.finish_download(0, 1).is_err());
    assert!(ledger.unpin(0).is_err());
    assert!(ledger.touch(2).is_err());
    assert!(Ledger::open(&path, 3, None).is_err());
    // Another thread of this process sees the download as someone else's to wait for.
    assert!(matches!(
        ledger.begin_download(1, 5).unwrap(),
        Decision::Download { .. }
    ));
    std::thread::scope(|s| {
        s.spawn(|| {
            let d = ledger.begin_download(1, 5).unwrap();
            assert!(matches!(d, Decision::WaitForOther { .. }));
        });
    });
    ledger.finish_download(1, 7).unwrap();
    assert_eq!((ledger.usage(), ledger.limit()), (7, None));
}

#[test]
fn try_begin_download_never_goes_over_the_limit() {
    let dir = tempfile::tempdir().unwrap();
    let files = shard_files(dir.path(), 4);
    let ledger = Ledger::open(dir.path().join("l"), 4, Some(250))
        .unwrap()
        .with_shard_files(files.clone())
        .unwrap();
    for (shard, paths) in files.iter().enumerate().take(2) {
        std::fs::write(&paths[0], [0u8; 100]).unwrap();
        ledger.sync(shard, Some(100)).unwrap();
    }
    ledger.pin(0).unwrap();
    ledger.pin(1).unwrap();
    // Both local shards are pinned: a prefetch would overshoot, so it does not begin.
    assert_eq!(ledger.try_begin_download(2, 100).unwrap(), None);
    assert_eq!(ledger.usage(), 200);
    assert_eq!(ledger.state(2).unwrap(), ShardState::Remote);
    assert!(files[0][0].exists() && files[1][0].exists());
    // With one pin gone, the least recently used unpinned shard makes room.
    ledger.unpin(1).unwrap();
    assert_eq!(
        ledger.try_begin_download(2, 100).unwrap(),
        Some(Decision::Download { evicted: vec![1] })
    );
    assert!(!files[1][0].exists());
    assert_eq!(ledger.usage(), 200);
    assert_eq!(
        ledger.try_begin_download(0, 100).unwrap(),
        Some(Decision::AlreadyLocal)
    );
    ledger.unpin(0).unwrap();
}
