//! The index read into typed, borrowed values gives the table and messages that reading each
//! value as JSON gave: entries that differ in a value the table stores once, strings with
//! escapes (which cannot be borrowed), repeated keys, and values of another shape.

use serde_json::{json, Value};
use streamx_core::mds::index::{parse_index, parse_index_slice, IndexFault, IndexTable};

fn entry(i: usize) -> Value {
    json!({
        "column_encodings": ["str", "int"], "column_names": ["text", "id"],
        "column_sizes": [null, 8], "compression": "zstd", "format": "mds", "hashes": [],
        "raw_data": {"basename": format!("shard.{i:05}.mds"), "bytes": 1000 + i, "hashes": {}},
        "samples": 10 + i, "size_limit": 1 << 26, "version": 2,
        "zip_data": {"basename": format!("shard.{i:05}.mds.zstd"), "bytes": 300, "hashes": {}},
    })
}

fn doc(shards: &[Value]) -> Vec<u8> {
    serde_json::to_vec(&json!({"version": 2, "shards": shards})).unwrap()
}

/// Parsed from memory (strings borrowed) and from a reader (strings copied): same table.
fn both(bytes: &[u8]) -> Result<IndexTable, String> {
    let shown = "/d/index.json";
    let slice = parse_index_slice(bytes, shown);
    let reader = parse_index(bytes, shown);
    match (slice, reader) {
        (Ok(a), Ok(b)) => {
            assert_eq!(a.to_state(), b.to_state());
            Ok(a)
        }
        (Err(IndexFault::Invalid(a)), Err(IndexFault::Invalid(b))) => {
            assert_eq!(a, b);
            Err(a)
        }
        (a, b) => panic!("slice and reader differ: {:?} / {:?}", a.err(), b.err()),
    }
}

#[test]
fn entries_differing_in_stored_once_values_keep_theirs() {
    let mut shards: Vec<Value> = (0..6).map(entry).collect();
    shards[1]["compression"] = json!(null);
    shards[1]["zip_data"] = json!(null);
    shards[2]["column_names"] = json!(["body", "id"]);
    shards[3]["hashes"] = json!(["sha1", "xxh64"]);
    shards[3]["raw_data"]["hashes"] = json!({"sha1": "ab", "xxh64": "cd"});
    shards[4]["size_limit"] = json!(null);
    shards[4]["column_sizes"] = json!([null, null]);
    shards[5]["format"] = json!("json");
    shards[5]["newline"] = json!("\n");
    let table = both(&doc(&shards)).unwrap();
    assert_eq!(table.compression(0), Some("zstd"));
    assert_eq!(table.compression(1), None);
    assert_eq!(table.compression(2), Some("zstd"));
    assert!(table.file(1, 1).is_none());
    let names = |s: usize| table.schemas()[table.schema_ids()[s] as usize].clone();
    assert_eq!(names(2).unwrap().names, ["body", "id"]);
    assert_eq!(names(3).unwrap().names, ["text", "id"]);
    assert_eq!(names(4).unwrap().sizes, [None, None]);
    assert!(names(5).is_none());
    assert_eq!(table.schema_ids(), [0, 0, 1, 0, 2, 3]);
    assert_eq!(table.hash_list(3), ["sha1", "xxh64"]);
    assert!(table.hash_list(4).is_empty());
    assert_eq!(
        table.file(3, 0).unwrap().2,
        [("sha1", "ab"), ("xxh64", "cd")]
    );
    assert_eq!(table.size_limit(4), None);
    assert_eq!(table.size_limit(5), Some(1 << 26));
    assert_eq!(table.format(5), "json");
    let extra: Value = serde_json::from_str(table.extra(5)).unwrap();
    assert_eq!(extra["newline"], "\n");
    assert_eq!(extra["column_names"], json!(["text", "id"]));
    assert_eq!(extra["column_sizes"], json!([null, 8]));
}

#[test]
fn escaped_strings_read_as_their_text() {
    let mut shard = entry(0);
    shard["raw_data"]["basename"] = json!("sub/caf\u{e9}\"q.mds");
    shard["column_names"] = json!(["t\u{e9}xt", "i\nd"]);
    let text = String::from_utf8(doc(&[shard])).unwrap();
    // Written with \u escapes, as Python's json.dump writes non-ASCII text.
    let text = text
        .replace('\u{e9}', "\\u00e9")
        .replace("\"zstd\"", "\"\\u007astd\"");
    let table = both(text.as_bytes()).unwrap();
    assert_eq!(table.file(0, 0).unwrap().0, "sub/caf\u{e9}\"q.mds");
    assert_eq!(table.compression(0), Some("zstd"));
    let schema = table.schemas()[0].clone().unwrap();
    assert_eq!(schema.names, ["t\u{e9}xt", "i\nd"]);
    // A `..` written with escapes still escapes the dataset.
    let bad = text.replace("sub/caf", "\\u002e\\u002e/caf");
    let message = both(bad.as_bytes()).unwrap_err();
    assert!(message.contains("escapes the dataset directory in /d/index.json, shard 0"));
}

#[test]
fn repeated_keys_keep_the_last_value_and_the_first_place() {
    let raw = r#"{"version": 2, "shards": [{"format": "csv", "version": 2, "samples": 1,
        "compression": "zstd", "compression": null, "z": 1, "column_sizes": [8],
        "a": 2, "column_names": ["x"], "z": 3, "column_sizes": [9],
        "raw_data": {"basename": "a.csv", "bytes": 5, "bytes": 7,
                     "hashes": {"sha1": "1", "md5": "2", "sha1": "3"}}}]}"#;
    let table = both(raw.as_bytes()).unwrap();
    assert_eq!(table.compression(0), None);
    let (name, bytes, hashes) = table.file(0, 0).unwrap();
    assert_eq!((name, bytes), ("a.csv", 7));
    assert_eq!(hashes, [("sha1", "3"), ("md5", "2")]);
    assert_eq!(
        table.extra(0),
        r#"{"z":3,"column_sizes":[9],"a":2,"column_names":["x"]}"#
    );
}

#[test]
fn values_of_another_shape_are_shown_as_written() {
    type Edit = fn(&mut Value);
    let cases: [(Edit, &str); 12] = [
        (
            |e| e["column_names"] = json!(["x", 5]),
            "Column names ['x', 5] are not distinct",
        ),
        (
            |e| e["column_names"] = json!("x"),
            "TypeError('column_names is not a list')",
        ),
        (
            |e| e["column_sizes"] = json!([null, 8.0]),
            "Invalid column sizes [None, 8.0]",
        ),
        (
            |e| e["column_encodings"] = json!(["str", null]),
            "Column id has an unknown encoding None",
        ),
        (
            |e| e["raw_data"]["basename"] = json!(["a"]),
            "Shard file name ['a'] escapes",
        ),
        (
            |e| e["raw_data"]["hashes"] = json!({"a": "x", "b": [1]}),
            "Invalid hashes {'a': 'x', 'b': [1]}",
        ),
        (
            |e| e["raw_data"]["hashes"] = json!("x"),
            "Invalid hashes 'x'",
        ),
        (
            |e| e["hashes"] = json!(["sha1", 2]),
            "hashes is not a list of names",
        ),
        (
            |e| e["size_limit"] = json!(-1.5),
            "Invalid size_limit -1.5 in",
        ),
        (
            |e| e["size_limit"] = json!(u64::MAX),
            "Invalid size_limit 18446744073709551615",
        ),
        (
            |e| e["version"] = json!(true),
            "Unsupported streaming data version: True.",
        ),
        (
            |e| e["compression"] = json!({"a": 1}),
            "Unknown compression {'a': 1}",
        ),
    ];
    for (edit, needle) in cases {
        let mut bad = entry(1);
        edit(&mut bad);
        let message = both(&doc(&[entry(0), bad])).unwrap_err();
        assert!(message.contains(needle), "{message:?} lacks {needle:?}");
        assert!(message.contains("/d/index.json, shard 1"), "{message:?}");
    }
    // Shapes that are still valid: falsy hashes, a float version, a negative size limit.
    let mut fine = entry(1);
    fine["raw_data"]["hashes"] = json!(null);
    fine["version"] = json!(2.0);
    fine["size_limit"] = json!(-1);
    let table = both(&doc(&[entry(0), fine])).unwrap();
    assert_eq!(table.size_limit(1), Some(-1));
}

#[test]
fn a_hostile_entry_is_a_clean_error() {
    let deep = format!("{}1{}", "[".repeat(100_000), "]".repeat(100_000));
    let text = format!(r#"{{"version": 2, "shards": [{{"format": {deep}}}]}}"#);
    assert!(matches!(
        parse_index_slice(text.as_bytes(), "x"),
        Err(IndexFault::Syntax { .. })
    ));
    let long = "a".repeat(1 << 20);
    let mut shard = entry(0);
    shard["column_names"] = json!([long.clone(), long]);
    let message = both(&doc(&[shard])).unwrap_err();
    assert!(message.contains("are not distinct strings in /d/index.json, shard 0"));
}
