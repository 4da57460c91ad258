//! `parquet_whole_pages`: the whole pages at the start of a Parquet column chunk's bytes
//! (`streamx_core::parquet_page::whole_pages`), for a reader that fetched them by range;
//! `parquet_offset_index_spans` and `parquet_page_locations`: a file's offset index
//! (`streamx_core::parquet_page::offset_index_spans`, `page_locations`), for a reader that
//! fetches the one data page holding a row.

use pyo3::exceptions::PyValueError;
use pyo3::prelude::*;
use streamx_core::parquet_page;

/// The pages of `prefix` (the first bytes of a column chunk of `chunk_length` bytes) that it
/// holds whole: `(ends, rows, next_end)`, where page `k` ends at `ends[k]` in the chunk and
/// the data pages up to it hold `rows[k]` rows; `next_end` is where the first page not whole
/// ends, when its header is whole. `ValueError` if a header contradicts the format or a page
/// runs past the chunk.
#[pyfunction]
fn parquet_whole_pages(
    prefix: &[u8],
    chunk_length: u64,
) -> PyResult<(Vec<u64>, Vec<u64>, Option<u64>)> {
    let pages = parquet_page::whole_pages(prefix, chunk_length).map_err(PyValueError::new_err)?;
    Ok((pages.ends, pages.rows, pages.next_end))
}

/// Each column chunk of row group `row_group`: its offset index's `(offset, length)` in a
/// file of `file_size` bytes, or `None` without one. `metadata`: the footer's `FileMetaData`
/// bytes. `ValueError` if they contradict the format, or a span lies outside the file.
#[pyfunction]
fn parquet_offset_index_spans(
    metadata: &[u8],
    row_group: usize,
    file_size: u64,
) -> PyResult<Vec<Option<(u64, u64)>>> {
    parquet_page::offset_index_spans(metadata, row_group, file_size).map_err(PyValueError::new_err)
}

/// The data pages an offset index (`index`) places in the column chunk of the file's bytes
/// `[chunk_start, chunk_start + chunk_length)` of a row group of `rows` rows: a
/// `(offset, compressed_size, first_row)` for each, in order. `ValueError` if the bytes
/// contradict the format, or the pages the chunk (outside it, overlapping, first rows not
/// increasing from 0 and below `rows`).
#[pyfunction]
fn parquet_page_locations(
    index: &[u8],
    chunk_start: u64,
    chunk_length: u64,
    rows: u64,
) -> PyResult<Vec<(u64, u64, u64)>> {
    let pages = parquet_page::page_locations(index, chunk_start, chunk_length, rows)
        .map_err(PyValueError::new_err)?;
    Ok(pages
        .iter()
        .map(|p| (p.offset, p.compressed_size, p.first_row))
        .collect())
}

/// The encoding of the data page whose header starts `page` (0: plain; 2 and 8: dictionary
/// indices, which need the chunk's dictionary page). `ValueError` if the header is cut
/// short, contradicts the format, or is not a data page's.
#[pyfunction]
fn parquet_page_encoding(page: &[u8]) -> PyResult<i32> {
    parquet_page::data_page_encoding(page).map_err(PyValueError::new_err)
}

pub fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_function(wrap_pyfunction!(parquet_whole_pages, m)?)?;
    m.add_function(wrap_pyfunction!(parquet_offset_index_spans, m)?)?;
    m.add_function(wrap_pyfunction!(parquet_page_encoding, m)?)?;
    m.add_function(wrap_pyfunction!(parquet_page_locations, m)?)
}
