//! A Parquet file's offset index (its "page index"): where each data page of a column chunk
//! lies and the first row it holds. A reader that wants one row deep in a row group reads
//! the chunk's dictionary page and the one data page holding the row, not the pages before.
//!
//! Two reads: from the footer's `FileMetaData`, where each column chunk's offset index lies
//! (`RowGroup.columns[k]`'s `offset_index_offset` and `offset_index_length`); from an
//! `OffsetIndex`, its `PageLocation`s. Both are bounds-checked: nothing is allocated from a
//! count the bytes give (lists grow by one entry per item read, and every item takes bytes),
//! and bytes that contradict the format, or spans outside the file or chunk, are an error.

use super::thrift::{page_header, Fault, Reader, DATA_PAGE, DATA_PAGE_V2, I32, I64, LIST, STRUCT};

/// Where one data page lies in the file, and the first row (of its row group) it holds.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct PageLocation {
    pub offset: u64,
    pub compressed_size: u64,
    pub first_row: u64,
}

/// Each column chunk of row group `row_group`, in order: where its offset index lies in a
/// file of `file_size` bytes (`(offset, length)`), or `None` without one. `metadata`: the
/// footer's `FileMetaData` bytes (the file's last bytes, less its length and magic).
///
/// Errors: bytes that contradict the format, no such row group, or a span outside the file.
pub fn offset_index_spans(
    metadata: &[u8],
    row_group: usize,
    file_size: u64,
) -> Result<Vec<Option<(u64, u64)>>, String> {
    let mut reader = Reader::new(metadata, "the footer");
    let (mut found, mut groups) = (None, 0u64);
    reader
        .fields(0, &mut |r, id, kind| match (id, kind) {
            (4, LIST) => r.list(&mut |r, kind, k| {
                groups = k + 1;
                match kind {
                    STRUCT if k == row_group as u64 => {
                        found = Some(group_spans(r, file_size)?);
                        Ok(())
                    }
                    STRUCT => r.skip(kind, 1),
                    _ => Err(Fault::Bad("a row group that is not a struct".to_owned())),
                }
            }),
            _ => r.skip(kind, 1),
        })
        .map_err(|fault| worded(fault, "the footer"))?;
    found.ok_or_else(|| format!("the footer holds {groups} row groups, not row group {row_group}"))
}

/// The offset index spans of a `RowGroup`'s column chunks (its field 1).
fn group_spans(r: &mut Reader<'_>, file_size: u64) -> Result<Vec<Option<(u64, u64)>>, Fault> {
    let mut out = Vec::new();
    r.fields(1, &mut |r, id, kind| match (id, kind) {
        (1, LIST) => {
            out.clear(); // a field given twice: the last one counts
            r.list(&mut |r, kind, _| {
                if kind != STRUCT {
                    return Err(Fault::Bad("a column chunk that is not a struct".to_owned()));
                }
                out.push(chunk_span(r, file_size)?);
                Ok(())
            })
        }
        _ => r.skip(kind, 2),
    })?;
    Ok(out)
}

/// A `ColumnChunk`'s offset index span (fields 4 and 5), checked against the file's size.
fn chunk_span(r: &mut Reader<'_>, file_size: u64) -> Result<Option<(u64, u64)>, Fault> {
    let (mut offset, mut length) = (None, None);
    r.fields(2, &mut |r, id, kind| match (id, kind) {
        (4, I64) => r.long().map(|v| offset = Some(v)),
        (5, I32) => r.int().map(|v| length = Some(i64::from(v))),
        _ => r.skip(kind, 3),
    })?;
    let (Some(offset), Some(length)) = (offset, length) else {
        return Ok(None);
    };
    let span = u64::try_from(offset)
        .ok()
        .zip(u64::try_from(length).ok())
        .filter(|(at, n)| *n > 0 && at.checked_add(*n).is_some_and(|end| end <= file_size));
    match span {
        Some(span) => Ok(Some(span)),
        None => Err(Fault::Bad(format!(
            "an offset index of {length} bytes at {offset}, outside the file's {file_size} bytes"
        ))),
    }
}

/// The data pages an `OffsetIndex` (`index`) places in a column chunk of the file's bytes
/// `[chunk_start, chunk_start + chunk_length)` of a row group of `rows` rows: in order, each
/// inside the chunk and past the one before, the first holding row 0, their first rows
/// increasing and below `rows`.
///
/// Errors: bytes that contradict the format, or pages that contradict the chunk.
pub fn page_locations(
    index: &[u8],
    chunk_start: u64,
    chunk_length: u64,
    rows: u64,
) -> Result<Vec<PageLocation>, String> {
    let mut reader = Reader::new(index, "the offset index");
    let mut pages = Vec::new();
    reader
        .fields(0, &mut |r, id, kind| match (id, kind) {
            (1, LIST) => {
                pages.clear(); // a field given twice: the last one counts
                r.list(&mut |r, kind, _| {
                    if kind != STRUCT {
                        return Err(Fault::Bad("a page location that is not a struct".into()));
                    }
                    pages.push(location(r)?);
                    Ok(())
                })
            }
            _ => r.skip(kind, 1),
        })
        .map_err(|fault| worded(fault, "the offset index"))?;
    check_pages(
        &pages,
        chunk_start,
        chunk_start.saturating_add(chunk_length),
        rows,
    )?;
    Ok(pages)
}

/// A `PageLocation`: its three fields, each required.
fn location(r: &mut Reader<'_>) -> Result<PageLocation, Fault> {
    let (mut offset, mut size, mut first) = (None, None, None);
    r.fields(2, &mut |r, id, kind| match (id, kind) {
        (1, I64) => r.long().map(|v| offset = u64::try_from(v).ok()),
        (2, I32) => r.int().map(|v| size = u64::try_from(v).ok()),
        (3, I64) => r.long().map(|v| first = u64::try_from(v).ok()),
        _ => r.skip(kind, 3),
    })?;
    match (offset, size, first) {
        (Some(offset), Some(compressed_size), Some(first_row)) => Ok(PageLocation {
            offset,
            compressed_size,
            first_row,
        }),
        _ => Err(Fault::Bad(
            "a page location without its offset, size or first row (or one negative)".into(),
        )),
    }
}

/// A column chunk's pages lie back to back (the format's rule) after its dictionary page,
/// the last ending where the chunk ends: so a flipped offset or size anywhere in the index
/// shows. A flipped first row shows when the pages it bounds decode (their value counts).
fn check_pages(pages: &[PageLocation], start: u64, end: u64, rows: u64) -> Result<(), String> {
    if pages.first().is_none_or(|page| page.first_row != 0) {
        return Err("the offset index has no page of row 0".to_owned());
    }
    let (mut last_end, mut last_row) = (start, None);
    for (k, page) in pages.iter().enumerate() {
        let page_end = page.offset.checked_add(page.compressed_size);
        let placed = if k == 0 {
            page.offset >= start
        } else {
            page.offset == last_end
        };
        if !placed || page.compressed_size == 0 || page_end.is_none_or(|e| e > end) {
            return Err(format!(
                "the offset index's page {k} ({} bytes at {}) is not in the column chunk \
                 [{start}, {end}) right after the page before",
                page.compressed_size, page.offset
            ));
        }
        if last_row.is_some_and(|row| page.first_row <= row) || page.first_row >= rows {
            return Err(format!(
                "the offset index's page {k} starts at row {}: not past the page before, \
                 or not below the row group's {rows} rows",
                page.first_row
            ));
        }
        (last_end, last_row) = (page_end.unwrap_or(end), Some(page.first_row));
    }
    if last_end != end {
        return Err(format!(
            "the offset index's pages end at {last_end}, not where the column chunk ends ({end})"
        ));
    }
    Ok(())
}

/// The encoding of the data page whose header starts `page` (`parquet.thrift`'s `Encoding`:
/// 0 plain, 2 and 8 dictionary indices): whether a reader of that one page needs its
/// chunk's dictionary page.
///
/// Errors: a header cut short or contradicting the format, or not a data page's.
pub fn data_page_encoding(page: &[u8]) -> Result<i32, String> {
    let (header, _) = page_header(page)?;
    if !matches!(header.kind, DATA_PAGE | DATA_PAGE_V2) {
        return Err(format!(
            "a page of type {} where a data page lies",
            header.kind
        ));
    }
    Ok(header.encoding)
}

fn worded(fault: Fault, what: &str) -> String {
    match fault {
        Fault::Short(_) => format!("{what} ends early"),
        Fault::Bad(why) => why,
    }
}
