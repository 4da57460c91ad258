//! Flat Parquet column chunks decoded just enough to hand out one row: pages decompressed,
//! each row mapped to its value, no value converted until asked for. Covers PLAIN and
//! dictionary-encoded (`PLAIN_DICTIONARY`, `RLE_DICTIONARY`) `INT32`, `INT64`, `FLOAT`, `DOUBLE` and
//! `BYTE_ARRAY` values, required or optional, in v1 or v2 data pages compressed with nothing,
//! snappy, gzip or zstd. Anything else is refused as unsupported, for the caller to read
//! through a general Parquet reader; bytes that contradict the format are a corrupt shard.

mod codec;
mod column;
mod fresh;
mod hybrid;
mod offset_index;
mod pages;
mod read;
mod thrift;

#[cfg(all(test, target_os = "linux"))]
mod fresh_tests;
#[cfg(test)]
mod hybrid_tests;
#[cfg(test)]
mod offset_index_tests;
#[cfg(test)]
mod pages_tests;
#[cfg(test)]
mod tests;

use std::path::PathBuf;

pub use codec::Codec;
pub use column::{Column, ColumnSpec, Physical, Value, MAX_PAGE_BYTES, NULL};
pub use offset_index::{data_page_encoding, offset_index_spans, page_locations, PageLocation};
pub use pages::{whole_pages, WholePages};
pub use read::read_spans;

use crate::{Error, Result};

/// Where one column chunk lies in a row group's bytes, and how to decode it.
#[derive(Debug, Clone)]
pub struct ChunkSpec {
    pub name: String,
    pub offset: usize,
    pub length: usize,
    pub column: ColumnSpec,
}

/// The columns of `chunks`, each decoded from its range of `data`. `Ok(Err(why))`: a feature
/// left to the general reader. `label` (the file and row group) names bad bytes in errors.
///
/// One thread: a second one for the largest column was tried, and on a busy machine the
/// wait for it to be scheduled cost more than the column (1.5 ms against 0.9 ms in all).
pub fn decode_row_group(
    data: &[u8],
    chunks: &[ChunkSpec],
    label: &str,
) -> Result<std::result::Result<Vec<Column>, String>> {
    let mut out = Vec::with_capacity(chunks.len().min(4096));
    for chunk in chunks {
        let bad = |reason: String| Error::CorruptShard {
            path: PathBuf::from(label),
            reason: format!("column {:?}: {reason}", chunk.name),
        };
        match one(data, chunk) {
            Decoded::Column(column) => out.push(column),
            Decoded::Refused(column::Refusal::Unsupported(why)) => {
                return Ok(Err(format!("column {:?}: {why}", chunk.name)))
            }
            Decoded::Refused(column::Refusal::Corrupt(why)) => return Err(bad(why)),
        }
    }
    Ok(Ok(out))
}

enum Decoded {
    Column(Column),
    Refused(column::Refusal),
}

fn one(data: &[u8], chunk: &ChunkSpec) -> Decoded {
    let Some(bytes) = chunk
        .offset
        .checked_add(chunk.length)
        .and_then(|end| data.get(chunk.offset..end))
    else {
        return Decoded::Refused(column::Refusal::Corrupt(format!(
            "its chunk [{}, +{}) lies past the row group's {} bytes",
            chunk.offset,
            chunk.length,
            data.len()
        )));
    };
    match column::decode(bytes, &chunk.column) {
        Ok(decoded) => Decoded::Column(decoded),
        Err(refusal) => Decoded::Refused(refusal),
    }
}
