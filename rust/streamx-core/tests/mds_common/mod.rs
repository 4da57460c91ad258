//! Helpers shared by the `mds_*` integration tests: fixtures written by mosaicml-streaming
//! (see `fixtures/mds/gen_fixtures.py`) and the worked example of COMPAT-SPEC §1.6.
#![allow(dead_code)]

use std::path::{Path, PathBuf};

use streamx_core::compression::Compression;
use streamx_core::mds::{encode_ndarray, ColumnLayout, ScalarType};
use streamx_core::reader::ShardDesc;

/// The writer config of the §1.6 example, as `json.dumps(config, sort_keys=True)` gives it.
pub const EXAMPLE_CONFIG: &str = r#"{"column_encodings": ["ndarray", "float32", "int", "str", "ndarray:uint8:2"], "column_names": ["arr", "f", "id", "name", "vec"], "column_sizes": [null, 4, 8, null, 2], "compression": null, "format": "mds", "hashes": [], "size_limit": 67108864, "version": 2}"#;

/// Column sizes of the example: arr, f, id, name, vec.
pub fn example_layout() -> ColumnLayout {
    ColumnLayout::new(vec![None, Some(4), Some(8), None, Some(2)])
}

pub fn fixture(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures/mds")
        .join(name)
}

/// The encoded columns of one example sample: `arr` is int16 [[1,2,3]] for sample 0 and
/// float32 [9.0] for sample 1.
pub fn example_columns(id: i64, second: bool) -> Vec<Vec<u8>> {
    let mut arr = Vec::new();
    if second {
        encode_ndarray(
            None,
            None,
            ScalarType::F32,
            &[1],
            &9.0f32.to_le_bytes(),
            &mut arr,
        )
        .unwrap();
    } else {
        let values: Vec<u8> = [1i16, 2, 3].iter().flat_map(|v| v.to_le_bytes()).collect();
        encode_ndarray(None, None, ScalarType::I16, &[1, 3], &values, &mut arr).unwrap();
    }
    let (f, name, vec): (f32, &str, [u8; 2]) = if second {
        (-2.0, "xyz", [3, 4])
    } else {
        (1.5, "ab", [1, 2])
    };
    let mut vec_col = Vec::new();
    encode_ndarray(
        Some(ScalarType::U8),
        Some(&[2]),
        ScalarType::U8,
        &[2],
        &vec,
        &mut vec_col,
    )
    .unwrap();
    vec![
        arr,
        f.to_le_bytes().to_vec(),
        id.to_le_bytes().to_vec(),
        name.as_bytes().to_vec(),
        vec_col,
    ]
}

/// One framed example sample.
pub fn example_sample(id: i64, second: bool) -> Vec<u8> {
    let cols = example_columns(id, second);
    let refs: Vec<&[u8]> = cols.iter().map(Vec::as_slice).collect();
    let mut out = Vec::new();
    example_layout().frame(&refs, &mut out).unwrap();
    out
}

/// The reader's view of a dataset directory, from its `index.json`.
pub fn descs_from_index(dir: &Path) -> Vec<ShardDesc> {
    let index: serde_json::Value =
        serde_json::from_slice(&std::fs::read(dir.join("index.json")).unwrap()).unwrap();
    let shards = index["shards"].as_array().unwrap();
    shards
        .iter()
        .map(|s| {
            let sizes: Vec<Option<u64>> = s["column_sizes"]
                .as_array()
                .unwrap()
                .iter()
                .map(serde_json::Value::as_u64)
                .collect();
            let zip = s["zip_data"]["basename"].as_str();
            ShardDesc {
                raw_path: dir.join(s["raw_data"]["basename"].as_str().unwrap()),
                zip_path: zip.map(|b| dir.join(b)),
                compression: s["compression"]
                    .as_str()
                    .map(|c| Compression::parse(c).unwrap()),
                samples: s["samples"].as_u64().unwrap(),
                raw_bytes: s["raw_data"]["bytes"].as_u64(),
                layout: ColumnLayout::from_sizes(&sizes).unwrap(),
            }
        })
        .collect()
}

/// Copies a fixture dataset into a fresh temp dir (readers may decompress into it).
pub fn copy_fixture(name: &str) -> tempfile::TempDir {
    let tmp = tempfile::tempdir().unwrap();
    for entry in std::fs::read_dir(fixture(name)).unwrap() {
        let entry = entry.unwrap();
        std::fs::copy(entry.path(), tmp.path().join(entry.file_name())).unwrap();
    }
    tmp
}
