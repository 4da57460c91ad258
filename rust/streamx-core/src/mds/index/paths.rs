//! Shard file names: they stay inside the dataset directory, and no two entries (nor an entry
//! and the index itself) name the same file. Names compare as `os.path.normpath` makes them.

use std::borrow::Cow;

use super::repr::py_str;
use super::IndexTable;

/// The index's own file name, which no shard file may take.
pub const INDEX_BASENAME: &str = "index.json";

/// `posixpath.normpath` of a relative path: no `.`, no empty parts, `..` folded where it can.
pub fn normpath(path: &str) -> Cow<'_, str> {
    let clean = !path.is_empty()
        && !path.ends_with('/')
        && path
            .split('/')
            .all(|p| !p.is_empty() && p != "." && p != "..");
    if clean {
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

/// A basename may hold sub-directories (from merged indexes) but never leave the dataset.
pub fn is_contained(basename: &str) -> bool {
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
    let normal = normpath(basename);
    normal.split('/').next() == Some(LEDGER_DIR)
}

/// The first file that another entry (or the index) also names, as an error message.
///
/// "First" is in index order: the file whose name was already taken when it was reached.
/// The names are sorted rather than hashed: a hostile index cannot make that slow.
pub fn find_alias(table: &IndexTable, path: &str) -> Option<String> {
    // (normalized name, place in index order, shard, name as written); the index is first.
    let mut names: Vec<(Cow<'_, str>, u32, i64, &str)> = Vec::with_capacity(2 * table.len() + 1);
    names.push((Cow::Borrowed(INDEX_BASENAME), 0, -1, INDEX_BASENAME));
    for shard in 0..table.len() {
        for column in table.file_columns() {
            if let Some(file) = column.get(shard) {
                let place = names.len() as u32;
                names.push((normpath(file.basename), place, shard as i64, file.basename));
            }
        }
    }
    names.sort_unstable_by(|a, b| a.0.cmp(&b.0).then(a.1.cmp(&b.1)));
    // The earliest second use of a name (within a name's run, places ascend).
    let (first, second) = names
        .windows(2)
        .filter(|w| w[0].0 == w[1].0)
        .map(|w| (&w[0], &w[1]))
        .min_by_key(|(_, b)| b.1)?;
    let other = if first.2 < 0 {
        "the index itself".to_owned()
    } else {
        format!("shard {}", first.2)
    };
    Some(format!(
        "Shard file {} of {path}, shard {} is also {other}: every file of a dataset must \
         appear once.",
        py_str(second.3),
        second.2
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
