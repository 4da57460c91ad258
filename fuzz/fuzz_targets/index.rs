//! An `index.json` document: every value the core takes from an index (compression spec,
//! column encodings and sizes) goes through the core's parsers.
#![no_main]

use libfuzzer_sys::fuzz_target;
use serde_json::Value;
use streamx_core::compression::Compression;
use streamx_core::mds::{ColumnLayout, Encoding};

fuzz_target!(|data: &[u8]| {
    let Ok(index) = serde_json::from_slice::<Value>(data) else {
        return;
    };
    let Some(shards) = index.get("shards").and_then(Value::as_array) else {
        return;
    };
    for shard in shards {
        if let Some(spec) = shard.get("compression").and_then(Value::as_str) {
            if let Ok(c) = Compression::parse(spec) {
                assert_eq!(Compression::parse(&c.to_string()).unwrap(), c);
            }
        }
        for enc in strings(shard.get("column_encodings")) {
            if let Ok(e) = Encoding::parse(enc) {
                let _ = e.fixed_size();
            }
        }
        let sizes: Vec<Option<u64>> = shard
            .get("column_sizes")
            .and_then(Value::as_array)
            .map(|a| a.iter().map(Value::as_u64).collect())
            .unwrap_or_default();
        let _ = ColumnLayout::from_sizes(&sizes);
    }
});

fn strings(value: Option<&Value>) -> impl Iterator<Item = &str> {
    value
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .filter_map(Value::as_str)
}
