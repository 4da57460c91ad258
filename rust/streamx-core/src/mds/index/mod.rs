//! `index.json` read into compact columns ([`IndexTable`]), checked as it is read.
//!
//! Large datasets have indexes of hundreds of megabytes (650k shards). The file is parsed
//! in one pass over a read-only map of it: no document tree and no per-shard object is ever
//! built, so reading takes about as long as scanning the bytes, and the process's own
//! memory is the table (the map's pages are the page cache's, gone with the map). The
//! layout writers produce is read by a scanner made for it (`scan.rs`); any other document,
//! and every bad one, by `serde_json`, which makes each error message.
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

mod check;
mod columns;
mod document;
mod entry;
mod file_value;
mod lean;
mod names;
mod paths;
mod repr;
mod scan;
mod table;

use std::io::Read;
use std::path::Path;

use serde::de::DeserializeSeed;

pub use check::Schema;
pub use names::split_name;
pub use paths::{is_contained, normpath, INDEX_BASENAME};
use table::TableBuilder;
pub use table::{FileTuple, IndexTable};

use crate::error::Error;
use crate::mmap::MappedFile;
use check::py_display;
use document::DocumentSeed;

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

/// Reads and checks the index at `path`, parsed from a read-only map of the file: parsing
/// from memory is a third faster than from a reader, and the map's pages are the page
/// cache's (released when the map is, never copied into the process's own memory).
pub fn read_index(path: &Path) -> Result<IndexTable, IndexFault> {
    let map = MappedFile::open(path).map_err(IndexFault::Io)?;
    let parsed = parse_index_slice(map.as_slice(), &path.to_string_lossy());
    // A file truncated while mapped reads as zeros from there on: not the index it was.
    map.check(path).map_err(IndexFault::Io)?;
    parsed
}

/// Reads and checks an index from `reader`; `shown` names it in errors.
pub fn parse_index(reader: impl Read, shown: &str) -> Result<IndexTable, IndexFault> {
    parse_with(serde_json::Deserializer::from_reader(reader), shown)
}

/// Reads and checks an index held in `bytes`; `shown` names it in errors.
pub fn parse_index_slice(bytes: &[u8], shown: &str) -> Result<IndexTable, IndexFault> {
    // The usual layout is scanned directly; anything else (every error among it) is left to
    // the general parser below, which reads the bytes again from the start.
    if let Some(table) = scan::scan(bytes, shown) {
        return without_alias(table, shown);
    }
    parse_index_general(bytes, shown)
}

/// [`parse_index_slice`] without the scanner: every index through `serde_json`.
pub fn parse_index_general(bytes: &[u8], shown: &str) -> Result<IndexTable, IndexFault> {
    // Checked as UTF-8 in one pass, the text is parsed without a check of each string (a
    // tenth of the parse's time); bytes that are not UTF-8 are parsed as bytes, so that the
    // parser reports where.
    match std::str::from_utf8(bytes) {
        Ok(text) => parse_with(serde_json::Deserializer::from_str(text), shown),
        Err(_) => parse_with(serde_json::Deserializer::from_slice(bytes), shown),
    }
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
    without_alias(shards.table, shown)
}

/// The finished table, unless two of its files are one (or one is the index).
fn without_alias(table: TableBuilder, shown: &str) -> Result<IndexTable, IndexFault> {
    let table = table.finish();
    match paths::find_alias(&table, shown) {
        Some(message) => Err(IndexFault::Invalid(message)),
        None => Ok(table),
    }
}
