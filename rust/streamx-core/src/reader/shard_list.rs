//! Which shards a [`ShardSet`](super::ShardSet) reads and where their files are: each shard
//! described in full ([`ShardDesc`]), or index tables whose file names are joined to their
//! directory only when a shard is opened. The second keeps nothing per shard beyond the
//! tables themselves; holding two paths and a layout per shard cost a 650k-shard dataset
//! about 100 MB and 0.3 s of construction.

use std::borrow::Cow;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use super::ShardDesc;
use crate::compression::Compression;
use crate::error::{Error, Result};
use crate::mds::index::{is_contained, IndexTable};
use crate::mds::sample::ColumnLayout;

/// One index read as a table: its file names are relative to `dir`, and its schema id `s`
/// is the reader's layout `first_schema + s`.
#[derive(Debug, Clone)]
pub struct IndexedPart {
    pub table: Arc<IndexTable>,
    pub dir: PathBuf,
    pub first_schema: usize,
}

#[derive(Debug)]
pub(super) struct Part {
    part: IndexedPart,
    /// The codec of each of the table's distinct compressions, parsed once.
    codecs: Vec<Option<Compression>>,
}

#[derive(Debug)]
pub(super) enum ShardList {
    Listed(Vec<ShardDesc>),
    Indexed {
        parts: Vec<Part>,
        /// `starts[p]`: the number of shards in the parts before `p`.
        starts: Vec<usize>,
        len: usize,
        layouts: Vec<ColumnLayout>,
    },
}

impl ShardList {
    /// The shards of `parts`, in order, with their layouts by schema id. A table's schema id
    /// with no layout, or a compression no codec reads, is refused here, before any open.
    pub(super) fn indexed(parts: Vec<IndexedPart>, layouts: Vec<ColumnLayout>) -> Result<Self> {
        let mut starts = Vec::with_capacity(parts.len());
        let mut len = 0usize;
        let mut built = Vec::with_capacity(parts.len());
        for part in parts {
            let table = &part.table;
            let top = table.schema_ids().iter().max().map(|&id| id as usize);
            if let Some(id) = top.map(|id| part.first_schema.saturating_add(id)) {
                if id >= layouts.len() {
                    return Err(Error::InvalidArgument(format!("No schema {id}")));
                }
            }
            let codecs = table
                .compressions()
                .iter()
                .map(|c| c.as_deref().map(Compression::parse).transpose())
                .collect::<Result<Vec<_>>>()?;
            if table
                .compression_ids()
                .iter()
                .any(|&id| id as usize >= codecs.len())
            {
                return Err(Error::InvalidArgument(format!(
                    "The index in {} names a compression it does not list",
                    part.dir.display()
                )));
            }
            starts.push(len);
            len += table.len();
            built.push(Part { part, codecs });
        }
        Ok(Self::Indexed {
            parts: built,
            starts,
            len,
            layouts,
        })
    }

    pub(super) fn len(&self) -> usize {
        match self {
            Self::Listed(descs) => descs.len(),
            Self::Indexed { len, .. } => *len,
        }
    }

    /// The sample count of each shard, in order.
    pub(super) fn samples(&self) -> Box<dyn Iterator<Item = u64> + '_> {
        match self {
            Self::Listed(descs) => Box::new(descs.iter().map(|d| d.samples)),
            Self::Indexed { parts, .. } => Box::new(
                parts
                    .iter()
                    .flat_map(|p| p.part.table.samples.iter().copied()),
            ),
        }
    }

    /// The part holding global shard `shard` (< `len`) and the shard's number in it.
    fn part_of<'a>(parts: &'a [Part], starts: &[usize], shard: usize) -> (&'a Part, usize) {
        // The last part starting at or before `shard`: an empty part shares its start with
        // the next one, and the later of the two holds the shard.
        let p = starts.partition_point(|&s| s <= shard) - 1;
        (&parts[p], shard - starts[p])
    }

    /// The schema id of shard `shard` (among the layouts), for indexed shards only.
    pub(super) fn schema_id(&self, shard: usize) -> Option<usize> {
        match self {
            Self::Listed(_) => None,
            Self::Indexed {
                parts, starts, len, ..
            } => (shard < *len).then(|| {
                let (part, local) = Self::part_of(parts, starts, shard);
                part.part.first_schema + part.part.table.schema_ids()[local] as usize
            }),
        }
    }

    /// The column layout of shard `shard`.
    pub(super) fn layout(&self, shard: usize) -> Option<&ColumnLayout> {
        match self {
            Self::Listed(descs) => descs.get(shard).map(|d| &d.layout),
            Self::Indexed { layouts, .. } => layouts.get(self.schema_id(shard)?),
        }
    }

    /// Shard `shard`'s description; an indexed shard's paths are joined now, and a file name
    /// that would leave its directory (only a table not read by the index parse can hold
    /// one) is an error naming it.
    pub(super) fn desc(&self, shard: usize) -> Result<Cow<'_, ShardDesc>> {
        match self {
            Self::Listed(descs) => descs.get(shard).map(|d| Ok(Cow::Borrowed(d))),
            Self::Indexed {
                parts,
                starts,
                len,
                layouts,
            } => (shard < *len)
                .then(|| Self::part_of(parts, starts, shard))
                .map(|(part, local)| part.desc(local, layouts).map(Cow::Owned)),
        }
        .unwrap_or_else(|| {
            Err(Error::IndexOutOfRange {
                index: shard as i64,
                len: self.len() as u64,
            })
        })
    }
}

impl Part {
    /// Shard `local` of this part, its paths joined to the part's directory.
    fn desc(&self, local: usize, layouts: &[ColumnLayout]) -> Result<ShardDesc> {
        let (table, dir) = (&self.part.table, &self.part.dir);
        let files = table.file_columns();
        let raw = files[0].get(local).ok_or_else(|| {
            Error::InvalidValue(format!(
                "Shard {local} of the index in {} has no raw_data file",
                dir.display()
            ))
        })?;
        let zip_path = match files[1].get(local) {
            Some(zip) => Some(joined(dir, zip.basename, local)?),
            None => None,
        };
        let schema = self.part.first_schema + table.schema_ids()[local] as usize;
        Ok(ShardDesc {
            raw_path: joined(dir, raw.basename, local)?,
            zip_path,
            compression: self.codecs[table.compression_ids()[local] as usize],
            samples: table.samples[local],
            raw_bytes: Some(raw.bytes),
            layout: layouts[schema].clone(),
        })
    }
}

/// `dir/name`, unless `name` (of shard `local` of the index in `dir`) leaves `dir`.
fn joined(dir: &Path, name: &str, local: usize) -> Result<PathBuf> {
    if !is_contained(name) {
        return Err(Error::InvalidValue(format!(
            "Shard {local} of the index in {}: file name {name:?} leaves the dataset directory",
            dir.display()
        )));
    }
    Ok(dir.join(name))
}
