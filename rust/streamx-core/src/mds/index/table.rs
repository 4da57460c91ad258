//! [`IndexTable`]: every shard entry of an index as columns, about 60 bytes a shard plus its
//! file names, where a list of per-shard objects took kilobytes.

use serde::{Deserialize, Serialize};

use super::check::{same_texts, Entry, Schema, SchemaView};
use super::columns::{FileColumn, HashRef, Interner, StrArena};

/// The shard entries of one `index.json`, in index order.
#[derive(Debug, Default, Clone, Serialize, Deserialize)]
pub struct IndexTable {
    /// Samples of each shard.
    pub samples: Vec<u64>,
    formats: Interner<String>,
    format_ids: Vec<u32>,
    compressions: Interner<Option<String>>,
    compression_ids: Vec<u32>,
    hash_lists: Interner<Vec<String>>,
    hash_list_ids: Vec<u32>,
    size_limits: Interner<Option<i64>>,
    size_limit_ids: Vec<u32>,
    schemas: Interner<Option<Schema>>,
    schema_ids: Vec<u32>,
    extras: Interner<String>,
    extra_ids: Vec<u32>,
    /// `raw_data`, `zip_data`, `raw_meta`, `zip_meta`.
    files: [FileColumn; 4],
    hash_algos: Interner<String>,
    digests: StrArena,
}

/// One file of a shard: basename, size, and `(algorithm, digest)` pairs.
pub type FileTuple<'a> = (&'a str, u64, Vec<(&'a str, &'a str)>);

impl IndexTable {
    /// Number of shards.
    pub fn len(&self) -> usize {
        self.samples.len()
    }

    /// Whether the index lists no shard.
    pub fn is_empty(&self) -> bool {
        self.samples.is_empty()
    }

    /// The four file columns: `raw_data`, `zip_data`, `raw_meta`, `zip_meta`.
    pub fn file_columns(&self) -> &[FileColumn; 4] {
        &self.files
    }

    /// Shard `shard`'s format (`"mds"`, `"json"`, `"csv"`...).
    pub fn format(&self, shard: usize) -> &str {
        &self.formats.values()[self.format_ids[shard] as usize]
    }

    /// Shard `shard`'s compression spec, if compressed.
    pub fn compression(&self, shard: usize) -> Option<&str> {
        self.compressions.values()[self.compression_ids[shard] as usize].as_deref()
    }

    /// The distinct formats of the shards, sorted.
    pub fn distinct_formats(&self) -> Vec<&str> {
        // Marks each id in use: a table from a state may list a format no shard has.
        let mut used = vec![false; self.formats.values().len()];
        for &id in &self.format_ids {
            used[id as usize] = true;
        }
        let mut formats: Vec<&str> = self
            .formats
            .values()
            .iter()
            .zip(used)
            .filter_map(|(format, used)| used.then_some(format.as_str()))
            .collect();
        formats.sort_unstable();
        formats.dedup();
        formats
    }

    /// The distinct compressions, by compression id.
    pub fn compressions(&self) -> &[Option<String>] {
        self.compressions.values()
    }

    /// The compression id of each shard.
    pub fn compression_ids(&self) -> &[u32] {
        &self.compression_ids
    }

    /// The shard-level `hashes` list (algorithm names).
    pub fn hash_list(&self, shard: usize) -> &[String] {
        &self.hash_lists.values()[self.hash_list_ids[shard] as usize]
    }

    /// The shard's `size_limit`.
    pub fn size_limit(&self, shard: usize) -> Option<i64> {
        self.size_limits.values()[self.size_limit_ids[shard] as usize]
    }

    /// The distinct column layouts (`None` for non-MDS shards), by schema id.
    pub fn schemas(&self) -> &[Option<Schema>] {
        self.schemas.values()
    }

    /// The schema id of each shard.
    pub fn schema_ids(&self) -> &[u32] {
        &self.schema_ids
    }

    /// The entry's keys this table does not model, as a JSON object text (`""`: none).
    pub fn extra(&self, shard: usize) -> &str {
        &self.extras.values()[self.extra_ids[shard] as usize]
    }

    /// File `column` (0..4, see [`IndexTable::file_columns`]) of shard `shard`.
    pub fn file(&self, shard: usize, column: usize) -> Option<FileTuple<'_>> {
        let file = self.files[column].get(shard)?;
        let hashes = file
            .hashes
            .iter()
            .map(|h| {
                let algo = self.hash_algos.values()[h.algo as usize].as_str();
                (algo, self.digests.get(h.digest as usize))
            })
            .collect();
        Some((file.basename, file.bytes, hashes))
    }

    /// The table as bytes, for pickling; [`IndexTable::from_state`] reads them back.
    pub fn to_state(&self) -> Vec<u8> {
        serde_json::to_vec(self).unwrap_or_default()
    }

    /// A table from [`IndexTable::to_state`]'s bytes.
    pub fn from_state(state: &[u8]) -> crate::Result<Self> {
        let table: Self = serde_json::from_slice(state)
            .map_err(|e| crate::Error::InvalidValue(format!("Invalid ShardIndex state: {e}")))?;
        table.check_lengths()?;
        Ok(table)
    }

    /// Every per-shard column has one value a shard (a state from elsewhere may not).
    fn check_lengths(&self) -> crate::Result<()> {
        let n = self.len();
        let ids = [
            &self.format_ids,
            &self.compression_ids,
            &self.hash_list_ids,
            &self.size_limit_ids,
            &self.schema_ids,
            &self.extra_ids,
        ];
        let ok = ids.iter().all(|c| c.len() == n)
            && self.files.iter().all(|c| c.is_consistent(n))
            && self.files.iter().flat_map(FileColumn::hash_refs).all(|h| {
                (h.algo as usize) < self.hash_algos.values().len()
                    && (h.digest as usize) < self.digests.len()
            })
            && self
                .format_ids
                .iter()
                .all(|&i| (i as usize) < self.formats.values().len())
            && self
                .compression_ids
                .iter()
                .all(|&i| (i as usize) < self.compressions.values().len())
            && self
                .hash_list_ids
                .iter()
                .all(|&i| (i as usize) < self.hash_lists.values().len())
            && self
                .size_limit_ids
                .iter()
                .all(|&i| (i as usize) < self.size_limits.values().len())
            && self
                .schema_ids
                .iter()
                .all(|&i| (i as usize) < self.schemas.values().len())
            && self
                .extra_ids
                .iter()
                .all(|&i| (i as usize) < self.extras.values().len());
        if ok {
            Ok(())
        } else {
            Err(crate::Error::InvalidValue(
                "Inconsistent ShardIndex state".into(),
            ))
        }
    }

    /// Bytes a shard may take in a cache: every file, raw and compressed.
    pub fn max_size(&self, shard: usize) -> u64 {
        self.files
            .iter()
            .map(|c| c.bytes[shard])
            .filter(|&b| b != FileColumn::ABSENT)
            .fold(0u64, u64::saturating_add)
    }
}

/// Folds checked entries into an [`IndexTable`].
#[derive(Default)]
pub(super) struct TableBuilder {
    table: IndexTable,
}

impl TableBuilder {
    /// Adds a checked entry; its strings are copied only where the table has not seen them.
    pub fn push(&mut self, entry: &Entry<'_>) {
        let t = &mut self.table;
        t.samples.push(entry.samples);
        let format: &str = &entry.format;
        t.format_ids
            .push(t.formats.intern_like(format, |a, b| a == b, str::to_owned));
        let compression = entry.compression.as_deref();
        t.compression_ids.push(t.compressions.intern_like(
            &compression,
            |a, b| a.as_deref() == *b,
            |c| c.map(str::to_owned),
        ));
        t.hash_list_ids.push(t.hash_lists.intern_like(
            entry.hashes.as_slice(),
            |a, b| same_texts(a, b),
            |names| names.iter().map(ToString::to_string).collect(),
        ));
        t.size_limit_ids
            .push(t.size_limits.intern(entry.size_limit));
        t.schema_ids.push(t.schemas.intern_like(
            &entry.schema,
            |a, b| match (a, b) {
                (Some(a), Some(b)) => b.is(a),
                (a, b) => a.is_none() && b.is_none(),
            },
            |s| s.as_ref().map(SchemaView::to_schema),
        ));
        let extra: &str = &entry.extra;
        t.extra_ids
            .push(t.extras.intern_like(extra, |a, b| a == b, str::to_owned));
        for (column, file) in t.files.iter_mut().zip(&entry.files) {
            let Some(file) = file else {
                column.push(None);
                continue;
            };
            let hashes: Vec<HashRef> = file
                .hashes
                .iter()
                .map(|(algo, digest)| HashRef {
                    algo: t
                        .hash_algos
                        .intern_like(algo.as_ref(), |a, b| a == b, str::to_owned),
                    digest: t.digests.push(digest) as u32,
                })
                .collect();
            column.push(Some((&file.basename, file.bytes, &hashes)));
        }
    }

    pub fn finish(mut self) -> IndexTable {
        let t = &mut self.table;
        t.formats.freeze();
        t.compressions.freeze();
        t.hash_lists.freeze();
        t.size_limits.freeze();
        t.schemas.freeze();
        t.extras.freeze();
        t.hash_algos.freeze();
        for column in &mut t.files {
            column.shrink();
        }
        for ids in [
            &mut t.format_ids,
            &mut t.compression_ids,
            &mut t.hash_list_ids,
            &mut t.size_limit_ids,
            &mut t.schema_ids,
            &mut t.extra_ids,
        ] {
            ids.shrink_to_fit();
        }
        t.samples.shrink_to_fit();
        self.table
    }
}
