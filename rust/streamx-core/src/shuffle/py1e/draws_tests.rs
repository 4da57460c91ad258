//! The counted draws' file: read back, it gives exactly what counting gives; a truncated,
//! altered or foreign file is ignored; and a plan reading one orders exactly as one counting.

use std::fs;
use std::os::unix::fs::PermissionsExt;
use std::path::Path;

use super::draws_file::{decode, encode, max_len, Key};
use super::draws_store::{self, CountCache, CountCacheStats};
use super::lazy::LazyPy1e;
use super::node_draws::{count_node, NodeDraws};
use crate::shuffle::py1br::block_bounds;
use crate::shuffle::rng::Pcg64;
use crate::shuffle::spans::NodeSpans;
use crate::shuffle::{get_shuffle_warn, ShuffleAlgo};

/// `(sizes, canonical nodes, block size)`: spans split across nodes, empty shards, blocks
/// smaller and larger than shards (the small-block warning both ways).
const CASES: [(&[i64], usize, usize); 4] = [
    (&[3, 5, 4, 6, 9, 1, 7], 2, 8),
    (&[100, 250, 90, 300, 41], 3, 64),
    (&[1000; 12], 4, 3000),
    (&[7, 0, 13, 2000, 5], 1, 1 << 18),
];

struct Counted {
    spans: NodeSpans,
    key: Key,
    inc: u128,
    nodes: Vec<NodeDraws>,
    after: Pcg64,
}

/// The first `n` nodes of py1e's epoch `epoch` (seed 7) counted.
fn count(sizes: &[i64], ncn: usize, block: usize, epoch: u128, n: usize) -> Counted {
    let spans = NodeSpans::new(sizes, ncn, 7, 7 + epoch);
    let mut rng = spans.epoch_rng.clone();
    let nodes = spans.groups[..n]
        .iter()
        .map(|&(a, b)| count_node(&mut rng, &spans.spans[a..b], block_bounds(block)).unwrap())
        .collect();
    Counted {
        key: Key::new(sizes, ncn, 7, 7 + epoch, block),
        inc: spans.epoch_rng.words().1,
        spans,
        nodes,
        after: rng,
    }
}

impl Counted {
    fn encode(&self) -> Vec<u8> {
        encode(&self.key, self.inc, &self.nodes, &self.after)
    }

    fn decode(&self, bytes: &[u8]) -> Option<(Vec<NodeDraws>, Pcg64)> {
        decode(
            bytes,
            &self.key,
            self.inc,
            &self.spans.spans,
            &self.spans.groups,
        )
    }
}

/// Every word a node's later pieces read, and the generator after the nodes.
fn words(nodes: &[NodeDraws], after: &Pcg64) -> Vec<String> {
    let mut out = vec![format!("{:?}", after.words())];
    for n in nodes {
        out.push(format!(
            "{:?} {} {} {}",
            n.sizes, n.margin, n.total, n.small_block
        ));
        for (shuffle, s) in n.shuffles.iter().zip(&n.shifts) {
            let (low, high) = (s.low.to_bits(), s.high.to_bits());
            let draws = s.draws().words();
            out.push(format!("{:?} {low} {high} {draws:?}", shuffle.words()));
        }
    }
    out
}

#[test]
fn round_trip_gives_the_counted_draws() {
    for (sizes, ncn, block) in CASES {
        for epoch in 0..3 {
            for n in 1..=ncn {
                let c = count(sizes, ncn, block, epoch, n);
                let bytes = c.encode();
                assert!(bytes.len() as u64 <= max_len(&c.spans.groups));
                let (nodes, after) = c.decode(&bytes).expect("a file just written");
                assert_eq!(words(&nodes, &after), words(&c.nodes, &c.after));
            }
        }
    }
}

#[test]
fn truncated_or_altered_files_are_ignored() {
    let c = count(CASES[1].0, CASES[1].1, CASES[1].2, 1, 2);
    let bytes = c.encode();
    for len in 0..bytes.len() {
        assert!(c.decode(&bytes[..len]).is_none(), "truncated to {len}");
    }
    let mut longer = bytes.clone();
    longer.push(0);
    assert!(c.decode(&longer).is_none());
    for at in 0..bytes.len() {
        for bit in [0x01, 0x80] {
            let mut bad = bytes.clone();
            bad[at] ^= bit;
            assert!(c.decode(&bad).is_none(), "byte {at} flipped");
        }
    }
}

#[test]
fn another_epoch_or_configuration_is_ignored() {
    let (sizes, ncn, block) = CASES[1];
    let c = count(sizes, ncn, block, 1, ncn);
    let bytes = c.encode();
    let mut other_sizes = sizes.to_vec();
    other_sizes[2] += 1;
    let mut more_sizes = sizes.to_vec();
    more_sizes.push(0);
    for key in [
        Key::new(sizes, ncn, 7, 9, block),
        Key::new(sizes, ncn, 8, 8, block),
        Key::new(sizes, ncn, 7, 8, block + 1),
        Key::new(sizes, ncn + 1, 7, 8, block),
        Key::new(&other_sizes, ncn, 7, 8, block),
        Key::new(&more_sizes, ncn, 7, 8, block),
    ] {
        assert_ne!(key, c.key);
        assert!(decode(&bytes, &key, c.inc, &c.spans.spans, &c.spans.groups).is_none());
    }
    assert!(decode(&bytes, &c.key, c.inc + 2, &c.spans.spans, &c.spans.groups).is_none());
    // Fewer node groups than the file counted: refused before reading any span.
    let fewer = &c.spans.groups[..ncn - 1];
    assert!(decode(&bytes, &c.key, c.inc, &c.spans.spans, fewer).is_none());
}

/// The bytes with their checksum made right again: what only the other checks can refuse.
fn resealed(mut bytes: Vec<u8>, edit: impl FnOnce(&mut [u8])) -> Vec<u8> {
    let body = bytes.len() - 16;
    edit(&mut bytes[..body]);
    let check = xxhash_rust::xxh3::xxh3_128(&bytes[..body]);
    bytes[body..].copy_from_slice(&check.to_le_bytes());
    bytes
}

#[test]
fn well_sealed_but_inconsistent_files_are_ignored() {
    let c = count(CASES[1].0, CASES[1].1, CASES[1].2, 1, 2);
    let bytes = c.encode();
    assert!(c.decode(&resealed(bytes.clone(), |_| ())).is_some());
    let put = |at: usize, value: &[u8]| {
        let value = value.to_vec();
        resealed(bytes.clone(), move |b| {
            b[at..at + value.len()].copy_from_slice(&value);
        })
    };
    // Header fields (see the layout in draws_file), then the first span's fields.
    let first_span = 97 + 2;
    let cases = [
        ("magic", put(0, b"SXPY1EDS")),
        ("version", put(8, &2_u32.to_le_bytes())),
        ("no node counted", put(44, &0_u64.to_le_bytes())),
        ("more nodes than the epoch", put(44, &4_u64.to_le_bytes())),
        (
            "a span count the nodes do not hold",
            put(52, &1_u64.to_le_bytes()),
        ),
        (
            "a span count past the epoch",
            put(52, &u64::MAX.to_le_bytes()),
        ),
        ("a buffer flag of 2", put(92, &[2])),
        ("a buffer without its flag", put(92, &[0, 1, 0, 0, 0])),
        ("a node flag of 2", put(97, &[2])),
        (
            "a positive low shift",
            put(first_span + 21, &1.0_f64.to_le_bytes()),
        ),
        (
            "a NaN high shift",
            put(first_span + 29, &f64::NAN.to_le_bytes()),
        ),
        (
            "an infinite high shift",
            put(first_span + 29, &f64::INFINITY.to_le_bytes()),
        ),
    ];
    for (what, bad) in cases {
        assert!(c.decode(&bad).is_none(), "{what}");
    }
}

fn private_dir() -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    fs::set_permissions(dir.path(), fs::Permissions::from_mode(0o700)).unwrap();
    dir
}

fn cache(dir: &Path, min_samples: u64) -> CountCache {
    CountCache::new(dir.to_path_buf(), min_samples)
}

/// Every node's order from a fresh plan over `cache`, checked against the whole shuffle;
/// what the plan did with the cache.
fn pieces_stats(case: (&[i64], usize, usize), epoch: u64, cache: &CountCache) -> CountCacheStats {
    let (sizes, ncn, block) = case;
    let mut want_warn = Vec::new();
    let whole = get_shuffle_warn(
        ShuffleAlgo::Py1e,
        sizes,
        ncn,
        7,
        epoch,
        block,
        &mut want_warn,
    )
    .unwrap();
    let mut warns = Vec::new();
    let seeds = (7, 7 + u128::from(epoch));
    let mut lazy =
        LazyPy1e::new(sizes, ncn, seeds.0, seeds.1, block, Some(cache), &mut warns).unwrap();
    assert_eq!(warns, want_warn);
    let total: i64 = sizes.iter().sum();
    let bounds = crate::shuffle::spans::node_bounds(total, ncn);
    for node in (0..ncn).rev() {
        let (lo, hi) = (bounds[node] as usize, bounds[node + 1] as usize);
        let ranks: Vec<usize> = (0..hi - lo).collect();
        assert_eq!(
            lazy.pick(node, &ranks).unwrap(),
            whole[lo..hi],
            "{sizes:?} node {node}"
        );
    }
    lazy.count_cache_stats().unwrap().clone()
}

/// [`pieces_stats`] where the cache raised no problem: `(loaded, saved)` nodes.
fn check_pieces(case: (&[i64], usize, usize), epoch: u64, cache: &CountCache) -> (usize, usize) {
    let stats = pieces_stats(case, epoch, cache);
    assert_eq!(stats.problem, None);
    (stats.loaded_nodes, stats.saved_nodes)
}

#[test]
fn pieces_read_from_a_file_equal_pieces_counted() {
    for case in CASES {
        let ncn = case.1;
        for epoch in 0..2 {
            let dir = private_dir();
            let cache = cache(dir.path(), 0);
            assert_eq!(check_pieces(case, epoch, &cache), (0, ncn));
            assert_eq!(check_pieces(case, epoch, &cache), (ncn, 0));
        }
    }
}

#[test]
fn a_file_of_the_first_nodes_is_read_and_extended() {
    let (sizes, ncn, block) = CASES[2];
    let dir = private_dir();
    let cache = cache(dir.path(), 0);
    let mut warns = Vec::new();
    let mut lazy = LazyPy1e::new(sizes, ncn, 7, 8, block, Some(&cache), &mut warns).unwrap();
    lazy.pick(1, &[0, 5]).unwrap();
    assert_eq!(lazy.count_cache_stats().unwrap().saved_nodes, 2);
    assert_eq!(check_pieces(CASES[2], 1, &cache), (2, ncn));
    assert_eq!(check_pieces(CASES[2], 1, &cache), (ncn, 0));
}

#[test]
fn a_short_count_writes_no_file() {
    let dir = private_dir();
    let total: i64 = CASES[2].0.iter().sum();
    let cache = cache(dir.path(), total as u64 + 1);
    assert_eq!(check_pieces(CASES[2], 0, &cache), (0, 0));
    assert_eq!(fs::read_dir(dir.path()).unwrap().count(), 0);
}

#[test]
fn a_damaged_file_is_ignored_then_replaced() {
    let dir = private_dir();
    let cache = cache(dir.path(), 0);
    let (sizes, ncn, block) = CASES[1];
    check_pieces(CASES[1], 0, &cache);
    let name = draws_store::file_name(Key::new(sizes, ncn, 7, 7, block).digest);
    let path = dir.path().join(name);
    let mut bytes = fs::read(&path).unwrap();
    bytes[120] ^= 4;
    fs::write(&path, &bytes).unwrap();
    let stats = pieces_stats(CASES[1], 0, &cache);
    let problem = stats.problem.unwrap();
    assert!(
        problem.contains("does not hold this epoch's draws"),
        "{problem}"
    );
    assert_eq!((stats.loaded_nodes, stats.saved_nodes), (0, ncn));
    assert_eq!(check_pieces(CASES[1], 0, &cache), (ncn, 0));
}

#[test]
fn a_directory_others_can_write_is_not_used() {
    for mode in [0o777, 0o770, 0o1777] {
        let dir = tempfile::tempdir().unwrap();
        fs::set_permissions(dir.path(), fs::Permissions::from_mode(mode)).unwrap();
        let mut warns = Vec::new();
        let (sizes, ncn, block) = CASES[1];
        let cache = cache(dir.path(), 0);
        let mut lazy = LazyPy1e::new(sizes, ncn, 7, 7, block, Some(&cache), &mut warns).unwrap();
        lazy.pick(ncn - 1, &[0]).unwrap();
        let stats = lazy.count_cache_stats().unwrap();
        assert!(stats
            .problem
            .as_ref()
            .unwrap()
            .contains("only it can write"));
        assert_eq!(stats.saved_nodes, 0);
        assert_eq!(
            fs::read_dir(dir.path()).unwrap().count(),
            0,
            "mode {mode:o}"
        );
    }
}

#[test]
fn only_a_regular_file_of_bounded_size_is_read() {
    let dir = private_dir();
    let path = dir.path();
    assert!(draws_store::read(path, "none.bin", 100).unwrap().is_none());
    fs::write(path.join("big.bin"), [0_u8; 101]).unwrap();
    assert!(draws_store::read(path, "big.bin", 100).is_err());
    assert_eq!(
        draws_store::read(path, "big.bin", 101)
            .unwrap()
            .unwrap()
            .len(),
        101
    );
    std::os::unix::fs::symlink(path.join("big.bin"), path.join("link.bin")).unwrap();
    assert!(draws_store::read(path, "link.bin", 1000).is_err());
    fs::create_dir(path.join("dir.bin")).unwrap();
    assert!(draws_store::read(path, "dir.bin", 1000).is_err());
}

#[test]
fn writing_keeps_the_newest_files() {
    let dir = private_dir();
    let path = dir.path();
    let now = std::time::SystemTime::now();
    let hours = |h: u64| now - std::time::Duration::from_secs(3600 * h);
    let put = |name: &str, age: u64| {
        let file = fs::File::create(path.join(name)).unwrap();
        file.set_modified(hours(age)).unwrap();
    };
    for i in 0..6 {
        put(&draws_store::file_name(i), 10 - i as u64);
    }
    put(".py1e-draws-1-0.tmp", 2);
    put(".py1e-draws-2-0.tmp", 0);
    put("other.bin", 20);
    draws_store::write(path, &draws_store::file_name(99), b"new").unwrap();
    let mut left: Vec<String> = fs::read_dir(path)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    left.sort();
    let mut want = vec![".py1e-draws-2-0.tmp".to_string(), "other.bin".to_string()];
    want.extend([3, 4, 5, 99].map(draws_store::file_name));
    want.sort();
    assert_eq!(left, want);
    let mode = fs::metadata(path.join(draws_store::file_name(99))).unwrap();
    assert_eq!(mode.permissions().mode() & 0o777, 0o600);
}
