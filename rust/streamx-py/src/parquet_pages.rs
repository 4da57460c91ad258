//! `parquet_whole_pages`: the whole pages at the start of a Parquet column chunk's bytes
//! (`streamx_core::parquet_page::whole_pages`), for a reader that fetched them by range.

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

pub fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_function(wrap_pyfunction!(parquet_whole_pages, m)?)
}
