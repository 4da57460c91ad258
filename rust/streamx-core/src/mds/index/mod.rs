//! `index.json` read into compact columns ([`IndexTable`]), checked as it is read.
//!
//! Large datasets have indexes of hundreds of megabytes (650k shards). The file is read in
//! one streaming pass: no document tree and no per-shard object is ever built, so reading
//! takes about as long as scanning the bytes, and memory is the table, not the file.
//!
//! Every check names the index file and the shard: counts and sizes are JSON integers >= 0,
//! a shard's sample count fits its size, file names stay in the dataset and appear once, and
//! MDS columns have distinct names. Encoding names are left to the caller, whose registry
//! of encodings may hold more than the core knows.
//!
//! ```
//! use streamx_core::mds::index::read_index;
//!
//! let dir = std::env::temp_dir().join(format!("index-doc-{}", std::process::id()));
//! std::fs::create_dir_all(&dir).unwrap();
//! let path = dir.join("index.json");
//! std::fs::write(&path, r#"{"version": 2, "shards": [{"format": "mds", "version": 2,
//!     "compression": null, "samples": 1, "hashes": [], "size_limit": null,
//!     "column_names": ["x"], "column_encodings": ["int"], "column_sizes": [8],
//!     "raw_data": {"basename": "shard.00000.mds", "bytes": 20, "hashes": {}},
//!     "zip_data": null}]}"#).unwrap();
//! let table = read_index(&path).unwrap();
//! assert_eq!((table.len(), table.samples[0]), (1, 1));
//! assert_eq!(table.file(0, 0).unwrap().0, "shard.00000.mds");
//! # std::fs::remove_dir_all(&dir).ok();
//! ```

mod columns;
mod document;
mod entry;
mod names;
mod paths;
mod repr;
mod table;

use std::fs::File;
use std::io::{BufReader, Read};
use std::path::Path;

use serde::de::DeserializeSeed;

pub use entry::Schema;
pub use names::split_name;
pub use paths::{is_contained, normpath, INDEX_BASENAME};
pub use table::{FileTuple, IndexTable};

use crate::error::Error;
use document::DocumentSeed;
use entry::py_display;

/// Why an index could not be read.
#[derive(Debug, thiserror::Error)]
pub enum IndexFault {
    /// The file could not be opened or read (`Error::NotFound` for a missing one).
    #[error(transparent)]
    Io(Error),
    /// The bytes are not one well-formed JSON document.
    #[error("Index file at {path} is empty or corrupted. {reason}")]
    Syntax { path: String, reason: String },
    /// Well-formed JSON that is not a valid index; the message names the file and shard.
    #[error("{0}")]
    Invalid(String),
}

impl From<IndexFault> for Error {
    fn from(fault: IndexFault) -> Self {
        match fault {
            IndexFault::Io(err) => err,
            IndexFault::Syntax { path, reason } => Error::CorruptIndex {
                path: path.into(),
                reason,
            },
            IndexFault::Invalid(message) => Error::CorruptIndex {
                path: "index.json".into(),
                reason: message,
            },
        }
    }
}

/// Indexes up to this size are read whole and parsed from memory (about a third faster);
/// larger ones are streamed, so memory stays the size of the table and not of the file.
const WHOLE_FILE_MAX: u64 = 64 << 20;

/// Reads and checks the index at `path`.
pub fn read_index(path: &Path) -> Result<IndexTable, IndexFault> {
    let io = |e| IndexFault::Io(Error::io(path, e));
    let file = File::open(path).map_err(io)?;
    let shown = path.to_string_lossy();
    if file.metadata().map_err(io)?.len() <= WHOLE_FILE_MAX {
        let mut bytes = Vec::new();
        BufReader::new(file).read_to_end(&mut bytes).map_err(io)?;
        return parse_index_slice(&bytes, &shown);
    }
    parse_index(BufReader::with_capacity(1 << 20, file), &shown).map_err(|fault| match fault {
        IndexFault::Io(Error::Io { source, .. }) => IndexFault::Io(Error::io(path, source)),
        other => other,
    })
}

/// Reads and checks an index from `reader`; `shown` names it in errors.
pub fn parse_index(reader: impl Read, shown: &str) -> Result<IndexTable, IndexFault> {
    parse_with(serde_json::Deserializer::from_reader(reader), shown)
}

/// Reads and checks an index held in `bytes`; `shown` names it in errors.
pub fn parse_index_slice(bytes: &[u8], shown: &str) -> Result<IndexTable, IndexFault> {
    parse_with(serde_json::Deserializer::from_slice(bytes), shown)
}

fn parse_with<'de, R: serde_json::de::Read<'de>>(
    mut de: serde_json::Deserializer<R>,
    shown: &str,
) -> Result<IndexTable, IndexFault> {
    let syntax = |e: serde_json::Error| {
        if e.is_io() {
            IndexFault::Io(Error::io(shown, std::io::Error::other(e)))
        } else {
            IndexFault::Syntax {
                path: shown.to_owned(),
                reason: e.to_string(),
            }
        }
    };
    let doc = DocumentSeed { path: shown }
        .deserialize(&mut de)
        .map_err(syntax)?;
    de.end().map_err(syntax)?;
    let Some(shards) = doc.shards.filter(|_| doc.is_object && !doc.shards_not_list) else {
        return Err(IndexFault::Invalid(format!(
            "Index file at {shown} is empty or corrupted: no `shards` list."
        )));
    };
    let version = doc.version.unwrap_or_default();
    if version.as_f64() != Some(2.0) || version.is_boolean() {
        return Err(IndexFault::Invalid(format!(
            "Unsupported streaming data version: {}. Expected version 2. ({shown})",
            py_display(&version)
        )));
    }
    if let Some(message) = shards.first_error {
        return Err(IndexFault::Invalid(message));
    }
    let table = shards.table.finish();
    match paths::find_alias(&table, shown) {
        Some(message) => Err(IndexFault::Invalid(message)),
        None => Ok(table),
    }
}
