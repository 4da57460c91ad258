//! The whole pages at the start of a column chunk's bytes: where each ends and the rows the
//! data pages up to it hold. A reader that has fetched a chunk's first bytes by range
//! decodes the run of whole pages that holds the row it wants. A flat column's value count
//! is its row count (nulls included), in v1 and v2 data pages alike.

use super::thrift::{read_header, Fault, DATA_PAGE, DATA_PAGE_V2};

/// The whole pages of a chunk prefix: `ends[k]` is where page `k` ends in the chunk, and
/// `rows[k]` the rows of the data pages up to it (a dictionary page holds none).
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub struct WholePages {
    pub ends: Vec<u64>,
    pub rows: Vec<u64>,
    /// Where the first page not whole ends, when the prefix holds its header whole.
    pub next_end: Option<u64>,
}

/// The pages of `prefix` (the first bytes of a chunk of `chunk_length` bytes; bytes past
/// the chunk are not read) whose header and body it holds whole. A header cut off by the
/// prefix's end ends the run. Nothing is allocated from a size the bytes give: the lists
/// grow by one entry per page read, and every page takes bytes of the prefix.
///
/// Errors: a header that contradicts the format, or a page that runs past the chunk.
pub fn whole_pages(prefix: &[u8], chunk_length: u64) -> Result<WholePages, String> {
    let held =
        &prefix[..usize::try_from(chunk_length).map_or(prefix.len(), |n| n.min(prefix.len()))];
    let mut out = WholePages::default();
    let (mut at, mut seen) = (0usize, 0u64);
    while at < held.len() {
        let (header, length) = match read_header(&held[at..]) {
            Ok(read) => read,
            Err(Fault::Short(_)) => break,
            Err(Fault::Bad(why)) => return Err(format!("{why} at {at}")),
        };
        let (size, count) = (header.compressed_size, header.num_values);
        let end = u64::try_from(size)
            .ok()
            .filter(|_| count >= 0)
            .map(|size| (at + length) as u64 + size)
            .filter(|end| *end <= chunk_length)
            .ok_or_else(|| {
                format!(
                    "a page of {size} bytes and {count} values at {at} (the chunk holds \
                     {chunk_length} bytes)"
                )
            })?;
        if end > held.len() as u64 {
            out.next_end = Some(end);
            break;
        }
        if matches!(header.kind, DATA_PAGE | DATA_PAGE_V2) {
            seen += u64::from(count.unsigned_abs());
        }
        out.ends.push(end);
        out.rows.push(seen);
        at = end as usize; // within `held`, a slice's length
    }
    Ok(out)
}
