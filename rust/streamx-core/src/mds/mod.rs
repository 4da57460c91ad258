//! The MDS format of mosaicml-streaming, byte for byte.
//!
//! A dataset directory holds `index.json` and shards `shard.NNNNN.mds[.<ext>]`. A shard is
//! `u32 N`, `N+1` absolute `u32` offsets, the writer's config JSON, then the samples
//! ([`shard`]). A sample is the `u32` lengths of its variable-size columns, then every
//! column's payload, columns in sorted name order ([`sample`]). Column payloads follow their
//! encoding ([`encoding`], [`ndarray`]). Writers split shards by a size rule ([`builder`])
//! and store each shard raw or compressed ([`files`]).
//!
//! ```
//! use streamx_core::mds::{write_shard_files, ColumnLayout, Shard, ShardBuilder};
//!
//! # fn main() -> streamx_core::Result<()> {
//! // Two columns, sorted by name: `id` (int, 8 bytes) and `name` (str, variable).
//! let layout = ColumnLayout::new(vec![Some(8), None]);
//! let mut sample = Vec::new();
//! layout.frame(&[&7i64.to_le_bytes(), b"ab"], &mut sample)?;
//!
//! let mut builder = ShardBuilder::new(br#"{"version": 2}"#.to_vec(), Some(1 << 26));
//! assert!(!builder.needs_flush_before(sample.len()));
//! builder.push(&sample);
//! let bytes = builder.take_shard_bytes()?;
//!
//! let dir = std::env::temp_dir().join(format!("mds-doc-{}", std::process::id()));
//! let (raw, zip) = write_shard_files(&dir, "shard.00000.mds", &bytes, None, &[])?;
//! assert_eq!((raw.bytes, zip), (bytes.len() as u64, None));
//!
//! let shard = Shard::open(&dir.join("shard.00000.mds"))?;
//! let mut columns = Vec::new();
//! shard.sample_columns(0, &layout, &mut columns)?;
//! assert_eq!(columns, [&7i64.to_le_bytes()[..], b"ab"]);
//! # drop(shard);
//! # std::fs::remove_dir_all(&dir).ok();
//! # Ok(())
//! # }
//! ```

pub mod builder;
pub mod encoding;
pub mod files;
pub mod finisher;
pub mod index;
pub mod ndarray;
pub mod parts;
pub mod pool;
pub mod sample;
pub mod shard;

pub use builder::{Mark, ShardBuilder};
pub use encoding::{Encoding, ScalarType};
pub use files::{write_shard_files, write_shard_parts, FileInfo};
pub use finisher::{Finisher, ShardDone};
pub use ndarray::{decode_ndarray, encode_ndarray, NdArrayRef};
pub use parts::{ShardParts, SharedBytes};
pub use pool::BufferPool;
pub use sample::ColumnLayout;
pub use shard::Shard;
