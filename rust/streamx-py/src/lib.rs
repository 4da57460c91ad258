//! `streamx._core`: thin wrappers over `streamx-core`. No work happens at import.

// pyo3 hands #[pyfunction]s owned extracted arguments; borrowing them buys nothing.
#![allow(clippy::needless_pass_by_value)]
// Signatures are dictated by pyo3's Bound<'py, _> lifetimes and numpy's array types.
// `elidable_lifetime_names` is clippy 1.87's: older clippys (the MSRV is 1.85) do not know it.
#![allow(unknown_lints)]
#![allow(
    clippy::needless_lifetimes,
    clippy::elidable_lifetime_names,
    clippy::type_complexity
)]

use pyo3::prelude::*;

mod array_write;
mod cache;
mod cache_inspect;
mod codec;
mod enter;
mod errors;
mod gather;
mod growing;
mod kinds;
mod local;
mod mapped;
mod netio;
mod packing;
mod parquet_pages;
mod parquet_rows;
mod plan;
mod reader;
mod sample_source;
mod scalar;
mod shard_index;
mod shared_bytes;
mod tar_scan;
mod tls;
mod writer;

#[pymodule]
fn _core(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add("__version__", env!("CARGO_PKG_VERSION"))?;
    cache::register(m)?;
    cache_inspect::register(m)?;
    codec::register(m)?;
    errors::register(m)?;
    kinds::register(m)?;
    netio::register(m)?;
    packing::register(m)?;
    parquet_pages::register(m)?;
    parquet_rows::register(m)?;
    tar_scan::register(m)?;
    tls::register(m)?;
    plan::register(m)?;
    shard_index::register(m)?;
    m.add_class::<writer::MDSShardWriter>()?;
    m.add_class::<reader::MDSReader>()?;
    m.add_class::<mapped::MappedShard>()?;
    m.add_class::<growing::GrowingDecompressor>()?;
    Ok(())
}
