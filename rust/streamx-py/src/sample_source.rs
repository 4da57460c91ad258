//! What the batch gather needs of a reader: where a sample lies, its column ranges, each
//! column's kind and the shard set. `MDSReader` provides it (`reader.rs`), and `gather.rs`
//! reads through it, so the gather does not import the reader that calls it.

use std::ops::Range;
use std::sync::Arc;

use pyo3::prelude::*;
use streamx_core::mds::shard::Shard;
use streamx_core::reader::ShardSet;

use crate::kinds::Kind;

pub(crate) trait SampleSource {
    /// "sample N of shard PATH", for errors.
    fn where_is(&self, index: u64) -> String;
    /// Opens sample `index`'s shard if needed and fills `ranges` with its columns' byte
    /// ranges; returns the shard's id and the shard.
    fn open_sample(
        &self,
        py: Python<'_>,
        index: u64,
        ranges: &mut Vec<Range<usize>>,
    ) -> PyResult<(usize, Arc<Shard>)>;
    /// How column `column` of shard `shard` decodes.
    fn kind_of(&self, shard: usize, column: usize) -> Kind;
    /// The reader's shards.
    fn set(&self) -> &ShardSet;
}
