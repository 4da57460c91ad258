//! The MDS format of mosaicml-streaming, byte for byte.
//!
//! A dataset directory holds `index.json` and shards `shard.NNNNN.mds[.<ext>]`. A shard is
//! `u32 N`, `N+1` absolute `u32` offsets, the writer's config JSON, then the samples
//! ([`shard`]). A sample is the `u32` lengths of its variable-size columns, then every
//! column's payload, columns in sorted name order ([`sample`]). Column payloads follow their
//! encoding ([`encoding`], [`ndarray`]). Writers split shards by a size rule ([`builder`])
//! and store each shard raw or compressed ([`files`]).

pub mod builder;
pub mod encoding;
pub mod files;
pub mod ndarray;
pub mod sample;
pub mod shard;

pub use builder::ShardBuilder;
pub use encoding::{Encoding, ScalarType};
pub use files::{write_shard_files, FileInfo};
pub use ndarray::{decode_ndarray, encode_ndarray, NdArrayRef};
pub use sample::ColumnLayout;
pub use shard::Shard;
