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
            let names = column.names();
            if names.is_empty() {
                continue;
            }
            // Most datasets keep every file at the top: one scan of the names' bytes shows
            // it, instead of a split per name (650k shards: 0.17 s).
            if !names.any_holds(b'/') {
                dirs.insert("");
                continue;
            }
            let mut last = None;
            for name in names.iter() {
                // Consecutive shards mostly share a directory: skip the set for those.
                let dir = split_name(name).0;
                if last != Some(dir) {
                    dirs.insert(dir);
                    last = Some(dir);
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

    /// `file_dirs` as a walk over every shard's files.
    fn dirs_shard_by_shard(table: &IndexTable) -> Vec<&str> {
        let mut dirs = BTreeSet::new();
        for column in table.file_columns() {
            for shard in 0..table.len() {
                if let Some(file) = column.get(shard) {
                    dirs.insert(split_name(file.basename).0);
                }
            }
        }
        dirs.into_iter().collect()
    }

    #[test]
    fn file_dirs_match_a_walk_over_every_shard() {
        let entry = |raw: &str, zip: Option<&str>| {
            let zip = zip.map_or("null".to_owned(), |z| {
                format!(r#"{{"basename": "{z}", "bytes": 9, "hashes": {{}}}}"#)
            });
            format!(
                r#"{{"format": "mds", "version": 2, "compression": "zstd", "samples": 1,
                "hashes": [], "size_limit": null, "column_names": ["x"],
                "column_encodings": ["int"], "column_sizes": [8],
                "raw_data": {{"basename": "{raw}", "bytes": 20, "hashes": {{}}}},
                "zip_data": {zip}}}"#
            )
        };
        let cases: [&[(&str, Option<&str>)]; 5] = [
            &[("a.mds", Some("a.mds.zstd")), ("b.mds", None)],
            &[("a.mds", None), ("b.mds", None)],
            &[
                ("a.mds", Some("z/a.mds.zstd")),
                ("b.mds", Some("b.mds.zstd")),
            ],
            &[
                ("x/y/a.mds", None),
                ("x/y/b.mds", None),
                ("c.mds", None),
                ("x/d", None),
            ],
            &[
                ("s//a.mds", Some("t/a.mds.zstd")),
                ("b.mds", Some("t/u/b.mds.zstd")),
            ],
        ];
        for files in cases {
            let entries: Vec<String> = files.iter().map(|(r, z)| entry(r, *z)).collect();
            let text = format!(r#"{{"version": 2, "shards": [{}]}}"#, entries.join(", "));
            let table = parse_index_slice(text.as_bytes(), "index.json").unwrap();
            assert_eq!(table.file_dirs(), dirs_shard_by_shard(&table), "{files:?}");
        }
        let empty = parse_index_slice(br#"{"version": 2, "shards": []}"#, "index.json").unwrap();
        assert!(empty.file_dirs().is_empty());
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
