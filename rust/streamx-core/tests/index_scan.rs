//! The index scanner against the general parser: every document, valid or not, gives the
//! same table or the same error through `parse_index_slice` (scanner first) as through
//! `parse_index_general` (`serde_json` only), and none panics.

use streamx_core::mds::index::{parse_index_general, parse_index_slice, IndexFault};

const SHOWN: &str = "/d/index.json";

/// An entry as mosaicml-streaming writes it (sorted keys, its separators).
fn entry(i: usize, zip: bool) -> String {
    let zip_data = if zip {
        format!(
            r#"{{"basename": "shard.{i:05}.mds.zstd", "bytes": {}, "hashes": {{}}}}"#,
            100 + i
        )
    } else {
        "null".to_owned()
    };
    format!(
        r#"{{"column_encodings": ["str", "int"], "column_names": ["text", "id"], "column_sizes": [null, 8], "compression": {}, "format": "mds", "hashes": ["sha1", "xxh64"], "raw_data": {{"basename": "shard.{i:05}.mds", "bytes": {}, "hashes": {{"sha1": "{:040x}", "xxh64": "{:016x}"}}}}, "samples": {}, "size_limit": 67108864, "version": 2, "zip_data": {zip_data}}}"#,
        if zip { r#""zstd""# } else { "null" },
        4000 + i,
        i,
        i * 3,
        10 + i % 7,
    )
}

fn index(entries: &[String]) -> String {
    format!(r#"{{"shards": [{}], "version": 2}}"#, entries.join(", "))
}

fn usual() -> String {
    index(&(0..6).map(|i| entry(i, i % 2 == 0)).collect::<Vec<_>>())
}

/// Both parsers agree on `doc`; returns whether it is a valid index.
fn agree(doc: &[u8]) -> bool {
    let scanned = parse_index_slice(doc, SHOWN);
    let general = parse_index_general(doc, SHOWN);
    match (scanned, general) {
        (Ok(a), Ok(b)) => {
            assert_eq!(
                a.to_state(),
                b.to_state(),
                "{}",
                String::from_utf8_lossy(doc)
            );
            true
        }
        (Err(a), Err(b)) => {
            assert_eq!(a.to_string(), b.to_string());
            assert_eq!(kind(&a), kind(&b));
            false
        }
        (a, b) => panic!(
            "the parsers disagree on {}: {:?} / {:?}",
            String::from_utf8_lossy(doc),
            a.err(),
            b.err()
        ),
    }
}

fn kind(fault: &IndexFault) -> u8 {
    match fault {
        IndexFault::Io(_) => 0,
        IndexFault::Syntax { .. } => 1,
        IndexFault::Invalid(_) => 2,
    }
}

#[test]
fn valid_layouts_read_the_same() {
    let variants = [
        usual(),
        index(&[]),
        // Version first, other spacing, no spacing at all.
        format!(r#"{{"version": 2, "shards": [{}]}}"#, entry(0, true)),
        format!("\n{{ \"shards\" :\t[ {} ]\r\n, \"version\":2 }}\n", entry(1, false)),
        usual().replace(", ", ",").replace(": ", ":"),
        // Escapes, non-ASCII names, another top-level key, other entry keys, a float
        // version: all valid (all but the names left to the general parser).
        usual().replace("shard.00003.mds\"", "shard.0000\\u0033.mds\""),
        usual().replace("shard.00003.mds\"", "shärd.00003.mds\""),
        usual().replace(r#""version": 2}"#, r#""version": 2, "extra": [1, {"a": null}]}"#),
        usual().replace(r#""format": "mds","#, r#""format": "mds", "note": "x","#),
        usual().replace(r#""version": 2}"#, r#""version": 2.0}"#),
        // Repeated keys: the last value counts (the first place for a hash).
        usual().replace(r#""samples": 11,"#, r#""samples": 11, "samples": 12,"#),
        usual().replace(r#""version": 2}"#, r#""version": 2, "version": 2}"#),
        usual().replace(r#"{"shards""#, r#"{"shards": {}, "shards""#),
        usual().replace(r#""hashes": {}"#, r#""hashes": {"sha1": "a", "md5": "c", "sha1": "b"}"#),
        // Non-MDS shards with their own keys; a negative size limit.
        index(&[
            r#"{"columns": {"a": "int"}, "compression": null, "format": "json", "hashes": [], "newline": "\n", "raw_data": {"basename": "s.json", "bytes": 10, "hashes": {}}, "raw_meta": {"basename": "s.json.meta", "bytes": 12, "hashes": {}}, "samples": 1, "size_limit": -1, "version": 2, "zip_data": null}"#
                .to_owned(),
        ]),
        // A layout without fixed sizes, no hashes key, a file with no hashes key.
        index(&[
            r#"{"column_encodings": ["bytes"], "column_names": ["b"], "column_sizes": [null], "compression": null, "format": "mds", "raw_data": {"basename": "a/b.mds", "bytes": 99}, "samples": 3, "size_limit": null, "version": 2, "zip_data": null}"#
                .to_owned(),
        ]),
    ];
    for doc in &variants {
        assert!(agree(doc.as_bytes()), "not valid: {doc}");
    }
}

#[test]
fn bad_indexes_give_the_general_parsers_errors() {
    let usual = usual();
    let bad = [
        String::new(),
        "[]".to_owned(),
        usual.replace(r#""samples": 11,"#, r#""samples": "11","#),
        usual.replace(
            r#""samples": 11,"#,
            r#""samples": 99999999999999999999999,"#,
        ),
        usual.replace(r#""samples": 11,"#, r#""samples": 1e3,"#),
        usual.replace(r#""samples": 11,"#, r#""samples": 011,"#),
        usual.replace(r#""samples": 11,"#, r#""samples": -11,"#),
        usual.replace(r#""samples": 11,"#, ""),
        usual.replace(r#""format": "mds","#, r#""format": "mdx","#),
        usual.replace(r#""compression": "zstd""#, r#""compression": "zstd:99""#),
        usual.replace(r#""bytes": 4003"#, r#""bytes": 10"#),
        usual.replace("shard.00003.mds\"", "../shard.00003.mds\""),
        usual.replace("shard.00003.mds\"", "shard.00002.mds\""),
        usual.replace(r#""column_sizes": [null, 8]"#, r#""column_sizes": [null]"#),
        usual.replace(
            r#""column_names": ["text", "id"]"#,
            r#""column_names": ["id", "id"]"#,
        ),
        usual.replace(r#""version": 2}"#, r#""version": 3}"#),
        usual.replace(r#""hashes": {}"#, r#""hashes": {"sha1": 1}"#),
        usual.replace("shard.00003.mds\"", "shard.0000\u{1}.mds\""),
        usual.replace("shard.00003.mds\"", "shard.0000\\q.mds\""),
        format!("{usual} x"),
        format!("{usual}}}"),
        usual.replace(r#""zip_data": null"#, r#""zip_data": nul"#),
        usual.replace(r#""zip_data": null"#, r#""zip_data": nullx"#),
    ];
    for doc in &bad {
        assert!(!agree(doc.as_bytes()), "accepted: {doc}");
    }
    // Bytes that are not UTF-8, inside and outside a string.
    for (at, offset) in [("shard.00003", 2), (r#""samples": 11"#, 10)] {
        let mut doc = usual.clone().into_bytes();
        let i = usual.find(at).unwrap() + offset;
        doc[i] = 0xff;
        assert!(!agree(&doc));
    }
}

#[test]
fn every_truncation_and_many_mutations_agree() {
    let doc = usual().into_bytes();
    for end in 0..doc.len() {
        assert!(!agree(&doc[..end]));
    }
    // Single bytes replaced, by a fixed sequence (no seed to record).
    let mut state = 0x9e37_79b9_7f4a_7c15u64;
    let mut next = || {
        state ^= state << 13;
        state ^= state >> 7;
        state ^= state << 17;
        state
    };
    let palette = b" \"\\{}[],:0129-.eEnul\x00\xff\xc3a/";
    for _ in 0..20_000 {
        let mut bad = doc.clone();
        let at = (next() % doc.len() as u64) as usize;
        bad[at] = palette[(next() % palette.len() as u64) as usize];
        agree(&bad);
    }
}
