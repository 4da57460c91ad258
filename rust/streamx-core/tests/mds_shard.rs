//! Shard bytes: the §1.6 worked example byte for byte, reading mosaicml-streaming's shards,
//! and corrupt or truncated shards giving errors.

mod mds_common;

use mds_common::{example_layout, example_sample, fixture, EXAMPLE_CONFIG};
use streamx_core::mds::{decode_ndarray, Shard, ShardBuilder};
use streamx_core::Error;

/// The 339-byte file of COMPAT-SPEC §1.6, as written by `MDSWriter`.
fn example_shard_bytes() -> Vec<u8> {
    let mut builder = ShardBuilder::new(EXAMPLE_CONFIG.as_bytes().to_vec(), Some(1 << 26));
    for sample in [example_sample(7, false), example_sample(-1, true)] {
        assert!(!builder.needs_flush_before(sample.len()));
        builder.push(&sample);
    }
    builder.take_shard_bytes().unwrap()
}

#[test]
fn worked_example_is_byte_identical() {
    let bytes = example_shard_bytes();
    assert_eq!(bytes.len(), 339);
    assert_eq!(
        bytes,
        std::fs::read(fixture("ds_plain/shard.00000.mds")).unwrap()
    );
    // The hexdump lines of the spec, independent of the fixture file.
    assert_eq!(
        &bytes[..16],
        &hex::decode("0200000011010000330100005301_0000".replace('_', "")).unwrap()[..]
    );
    let tail = "7d0a000000020000001108010301000200030000_00c03f0700000000000000616201020700000003\
                000000220401000010410000_00c0ffffffffffffffff78797a0304";
    assert_eq!(
        &bytes[0x110..],
        &hex::decode(tail.replace('_', "")).unwrap()[..]
    );
}

#[test]
fn reads_the_python_shard() {
    let shard = Shard::open(&fixture("ds_plain/shard.00000.mds")).unwrap();
    assert_eq!(shard.len(), 2);
    assert_eq!(shard.config_json(), EXAMPLE_CONFIG.as_bytes());
    assert_eq!(shard.sample_range(0).unwrap(), 273..307);
    let mut cols = Vec::new();
    shard
        .sample_columns(1, &example_layout(), &mut cols)
        .unwrap();
    assert_eq!(cols.len(), 5);
    let arr = decode_ndarray(None, None, cols[0]).unwrap();
    assert_eq!(
        (arr.dtype.name(), arr.shape.as_slice(), arr.data),
        ("float32", &[1u64][..], &9.0f32.to_le_bytes()[..])
    );
    assert_eq!(cols[1], (-2.0f32).to_le_bytes());
    assert_eq!(cols[2], (-1i64).to_le_bytes());
    assert_eq!(cols[3], b"xyz");
    assert_eq!(cols[4], [3, 4]);
    assert!(matches!(
        shard.sample(2),
        Err(Error::IndexOutOfRange { index: 2, len: 2 })
    ));
}

fn open_bytes(bytes: &[u8]) -> Result<Shard, Error> {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("shard.00000.mds");
    std::fs::write(&path, bytes).unwrap();
    Shard::open(&path)
}

fn assert_corrupt(bytes: &[u8], needle: &str) {
    match open_bytes(bytes) {
        Err(Error::CorruptShard { path, reason }) => {
            assert!(path.ends_with("shard.00000.mds"));
            assert!(reason.contains(needle), "{reason:?} lacks {needle:?}");
        }
        other => panic!("expected corrupt shard ({needle}), got {other:?}"),
    }
}

#[test]
fn every_truncation_is_an_error() {
    let bytes = example_shard_bytes();
    for len in 0..bytes.len() {
        assert!(
            matches!(open_bytes(&bytes[..len]), Err(Error::CorruptShard { .. })),
            "len {len}"
        );
    }
    assert_corrupt(&[], "too short");
    assert_corrupt(&bytes[..300], "truncated");
}

#[test]
fn bad_headers_are_errors() {
    let good = example_shard_bytes();
    let patch = |at: usize, value: u32| {
        let mut b = good.clone();
        b[at..at + 4].copy_from_slice(&value.to_le_bytes());
        b
    };
    assert_corrupt(&patch(0, 1000), "header");
    assert_corrupt(&patch(0, u32::MAX), "header");
    assert_corrupt(&patch(4, 8), "inside");
    assert_corrupt(&patch(8, 200), "before");
    assert_corrupt(&patch(12, 338), "last offset");
    let mut extra = good.clone();
    extra.push(0);
    assert_corrupt(&extra, "last offset");
}

#[test]
fn empty_shard_is_valid() {
    let mut builder = ShardBuilder::new(b"{}".to_vec(), None);
    let bytes = builder.take_shard_bytes().unwrap();
    assert_eq!(bytes, [0, 0, 0, 0, 10, 0, 0, 0, b'{', b'}']);
    let shard = open_bytes(&bytes).unwrap();
    assert!(shard.is_empty());
    assert!(matches!(
        shard.sample(0),
        Err(Error::IndexOutOfRange { .. })
    ));
}

#[test]
fn missing_file_is_not_found() {
    let path = fixture("nope/shard.00000.mds");
    assert!(matches!(Shard::open(&path), Err(Error::NotFound(p)) if p == path));
}

#[test]
fn bad_sample_framing_names_shard_and_sample() {
    let mut bytes = example_shard_bytes();
    // Sample 1's first length prefix (arr) at 307: claim more bytes than the sample holds.
    bytes[307..311].copy_from_slice(&100u32.to_le_bytes());
    let shard = open_bytes(&bytes).unwrap();
    let mut cols = Vec::new();
    shard
        .sample_columns(0, &example_layout(), &mut cols)
        .unwrap();
    match shard.sample_columns(1, &example_layout(), &mut cols) {
        Err(Error::CorruptShard { path, reason }) => {
            assert!(path.ends_with("shard.00000.mds"));
            assert!(reason.starts_with("sample 1: "), "{reason}");
        }
        other => panic!("{other:?}"),
    }
}
