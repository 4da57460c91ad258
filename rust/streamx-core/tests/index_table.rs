//! `index.json` into columns: values read back exactly, and each bad index refused with a
//! message naming the file and the shard.

use serde_json::{json, Value};
use streamx_core::mds::index::{
    parse_index, parse_index_slice, read_index, IndexFault, IndexTable,
};

fn entry(i: usize) -> Value {
    json!({
        "column_encodings": ["str", "int"], "column_names": ["text", "id"],
        "column_sizes": [null, 8], "compression": "zstd", "format": "mds", "hashes": ["sha1"],
        "raw_data": {"basename": format!("shard.{i:05}.mds"), "bytes": 1000 + i,
                     "hashes": {"sha1": format!("{i:040x}")}},
        "samples": 10 + i, "size_limit": 1 << 26, "version": 2,
        "zip_data": {"basename": format!("shard.{i:05}.mds.zstd"), "bytes": 300, "hashes": {}},
    })
}

fn index(shards: Vec<Value>) -> Vec<u8> {
    let shards = Value::Array(shards);
    serde_json::to_vec(&json!({"version": 2, "shards": shards})).unwrap()
}

fn parse(doc: &[u8]) -> Result<IndexTable, IndexFault> {
    parse_index_slice(doc, "/d/index.json")
}

fn invalid(doc: &[u8]) -> String {
    match parse(doc) {
        Err(IndexFault::Invalid(message)) => message,
        Err(other) => panic!("expected an invalid index, got {other:?}"),
        Ok(_) => panic!("expected an invalid index, got a table"),
    }
}

#[test]
fn columns_read_back_every_value() {
    let doc = index((0..5).map(entry).collect());
    let table = parse(&doc).unwrap();
    let streamed = parse_index(doc.as_slice(), "/d/index.json").unwrap();
    assert_eq!(table.to_state(), streamed.to_state());
    assert_eq!(table.len(), 5);
    assert_eq!(table.samples, [10, 11, 12, 13, 14]);
    assert_eq!(table.format(3), "mds");
    assert_eq!(table.compression(3), Some("zstd"));
    assert_eq!(table.hash_list(3), ["sha1"]);
    assert_eq!(table.size_limit(3), Some(1 << 26));
    let raw = table.file(3, 0).unwrap();
    assert_eq!((raw.0, raw.1), ("shard.00003.mds", 1003));
    assert_eq!(
        raw.2,
        [("sha1", "0000000000000000000000000000000000000003")]
    );
    assert_eq!(table.file(3, 1).unwrap().0, "shard.00003.mds.zstd");
    assert!(table.file(3, 2).is_none());
    assert_eq!(table.max_size(3), 1303);
    // One layout for every shard, stored once.
    assert_eq!(table.schemas().len(), 1);
    assert_eq!(table.schema_ids(), [0, 0, 0, 0, 0]);
    let schema = table.schemas()[0].as_ref().unwrap();
    assert_eq!(schema.names, ["text", "id"]);
    assert_eq!(schema.sizes, [None, Some(8)]);
    assert_eq!(table.extra(0), "");
    let back = IndexTable::from_state(&table.to_state()).unwrap();
    assert_eq!(back.to_state(), table.to_state());
}

#[test]
fn split_formats_keep_their_other_keys_in_order() {
    let mut shard = entry(0);
    let obj = shard.as_object_mut().unwrap();
    obj.insert("format".into(), json!("csv"));
    obj.insert("newline".into(), json!("\n"));
    let table = parse(&index(vec![shard])).unwrap();
    assert!(table.schemas()[0].is_none());
    let extra: Value = serde_json::from_str(table.extra(0)).unwrap();
    let keys: Vec<&String> = extra.as_object().unwrap().keys().collect();
    assert_eq!(
        keys,
        [
            "column_encodings",
            "column_names",
            "column_sizes",
            "newline"
        ]
    );
}

type Edit = Box<dyn Fn(&mut Value)>;

#[test]
fn bad_values_name_the_file_and_shard() {
    let cases: Vec<(Edit, &str)> = vec![
        (
            Box::new(|e| e["samples"] = json!(true)),
            "Invalid sample count True in /d/index.json, shard 1.",
        ),
        (
            Box::new(|e| e["samples"] = json!(1.0)),
            "Invalid sample count 1.0 in",
        ),
        (
            Box::new(|e| e["samples"] = json!(10_000)),
            "10000 samples cannot fit in 1001 bytes",
        ),
        (
            Box::new(|e| e["raw_data"]["bytes"] = json!(-3)),
            "Invalid size -3 of 'shard.00001.mds'",
        ),
        (
            Box::new(|e| e["raw_data"]["basename"] = json!("../x")),
            "Shard file name '../x' escapes",
        ),
        (
            Box::new(|e| e["raw_data"]["basename"] = json!("/etc/passwd")),
            "escapes the dataset",
        ),
        (
            Box::new(|e| e["raw_data"]["hashes"] = json!({"sha1": 3})),
            "Invalid hashes {'sha1': 3}",
        ),
        (
            Box::new(|e| e["compression"] = json!("lzma")),
            "Unknown compression 'lzma'",
        ),
        (
            Box::new(|e| e["format"] = json!("parquet")),
            "Unknown shard format 'parquet'",
        ),
        (
            Box::new(|e| e["version"] = json!(3)),
            "Unsupported streaming data version: 3",
        ),
        (
            Box::new(|e| e["column_sizes"] = json!([-8, 8])),
            "Invalid column sizes [-8, 8]",
        ),
        (
            Box::new(|e| e["column_names"] = json!(["x", "x"])),
            "are not distinct strings",
        ),
        (
            Box::new(|e| e["column_names"] = json!(["x"])),
            "differ in length",
        ),
        (
            Box::new(|e| e["column_encodings"] = json!([1, "int"])),
            "Column text has an unknown encoding 1",
        ),
        (
            Box::new(|e| e["raw_data"] = json!(null)),
            "Missing raw_data in",
        ),
        (
            Box::new(|e| {
                e.as_object_mut().unwrap().remove("samples");
            }),
            "KeyError('samples')",
        ),
        (
            Box::new(|e| e["raw_data"] = json!([1])),
            "TypeError('raw_data is not an object')",
        ),
        (
            Box::new(|e| *e = json!(5)),
            "TypeError('a int is not a shard entry')",
        ),
    ];
    for (edit, needle) in cases {
        let mut bad = entry(1);
        edit(&mut bad);
        let message = invalid(&index(vec![entry(0), bad, entry(2)]));
        assert!(message.contains(needle), "{message:?} lacks {needle:?}");
        assert!(
            message.contains("/d/index.json"),
            "{message:?} names no file"
        );
    }
}

#[test]
fn aliases_are_refused() {
    let mut twice = entry(1);
    twice["raw_data"]["basename"] = json!("./shard.00000.mds");
    let message = invalid(&index(vec![entry(0), twice]));
    assert!(message.contains("shard 1 is also shard 0"), "{message}");
    let mut own = entry(0);
    own["zip_data"]["basename"] = json!("sub/../index.json");
    let message = invalid(&index(vec![own]));
    assert!(message.contains("is also the index itself"), "{message}");
    let message = invalid(&index(vec![entry(0), entry(0)]));
    assert!(message.contains("shard 1 is also shard 0"), "{message}");
}

#[test]
fn documents_that_are_not_indexes() {
    for doc in [&b"[]"[..], b"{}", br#"{"version": 2, "shards": {}}"#, b"5"] {
        assert!(invalid(doc).contains("no `shards` list"));
    }
    let message = invalid(br#"{"version": 1, "shards": []}"#);
    assert!(
        message.contains("Unsupported streaming data version: 1."),
        "{message}"
    );
    // The version is checked before the entries, as it always was.
    assert!(invalid(br#"{"shards": [5], "version": "2"}"#).contains("version: 2."));
    for doc in [
        &b""[..],
        b"{",
        br#"{"shards": []} x"#,
        br#"{"shards": [NaN]}"#,
    ] {
        assert!(
            matches!(parse(doc), Err(IndexFault::Syntax { .. })),
            "{doc:?}"
        );
    }
    assert!(parse(&index(vec![])).unwrap().is_empty());
}

#[test]
fn a_missing_file_is_not_found() {
    let err = read_index(std::path::Path::new("/nonexistent/index.json")).unwrap_err();
    assert!(matches!(
        err,
        IndexFault::Io(streamx_core::Error::NotFound(_))
    ));
}

#[test]
fn a_corrupt_state_is_refused() {
    let table = parse(&index((0..3).map(entry).collect())).unwrap();
    let mut state: Value = serde_json::from_slice(&table.to_state()).unwrap();
    state["schema_ids"] = json!([0, 0, 7]);
    assert!(IndexTable::from_state(&serde_json::to_vec(&state).unwrap()).is_err());
    assert!(IndexTable::from_state(b"{").is_err());
}

proptest::proptest! {
    #![proptest_config(proptest::prelude::ProptestConfig::with_cases(300))]

    /// Any corruption of a valid index is an error or a table whose every value reads back.
    #[test]
    fn mutated_indexes_never_panic(
        edits in proptest::collection::vec((0usize..4000, proptest::prelude::any::<u8>()), 1..8)
    ) {
        let mut doc = index((0..8).map(entry).collect());
        for (at, byte) in edits {
            let at = at % doc.len();
            doc[at] = byte;
        }
        if let Ok(table) = parse(&doc) {
            for shard in 0..table.len() {
                let _ = (table.format(shard), table.compression(shard), table.extra(shard));
                let _ = (table.hash_list(shard), table.size_limit(shard), table.max_size(shard));
                let raw = table.file(shard, 0).expect("raw_data is required");
                proptest::prop_assert!(4 * (u128::from(table.samples[shard]) + 2) <= u128::from(raw.1)
                    || table.format(shard) != "mds");
                for column in 1..4 {
                    let _ = table.file(shard, column);
                }
            }
            let back = IndexTable::from_state(&table.to_state()).unwrap();
            proptest::prop_assert_eq!(back.to_state(), table.to_state());
        }
    }
}

#[test]
fn distinct_formats_are_those_of_the_shards_sorted() {
    let shards = ["mds", "csv", "mds", "json", "csv"].iter().enumerate();
    let doc = index(
        shards
            .map(|(i, format)| {
                let mut shard = entry(i);
                shard["format"] = json!(format);
                shard
            })
            .collect(),
    );
    let table = parse(&doc).unwrap();
    assert_eq!(table.distinct_formats(), ["csv", "json", "mds"]);
    let mut walked: Vec<&str> = (0..table.len()).map(|s| table.format(s)).collect();
    walked.sort_unstable();
    walked.dedup();
    assert_eq!(table.distinct_formats(), walked);
    assert!(parse(&index(Vec::new()))
        .unwrap()
        .distinct_formats()
        .is_empty());
}
