//! Property tests: parsing arbitrary or damaged bytes never panics, and framing/building
//! round-trips. Quick by default; `cargo test -- --include-ignored` runs the heavy variants.

mod mds_common;

use proptest::prelude::*;
use streamx_core::mds::{decode_ndarray, ColumnLayout, ScalarType, Shard, ShardBuilder};

const QUICK: u32 = 256;
const HEAVY: u32 = 20_000;

fn scalar_type() -> impl Strategy<Value = Option<ScalarType>> {
    prop::option::of(prop::sample::select(
        [8u8, 9, 16, 17, 18, 32, 33, 34, 64, 65, 66]
            .map(|c| ScalarType::from_dtype_code(c).unwrap())
            .to_vec(),
    ))
}

/// Opens `bytes` as a shard and reads every sample every way; errors are fine, panics not.
fn exercise_shard(bytes: &[u8]) {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("shard.mds");
    std::fs::write(&path, bytes).unwrap();
    let Ok(shard) = Shard::open(&path) else {
        return;
    };
    let layout = mds_common::example_layout();
    let (mut cols, mut ranges) = (Vec::new(), Vec::new());
    for i in 0..=shard.len() {
        let _ = shard.sample(i);
        if shard.sample_columns(i, &layout, &mut cols).is_ok() {
            let _ = decode_ndarray(None, None, cols[0]);
        }
        let _ = shard.sample_column_ranges(i, &layout, &mut ranges);
    }
}

fn example_shard() -> Vec<u8> {
    let mut b = ShardBuilder::new(mds_common::EXAMPLE_CONFIG.as_bytes().to_vec(), None);
    b.push(&mds_common::example_sample(7, false));
    b.push(&mds_common::example_sample(-1, true));
    b.take_shard_bytes().unwrap()
}

fn shard_cases(cases: u32) -> ProptestConfig {
    ProptestConfig {
        cases,
        failure_persistence: None,
        ..ProptestConfig::default()
    }
}

fn check_mutated(edits: &[(usize, u8)], cut: usize) {
    let mut bytes = example_shard();
    for &(at, value) in edits {
        let len = bytes.len();
        bytes[at % len] = value;
    }
    bytes.truncate(bytes.len() - cut % 8);
    exercise_shard(&bytes);
}

fn check_split(sizes: &[Option<u32>], bytes: &[u8]) {
    let layout = ColumnLayout::new(sizes.to_vec());
    let mut out = Vec::new();
    if layout.split(bytes, &mut out).is_ok() {
        assert_eq!(out.len(), sizes.len());
        assert_eq!(
            out.iter().map(|c| c.len()).sum::<usize>()
                + 4 * sizes.iter().filter(|s| s.is_none()).count(),
            bytes.len()
        );
    }
}

fn check_round_trip(columns: &[(bool, Vec<u8>)]) {
    let layout = ColumnLayout::new(
        columns
            .iter()
            .map(|(fixed, v)| fixed.then_some(v.len() as u32))
            .collect(),
    );
    let values: Vec<&[u8]> = columns.iter().map(|(_, v)| v.as_slice()).collect();
    let mut framed = Vec::new();
    layout.frame(&values, &mut framed).unwrap();
    let mut builder = ShardBuilder::new(b"{}".to_vec(), None);
    builder.push(&framed);
    builder.push(&framed);
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("s.mds");
    std::fs::write(&path, builder.take_shard_bytes().unwrap()).unwrap();
    let shard = Shard::open(&path).unwrap();
    let mut split = Vec::new();
    shard.sample_columns(1, &layout, &mut split).unwrap();
    assert_eq!(split, values);
}

proptest! {
    #![proptest_config(shard_cases(QUICK))]

    #[test]
    fn arbitrary_shard_bytes(bytes in prop::collection::vec(any::<u8>(), 0..96)) {
        exercise_shard(&bytes);
    }

    #[test]
    fn mutated_shard(edits in prop::collection::vec((any::<usize>(), any::<u8>()), 1..6), cut in any::<usize>()) {
        check_mutated(&edits, cut);
    }

    #[test]
    fn split_arbitrary(sizes in prop::collection::vec(prop::option::of(0u32..12), 0..6), bytes in prop::collection::vec(any::<u8>(), 0..64)) {
        check_split(&sizes, &bytes);
    }

    #[test]
    fn ndarray_arbitrary(dtype in scalar_type(), shape in prop::option::of(prop::collection::vec(0u64..5, 0..4)), bytes in prop::collection::vec(any::<u8>(), 0..64)) {
        let _ = decode_ndarray(dtype, shape.as_deref(), &bytes);
    }

    #[test]
    fn frame_build_split_round_trip(columns in prop::collection::vec((any::<bool>(), prop::collection::vec(any::<u8>(), 0..20)), 0..8)) {
        check_round_trip(&columns);
    }
}

proptest! {
    #![proptest_config(shard_cases(HEAVY))]

    #[test]
    #[ignore = "heavy fuzzing; run with --include-ignored"]
    fn heavy_mutated_shard(edits in prop::collection::vec((any::<usize>(), any::<u8>()), 1..12), cut in any::<usize>()) {
        check_mutated(&edits, cut);
    }

    #[test]
    #[ignore = "heavy fuzzing; run with --include-ignored"]
    fn heavy_arbitrary_shard_bytes(bytes in prop::collection::vec(any::<u8>(), 0..256)) {
        exercise_shard(&bytes);
    }

    #[test]
    #[ignore = "heavy fuzzing; run with --include-ignored"]
    fn heavy_split_and_ndarray(sizes in prop::collection::vec(prop::option::of(0u32..300), 0..10), bytes in prop::collection::vec(any::<u8>(), 0..512), dtype in scalar_type()) {
        check_split(&sizes, &bytes);
        let _ = decode_ndarray(dtype, None, &bytes);
    }
}
