//! The scanner's parts, alone; `tests/index_scan.rs` compares it whole with the general parser.

use super::super::entry::{COLUMN_KEYS, FILE_KEYS};
use super::{plain_run, scan, slot_of, STOPS};

#[test]
fn plain_runs_end_at_the_first_stop() {
    // Every stop and a few other bytes, at every position of runs of 0 to 20 bytes.
    let others = [
        b'a', b'~', 0x7f, 0x80, 0xc3, 0xff, b' ', b'!', b'#', b'[', b']',
    ];
    for len in 0..20 {
        for stop in (0..=255u8).filter(|&b| STOPS[b as usize]) {
            for other in others {
                let mut bytes = vec![other; len];
                bytes.push(stop);
                bytes.extend_from_slice(&[b'"'; 9]);
                assert_eq!(plain_run(&bytes), Some(len), "{len} {stop} {other}");
            }
        }
        assert_eq!(plain_run(&vec![b'a'; len]), None);
    }
}

#[test]
fn every_key_has_its_slot() {
    let scalars = [
        "format",
        "version",
        "compression",
        "samples",
        "hashes",
        "size_limit",
    ];
    let keys = scalars.iter().chain(&FILE_KEYS).chain(&COLUMN_KEYS);
    for (slot, key) in keys.enumerate() {
        let quoted = format!("{key}\": 1");
        assert_eq!(
            slot_of(quoted.as_bytes()),
            Some((slot, key.len() + 1)),
            "{key}"
        );
        assert_eq!(slot_of(&quoted.as_bytes()[..key.len()]), None, "{key}");
        assert_eq!(slot_of(format!("{key}x\"").as_bytes()), None, "{key}");
    }
    for odd in [
        "formax\"",
        "hashez\"",
        "raw_dat_\"",
        "zip_metx\"",
        "column_namez\"",
        "",
        "x",
    ] {
        assert_eq!(slot_of(odd.as_bytes()), None, "{odd}");
    }
}

const ENTRY: &str = r#"{"column_encodings": ["str", "int"], "column_names": ["text", "id"], "column_sizes": [null, 8], "compression": "zstd", "format": "mds", "hashes": [], "raw_data": {"basename": "shard.00000.mds", "bytes": 4000, "hashes": {"sha1": "ab"}}, "samples": 9, "size_limit": 67108864, "version": 2, "zip_data": null}"#;

fn doc(entry: &str) -> String {
    format!(r#"{{"shards": [{entry}], "version": 2}}"#)
}

#[test]
fn reads_the_usual_layout() {
    assert!(scan(doc(ENTRY).as_bytes(), "i").is_some());
    assert!(scan(br#"{"version": 2, "shards": []}"#, "i").is_some());
    assert!(scan(br#" {"version":2,"shards":[ ]} "#, "i").is_some());
    assert_eq!(
        scan(doc(ENTRY).as_bytes(), "i").map(|t| t.finish().len()),
        Some(1)
    );
}

#[test]
fn leaves_everything_else_to_the_general_parser() {
    let odd = [
        ENTRY.replace("shard.00000", "shard.\\u0030"),
        ENTRY.replace(r#""samples": 9"#, r#""samples": 9.0"#),
        ENTRY.replace(r#""samples": 9"#, r#""samples": 09"#),
        ENTRY.replace(r#""samples": 9"#, r#""samples": 18446744073709551616"#),
        ENTRY.replace(r#""samples": 9"#, r#""samples": 9, "samples": 9"#),
        ENTRY.replace(r#""samples": 9"#, r#""samples": 9, "other": 9"#),
        ENTRY.replace(r#""sha1": "ab""#, r#""sha1": "ab", "sha1": "ab""#),
        ENTRY.replace(r#""bytes": 4000"#, r#""bytes": 4000, "bytes": 4000"#),
        ENTRY.replace(
            r#""size_limit": 67108864"#,
            r#""size_limit": 9223372036854775808"#,
        ),
        // Fails its checks: the general parser makes the message.
        ENTRY.replace(r#""samples": 9"#, r#""samples": 999"#),
        ENTRY.replace("\"mds\"", "\"mdz\""),
    ];
    for entry in &odd {
        assert!(scan(doc(entry).as_bytes(), "i").is_none(), "{entry}");
    }
    for whole in [
        String::new(),
        format!("{} ", doc(ENTRY)).replace("], ", "] "),
        doc(ENTRY).replace(r#""version": 2"#, r#""version": 2, "x": 1"#),
        doc(ENTRY).replace(r#""version": 2"#, r#""version": 1"#),
        doc(ENTRY).replace(r#", "version": 2"#, ""),
        format!("{}x", doc(ENTRY)),
        doc(&ENTRY.replace("shard", "sh\u{e4}rd")).replace('\u{e4}', "\u{1}"),
    ] {
        assert!(scan(whole.as_bytes(), "i").is_none(), "{whole}");
    }
    // Not UTF-8 in a string.
    let mut bytes = doc(ENTRY).into_bytes();
    let at = bytes.iter().position(|&b| b == b'.').unwrap();
    bytes[at] = 0xff;
    assert!(scan(&bytes, "i").is_none());
}
