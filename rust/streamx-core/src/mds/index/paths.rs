//! Shard file names: they stay inside the dataset directory, and no two entries (nor an entry
//! and the index itself) name the same file. Names compare as `os.path.normpath` makes them.

use std::borrow::Cow;
use std::hash::{BuildHasher, RandomState};

use super::repr::py_str;
use super::IndexTable;

/// The index's own file name, which no shard file may take.
pub const INDEX_BASENAME: &str = "index.json";

/// `posixpath.normpath` of a relative path: no `.`, no empty parts, `..` folded where it can.
pub fn normpath(path: &str) -> Cow<'_, str> {
    if is_normal(path) {
        return Cow::Borrowed(path);
    }
    let mut parts: Vec<&str> = Vec::new();
    for part in path.split('/') {
        match part {
            "" | "." => {}
            ".." if parts.last().is_some_and(|p| *p != "..") => {
                parts.pop();
            }
            _ => parts.push(part),
        }
    }
    if parts.is_empty() {
        Cow::Borrowed(".")
    } else {
        Cow::Owned(parts.join("/"))
    }
}

/// Whether `normpath` leaves `path` as it is: parts neither empty nor `.` nor `..` (a scan
/// of the bytes: every file name of a 650k-shard index is checked three times).
fn is_normal(path: &str) -> bool {
    let bytes = path.as_bytes();
    if !bytes.contains(&b'/') {
        // The usual name, one part: no split to set up.
        return !matches!(bytes, b"" | b"." | b"..");
    }
    bytes
        .split(|&b| b == b'/')
        .all(|p| !p.is_empty() && p != b"." && p != b"..")
}

/// A basename may hold sub-directories (from merged indexes) but never leave the dataset.
pub fn is_contained(basename: &str) -> bool {
    if is_normal(basename) {
        return !basename.as_bytes().contains(&b'\\');
    }
    if basename.is_empty() || basename.starts_with('/') || basename.contains('\\') {
        return false;
    }
    let normal = normpath(basename);
    !(normal == ".." || normal.starts_with("../") || normal == ".")
}

/// The directory of a cache's own files (ledger, claims), which no shard file may name.
pub const LEDGER_DIR: &str = ".streamx";

/// Whether a basename points into the cache's own `.streamx/` directory (or is it).
pub fn is_in_ledger_dir(basename: &str) -> bool {
    if is_normal(basename) {
        // Its first part is the directory: the name is it, or starts with it and a `/`.
        return basename
            .strip_prefix(LEDGER_DIR)
            .is_some_and(|rest| rest.is_empty() || rest.starts_with('/'));
    }
    let normal = normpath(basename);
    normal.split('/').next() == Some(LEDGER_DIR)
}

/// Whether the file names (normalized) and the index's own name are all distinct, judged
/// by keyed 64-bit hashes, sorted: distinct hashes prove distinct names, and sorting 8-byte
/// words is several times faster than sorting the names. Equal hashes (an alias, or a
/// collision, about one index in 10^7 at 650k shards) leave the answer to the exact check.
/// The key is random, so an index cannot be written to collide.
fn surely_distinct(table: &IndexTable) -> bool {
    let state = RandomState::new();
    let mut hashes: Vec<u64> = Vec::with_capacity(2 * table.len() + 1);
    hashes.push(state.hash_one(INDEX_BASENAME));
    for column in table.file_columns() {
        for shard in 0..table.len() {
            if let Some(file) = column.get(shard) {
                hashes.push(state.hash_one(normpath(file.basename).as_ref()));
            }
        }
    }
    hashes.sort_unstable();
    hashes.windows(2).all(|w| w[0] != w[1])
}

/// The first file that another entry (or the index) also names, as an error message.
///
/// "First" is in index order: the file whose name was already taken when it was reached.
/// The names are sorted rather than hashed: a hostile index cannot make that slow.
pub fn find_alias(table: &IndexTable, path: &str) -> Option<String> {
    if surely_distinct(table) {
        return None;
    }
    // (normalized name, place in index order): place 0 is the index itself, and file
    // `column` of shard `s` is place 4 s + column + 1. Two words a name, as 1.3M are sorted.
    let mut names: Vec<(Cow<'_, str>, u64)> = Vec::with_capacity(2 * table.len() + 1);
    names.push((Cow::Borrowed(INDEX_BASENAME), 0));
    for shard in 0..table.len() {
        for (column, files) in table.file_columns().iter().enumerate() {
            if let Some(file) = files.get(shard) {
                names.push((
                    normpath(file.basename),
                    4 * shard as u64 + column as u64 + 1,
                ));
            }
        }
    }
    names.sort_unstable();
    // The earliest second use of a name (within a name's run, places ascend).
    let (first, second) = names
        .windows(2)
        .filter(|w| w[0].0 == w[1].0)
        .map(|w| (w[0].1, w[1].1))
        .min_by_key(|&(_, b)| b)?;
    let shard_of = |place: u64| ((place - 1) / 4) as usize;
    let other = if first == 0 {
        "the index itself".to_owned()
    } else {
        format!("shard {}", shard_of(first))
    };
    let (shard, column) = (shard_of(second), ((second - 1) % 4) as usize);
    let written = table.file_columns()[column]
        .get(shard)
        .map_or("", |f| f.basename);
    Some(format!(
        "Shard file {} of {path}, shard {shard} is also {other}: every file of a dataset must \
         appear once.",
        py_str(written)
    ))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::mds::index::{parse_index_slice, IndexFault};
    use proptest::prelude::*;
    use std::collections::HashMap;

    /// The message of the first alias, found the way the check first did (by hashing, in
    /// index order); `files` are each shard's (raw, zip) names.
    fn first_alias(files: &[(String, Option<String>)]) -> Option<String> {
        let mut owner: HashMap<String, i64> = HashMap::from([(INDEX_BASENAME.into(), -1)]);
        for (shard, (raw, zip)) in files.iter().enumerate() {
            for name in std::iter::once(raw).chain(zip) {
                if let Some(&first) = owner.get(normpath(name).as_ref()) {
                    let other = if first < 0 {
                        "the index itself".to_owned()
                    } else {
                        format!("shard {first}")
                    };
                    return Some(format!(
                        "Shard file {} of x.json, shard {shard} is also {other}: every file of \
                         a dataset must appear once.",
                        py_str(name)
                    ));
                }
                owner.insert(normpath(name).into_owned(), shard as i64);
            }
        }
        None
    }

    fn index(files: &[(String, Option<String>)]) -> String {
        let file = |name: &Option<String>| match name {
            Some(n) => format!(r#"{{"basename": "{n}", "bytes": 30, "hashes": {{}}}}"#),
            None => "null".into(),
        };
        let entries: Vec<String> = files
            .iter()
            .map(|(raw, zip)| {
                format!(
                    r#"{{"format": "mds", "version": 2, "compression": {}, "samples": 1,
                    "hashes": [], "size_limit": null, "column_names": ["x"],
                    "column_encodings": ["int"], "column_sizes": [8], "raw_data": {},
                    "zip_data": {}}}"#,
                    if zip.is_some() { r#""zstd""# } else { "null" },
                    file(&Some(raw.clone())),
                    file(zip)
                )
            })
            .collect();
        format!(r#"{{"version": 2, "shards": [{}]}}"#, entries.join(","))
    }

    proptest! {
        #[test]
        fn reports_the_alias_the_hashing_check_reported(
            files in prop::collection::vec(
                ("(\\./)?[abc](/[ab])?", prop::option::of("[abc]\\.z|index\\.json")), 1..8)
        ) {
            let got = match parse_index_slice(index(&files).as_bytes(), "x.json") {
                Ok(_) => None,
                Err(IndexFault::Invalid(message)) => Some(message),
                Err(other) => panic!("{other}"),
            };
            prop_assert_eq!(got, first_alias(&files));
        }
    }

    #[test]
    fn normpath_matches_posixpath() {
        for (path, want) in [
            ("a/b", "a/b"),
            ("a//b/", "a/b"),
            ("./a/./b", "a/b"),
            ("a/../b", "b"),
            ("../a", "../a"),
            ("a/../..", ".."),
            ("..", ".."),
            ("", "."),
            (".", "."),
        ] {
            assert_eq!(normpath(path), want, "{path}");
        }
        assert!(is_contained("sub/shard.mds"));
        for bad in ["", "/etc/passwd", "a/../../b", "..", ".", "a\\b", "./"] {
            assert!(!is_contained(bad), "{bad}");
        }
        for own in [
            ".streamx",
            ".streamx/ledger",
            "a/../.streamx/x",
            "./.streamx//y",
        ] {
            assert!(is_in_ledger_dir(own), "{own}");
        }
        for fine in [".streamx2/a", "a/.streamx/b", "streamx/a"] {
            assert!(!is_in_ledger_dir(fine), "{fine}");
        }
    }
}
