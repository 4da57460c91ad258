//! `ShardSet::from_indexes`: shards resolved from index tables on open give the same
//! descriptions and bytes as shards described one by one, across parts; names that leave
//! the dataset and schema ids without a layout are clean errors.

mod mds_common;

use std::path::Path;
use std::sync::Arc;

use mds_common::{copy_fixture, descs_from_index, fixture};
use streamx_core::mds::index::{read_index, IndexTable};
use streamx_core::mds::ColumnLayout;
use streamx_core::reader::{IndexedPart, ShardDesc, ShardSet};
use streamx_core::Error;

fn part(dir: &Path, first_schema: usize) -> IndexedPart {
    IndexedPart {
        table: Arc::new(read_index(&dir.join("index.json")).unwrap()),
        dir: dir.to_path_buf(),
        first_schema,
    }
}

fn layouts(table: &IndexTable) -> Vec<ColumnLayout> {
    let schemas = table.schemas().iter().flatten();
    schemas
        .map(|s| ColumnLayout::from_sizes(&s.sizes).unwrap())
        .collect()
}

fn assert_same_desc(got: &ShardDesc, want: &ShardDesc, shard: usize) {
    assert_eq!(got.raw_path, want.raw_path, "shard {shard}");
    assert_eq!(got.zip_path, want.zip_path, "shard {shard}");
    assert_eq!(got.compression, want.compression, "shard {shard}");
    assert_eq!(got.samples, want.samples, "shard {shard}");
    assert_eq!(got.raw_bytes, want.raw_bytes, "shard {shard}");
    assert_eq!(got.layout, want.layout, "shard {shard}");
}

/// Every sample's column bytes of two sets, which must agree.
fn assert_same_samples(got: &ShardSet, want: &ShardSet) {
    assert_eq!(got.num_samples(), want.num_samples());
    let (mut a, mut b) = (Vec::new(), Vec::new());
    for global in 0..want.num_samples() {
        let x = got.sample_columns(global, &mut a).unwrap();
        let y = want.sample_columns(global, &mut b).unwrap();
        let cols = |s: &streamx_core::mds::shard::Shard, r: &[std::ops::Range<usize>]| {
            r.iter()
                .map(|r| s.bytes()[r.clone()].to_vec())
                .collect::<Vec<_>>()
        };
        assert_eq!(cols(&x, &a), cols(&y, &b), "sample {global}");
    }
}

#[test]
fn resolved_descriptions_equal_the_listed_ones() {
    for name in ["ds_plain", "ds_split", "ds_split400", "ds_zstd"] {
        let dir = copy_fixture(name);
        let indexed = part(dir.path(), 0);
        let layouts = layouts(&indexed.table);
        let set = ShardSet::from_indexes(vec![indexed], layouts).unwrap();
        let listed = descs_from_index(dir.path());
        assert_eq!(set.num_shards(), listed.len(), "{name}");
        for (shard, want) in listed.iter().enumerate() {
            assert_same_desc(&set.desc(shard).unwrap(), want, shard);
            assert_eq!(set.schema_id(shard), Some(0));
        }
        // The compressed fixture is decompressed from its zip path by each set (a copy each:
        // the fixture itself stays as committed).
        let other = copy_fixture(name);
        assert_same_samples(&set, &ShardSet::new(descs_from_index(other.path())));
    }
}

#[test]
fn parts_number_their_shards_and_schemas_in_order() {
    let empty = tempfile::tempdir().unwrap();
    std::fs::write(
        empty.path().join("index.json"),
        r#"{"version": 2, "shards": []}"#,
    )
    .unwrap();
    let (a, b) = (fixture("ds_split"), fixture("ds_plain"));
    let mut all = layouts(&part(&a, 0).table);
    all.push(ColumnLayout::new(vec![None, Some(8)])); // a layout no shard uses
    let second = all.len();
    all.extend(layouts(&part(&b, 0).table));
    let parts = vec![
        part(empty.path(), 0),
        part(&a, 0),
        part(empty.path(), 1),
        part(&b, second),
        part(empty.path(), 0),
    ];
    let set = ShardSet::from_indexes(parts, all).unwrap();
    let mut listed = descs_from_index(&a);
    let first = listed.len();
    listed.extend(descs_from_index(&b));
    assert_eq!(set.num_shards(), listed.len());
    for (shard, want) in listed.iter().enumerate() {
        assert_same_desc(&set.desc(shard).unwrap(), want, shard);
        let schema = if shard < first { 0 } else { second };
        assert_eq!(set.schema_id(shard), Some(schema), "shard {shard}");
    }
    assert_same_samples(&set, &ShardSet::new(listed));
    let past = set.num_shards();
    assert!(matches!(set.desc(past), Err(Error::IndexOutOfRange { .. })));
    assert_eq!(set.schema_id(past), None);
}

#[test]
fn sub_directory_and_zip_names_are_joined_as_written() {
    let dir = tempfile::tempdir().unwrap();
    let entry = |raw: &str, zip: &str, compression: &str| {
        format!(
            r#"{{"format": "mds", "version": 2, "compression": {compression}, "samples": 2,
            "hashes": [], "size_limit": null, "column_names": ["x"],
            "column_encodings": ["int"], "column_sizes": [8],
            "raw_data": {{"basename": "{raw}", "bytes": 40, "hashes": {{}}}},
            "zip_data": {zip}}}"#
        )
    };
    let shards = [
        entry(
            "sub/dir/shard.00000.mds",
            r#"{"basename": "sub/dir/shard.00000.mds.zstd", "bytes": 9, "hashes": {}}"#,
            r#""zstd""#,
        ),
        entry("shard.00001.mds", "null", "null"),
        entry(
            "other/shard.00002.mds",
            r#"{"basename": "other/shard.00002.mds.gz", "bytes": 9, "hashes": {}}"#,
            r#""gz""#,
        ),
    ];
    let text = format!(r#"{{"version": 2, "shards": [{}]}}"#, shards.join(", "));
    std::fs::write(dir.path().join("index.json"), text).unwrap();
    let listed = descs_from_index(dir.path());
    let indexed = part(dir.path(), 0);
    let layouts = layouts(&indexed.table);
    let set = ShardSet::from_indexes(vec![indexed], layouts).unwrap();
    for (shard, want) in listed.iter().enumerate() {
        assert_same_desc(&set.desc(shard).unwrap(), want, shard);
    }
    let first = set.desc(0).unwrap();
    assert_eq!(
        first.zip_path.as_deref(),
        Some(dir.path().join("sub/dir/shard.00000.mds.zstd").as_path())
    );
    // Neither file is there: not found, for the raw path, so the caller can download.
    let raw = dir.path().join("sub/dir/shard.00000.mds");
    assert!(matches!(set.sample_range(0), Err(Error::NotFound(p)) if p == raw));
}

#[test]
fn a_name_leaving_the_dataset_is_refused_on_open() {
    // The index parse refuses such a name; a table from a state (a pickle) is not parsed.
    let dir = copy_fixture("ds_split");
    let table = read_index(&dir.path().join("index.json")).unwrap();
    let state = String::from_utf8(table.to_state()).unwrap();
    let bad = "../../../x1.mds"; // as long as the name it replaces: the arena keeps offsets
    let state = state.replacen("shard.00001.mds", bad, 1);
    let table = Arc::new(IndexTable::from_state(state.as_bytes()).unwrap());
    let layouts = layouts(&table);
    let parts = vec![IndexedPart {
        table,
        dir: dir.path().to_path_buf(),
        first_schema: 0,
    }];
    let set = ShardSet::from_indexes(parts, layouts).unwrap();
    let message = set.desc(1).unwrap_err().to_string();
    assert!(
        message.contains(bad) && message.contains("leaves the dataset directory"),
        "{message}"
    );
    assert!(message.contains("Shard 1 of the index in"), "{message}");
    let first_of_shard_1 = set.shard_start(1);
    assert_eq!(
        set.sample_range(first_of_shard_1).unwrap_err().to_string(),
        message
    );
    let other = set.shard_start(2);
    assert!(set.sample_range(other).is_ok(), "other shards still read");
}

#[test]
fn a_schema_id_without_a_layout_is_refused() {
    let indexed = part(&fixture("ds_split"), 1);
    let layouts = layouts(&indexed.table);
    let err = ShardSet::from_indexes(vec![indexed], layouts).unwrap_err();
    assert!(
        matches!(&err, Error::InvalidArgument(m) if m == "No schema 1"),
        "{err}"
    );
}
