//! Shard file names: they stay inside the dataset directory, and no two entries (nor an entry
//! and the index itself) name the same file. Names compare as `os.path.normpath` makes them.

use std::borrow::Cow;
use std::collections::HashMap;

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
pub fn find_alias(table: &IndexTable, path: &str) -> Option<String> {
    let mut owner: HashMap<Cow<'_, str>, i64> = HashMap::with_capacity(2 * table.len() + 1);
    owner.insert(Cow::Borrowed(INDEX_BASENAME), -1);
    for shard in 0..table.len() {
        for column in table.file_columns() {
            let Some(file) = column.get(shard) else {
                continue;
            };
            let name = normpath(file.basename);
            match owner.get(&name) {
                None => {
                    owner.insert(name, shard as i64);
                }
                Some(&first) => {
                    let other = if first < 0 {
                        "the index itself".to_owned()
                    } else {
                        format!("shard {first}")
                    };
                    return Some(format!(
                        "Shard file {} of {path}, shard {shard} is also {other}: every file \
                         of a dataset must appear once.",
                        py_str(file.basename)
                    ));
                }
            }
        }
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

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
