//! Shard file names split as the cache sees them: the directory part of a basename (where the
//! file lands under the dataset directory) and the file's own name. A cache is checked by
//! listing each such directory once and asking which shards own what was listed, so that
//! nothing is done per shard for the (many) shards that are not there.

use std::collections::BTreeSet;

use super::IndexTable;

/// `posixpath.split` of a basename: its directory part, trailing slashes dropped (`""` for a
/// file at the top), and its file name.
pub fn split_name(basename: &str) -> (&str, &str) {
    match basename.rfind('/') {
        None => ("", basename),
        Some(i) => {
            let head = &basename[..i];
            let trimmed = head.trim_end_matches('/');
            let head = if trimmed.is_empty() { head } else { trimmed };
            (head, &basename[i + 1..])
        }
    }
}

impl IndexTable {
    /// The distinct directory parts of every file name of every shard, sorted.
    pub fn file_dirs(&self) -> Vec<&str> {
        let mut dirs = BTreeSet::new();
        for column in self.file_columns() {
            let mut last = None;
            for shard in 0..self.len() {
                if let Some(file) = column.get(shard) {
                    // Consecutive shards mostly share a directory: skip the set for those.
                    let dir = split_name(file.basename).0;
                    if last != Some(dir) {
                        dirs.insert(dir);
                        last = Some(dir);
                    }
                }
            }
        }
        dirs.into_iter().collect()
    }

    /// The shards (in order) with a file whose `(directory part, file name)` is in `found`.
    pub fn shards_with(&self, found: &BTreeSet<(&str, &str)>) -> Vec<usize> {
        if found.is_empty() {
            return Vec::new();
        }
        (0..self.len())
            .filter(|&shard| {
                self.file_columns().iter().any(|column| {
                    column
                        .get(shard)
                        .is_some_and(|f| found.contains(&split_name(f.basename)))
                })
            })
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::mds::index::parse_index_slice;

    #[test]
    fn splits_like_posixpath() {
        for (name, want) in [
            ("a.mds", ("", "a.mds")),
            ("sub/a.mds", ("sub", "a.mds")),
            ("sub//a.mds", ("sub", "a.mds")),
            ("x/y/a.mds", ("x/y", "a.mds")),
            ("sub/", ("sub", "")),
        ] {
            assert_eq!(split_name(name), want, "{name}");
        }
    }

    #[test]
    fn finds_the_shards_of_listed_names() {
        let entry = |name: &str, zip: &str| {
            format!(
                r#"{{"format": "mds", "version": 2, "compression": "zstd", "samples": 1,
                "hashes": [], "size_limit": null, "column_names": ["x"],
                "column_encodings": ["int"], "column_sizes": [8],
                "raw_data": {{"basename": "{name}", "bytes": 20, "hashes": {{}}}},
                "zip_data": {{"basename": "{zip}", "bytes": 9, "hashes": {{}}}}}}"#
            )
        };
        let text = format!(
            r#"{{"version": 2, "shards": [{}, {}, {}]}}"#,
            entry("a.mds", "a.mds.zstd"),
            entry("sub/b.mds", "sub/b.mds.zstd"),
            entry("c.mds", "c.mds.zstd")
        );
        let table = parse_index_slice(text.as_bytes(), "index.json").unwrap();
        assert_eq!(table.file_dirs(), ["", "sub"]);
        let found: BTreeSet<_> = [("", "c.mds.zstd"), ("sub", "b.mds"), ("", "b.mds")].into();
        assert_eq!(table.shards_with(&found), [1, 2]);
        assert!(table.shards_with(&BTreeSet::new()).is_empty());
    }
}
