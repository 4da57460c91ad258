//! streamx-core: everything streamx does to bytes on local disk, with no Python.
//!
//! * [`mds`]: the MDS shard and `index.json` format, byte-compatible with mosaicml-streaming.
//! * [`compression`] and [`hashing`]: whole-shard codecs and digests.
//! * [`shuffle`], [`sampling`], [`partition`]: the epoch sample order, bit-exact with
//!   mosaicml-streaming 0.13.0 (numpy `default_rng` reproduced in [`shuffle::rng`]).

pub mod batching;
pub mod cache;
pub mod compression;
pub mod epoch_config;
pub mod error;
pub mod growing;
pub mod hashing;
pub mod heap;
pub mod http_range;
pub mod http_tls;
pub mod limits;
pub mod mds;
pub mod mmap;
pub mod mmap_guard;
pub mod mmap_lease;
pub mod netio;
pub mod packing;
pub mod parquet_page;
pub mod partition;
pub mod plan;
pub mod reader;
pub mod resample;
pub mod sampling;
pub mod shuffle;
pub mod tar;
pub mod warning;

pub use error::{Error, Result};
