//! Which files the ledger deletes when it evicts a shard: listed per shard by the caller, or
//! read from the datasets' index tables when a shard is evicted, so that a ledger over 650k
//! shards holds no path per shard.

use std::collections::HashMap;
use std::fmt::Write;
use std::path::PathBuf;
use std::sync::Arc;

use crate::error::{Error, Result};
use crate::mds::index::{split_name, IndexTable};

/// The shards of one index, as the ledger knows them.
#[derive(Clone)]
pub struct IndexedPart {
    /// The index's shards.
    pub table: Arc<IndexTable>,
    /// The ledger's id of the table's shard 0.
    pub first_shard: usize,
    /// The real directory of each directory part of the table's file names (see
    /// [`IndexTable::file_dirs`]), resolved once when the ledger is set up. A directory part
    /// that is absent led out of the dataset's local directory: its files are never deleted.
    pub dirs: HashMap<String, PathBuf>,
}

/// Each shard's files and the sizes the index gives them.
pub(super) enum ShardFiles {
    /// Given per shard (`sizes`, when given, has the shape of `files`).
    Listed {
        files: Vec<Vec<PathBuf>>,
        sizes: Vec<Vec<Option<u64>>>,
    },
    /// Read from index tables; a shard of no part has no files.
    Indexed(Vec<IndexedPart>),
}

impl ShardFiles {
    /// Shard `shard`'s files, each with its expected size (None: any size).
    pub(super) fn of(&self, shard: usize) -> Vec<(PathBuf, Option<u64>)> {
        match self {
            Self::Listed { files, sizes } => {
                let sizes = sizes.get(shard);
                let files = files.get(shard).map_or(&[][..], Vec::as_slice);
                let size = |i: usize| sizes.and_then(|s| s.get(i).copied().flatten());
                files
                    .iter()
                    .enumerate()
                    .map(|(i, path)| (path.clone(), size(i)))
                    .collect()
            }
            Self::Indexed(parts) => parts
                .iter()
                .find(|p| (p.first_shard..p.first_shard + p.table.len()).contains(&shard))
                .map_or_else(Vec::new, |p| p.files(shard - p.first_shard)),
        }
    }

    /// Checks that every indexed part lies within `num_shards` shards.
    pub(super) fn check(&self, num_shards: usize) -> Result<()> {
        let Self::Indexed(parts) = self else {
            return Ok(());
        };
        for part in parts {
            if part.first_shard.saturating_add(part.table.len()) > num_shards {
                return Err(Error::InvalidArgument(format!(
                    "an index of {} shards from shard {} does not fit {num_shards} shards",
                    part.table.len(),
                    part.first_shard
                )));
            }
        }
        Ok(())
    }

    /// The manifest of `num_shards` shards' files (`streamx cache` reads it back), as
    /// Python's `json.dumps(..., separators=(",", ":"))` writes it.
    pub(super) fn manifest(&self, num_shards: usize) -> Vec<u8> {
        let (mut files, mut sizes) = (String::from("["), String::from("["));
        for shard in 0..num_shards {
            let listed = self.of(shard);
            files.push_str(if shard == 0 { "[" } else { ",[" });
            sizes.push_str(if shard == 0 { "[" } else { ",[" });
            for (i, (path, size)) in listed.iter().enumerate() {
                if i > 0 {
                    files.push(',');
                    sizes.push(',');
                }
                json_str(&path.to_string_lossy(), &mut files);
                let _ = write!(sizes, "{}", size.unwrap_or(0));
            }
            files.push(']');
            sizes.push(']');
        }
        format!(r#"{{"version":1,"files":{files}],"sizes":{sizes}]}}"#).into_bytes()
    }
}

impl IndexedPart {
    fn files(&self, shard: usize) -> Vec<(PathBuf, Option<u64>)> {
        let mut found = Vec::new();
        for column in self.table.file_columns() {
            let Some(file) = column.get(shard) else {
                continue;
            };
            let (dir, name) = split_name(file.basename);
            if let Some(real) = self.dirs.get(dir) {
                found.push((real.join(name), Some(file.bytes)));
            }
        }
        found
    }
}

/// A JSON string as Python's `json.dumps` writes it (`ensure_ascii`).
fn json_str(text: &str, out: &mut String) {
    out.push('"');
    for c in text.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            '\t' => out.push_str("\\t"),
            '\u{8}' => out.push_str("\\b"),
            '\u{c}' => out.push_str("\\f"),
            ' '..='~' => out.push(c),
            c => {
                let mut units = [0u16; 2];
                for unit in c.encode_utf16(&mut units) {
                    let _ = write!(out, "\\u{unit:04x}");
                }
            }
        }
    }
    out.push('"');
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn manifest_reads_as_python_writes_it() {
        let files = ShardFiles::Listed {
            files: vec![vec![PathBuf::from("/c/a\"é😀.mds")], vec![]],
            sizes: vec![vec![Some(7)], vec![]],
        };
        let text = String::from_utf8(files.manifest(2)).unwrap();
        assert_eq!(
            text,
            r#"{"version":1,"files":[["/c/a\"\u00e9\ud83d\ude00.mds"],[]],"sizes":[[7],[]]}"#
        );
        let none = ShardFiles::Indexed(Vec::new());
        assert_eq!(
            String::from_utf8(none.manifest(0)).unwrap(),
            r#"{"version":1,"files":[],"sizes":[]}"#
        );
    }
}
