//! Accumulates encoded samples into shard files, splitting exactly where mosaicml-streaming's
//! `MDSWriter` splits, so shard boundaries, bytes and hashes match.

use crate::error::{Error, Result};
use crate::mds::parts::{ShardParts, SharedBytes};
use crate::mds::pool::BufferPool;

/// Bytes the format adds per sample: its entry in the offset table.
const PER_SAMPLE: u64 = 4;

/// Builds one shard at a time from already-framed samples.
///
/// The splitting rule: a shard is charged `4 + 4 + len(config)` for its header plus
/// `len(sample) + 4` per sample, and a new shard starts when `size_limit < current + next`.
/// The check happens even when the current shard is empty, so a header bigger than the limit
/// yields an empty shard 0 (upstream behaviour, kept for identical output).
#[derive(Debug, Clone)]
pub struct ShardBuilder {
    config: Vec<u8>,
    size_limit: Option<u64>,
    data: Vec<u8>,
    /// Values held by reference, each with its position in `data` (see [`ShardParts`]).
    shared: Vec<(usize, SharedBytes)>,
    /// Total bytes of `shared`.
    shared_len: u64,
    /// End of each sample within the shard's samples (`data` plus `shared`).
    ends: Vec<u64>,
    current: u64,
    /// Where buffers for new shards come from (spares the finisher handed back).
    pool: BufferPool,
}

impl ShardBuilder {
    /// A builder for shards carrying `config_json` (the writer's `json.dumps(config,
    /// sort_keys=True)` bytes). A `size_limit` of `None` or `0` means one unbounded shard.
    pub fn new(config_json: Vec<u8>, size_limit: Option<u64>) -> Self {
        let current = Self::header_charge(&config_json);
        Self {
            config: config_json,
            size_limit: size_limit.filter(|&l| l != 0),
            data: Vec::new(),
            shared: Vec::new(),
            shared_len: 0,
            ends: Vec::new(),
            current,
            pool: BufferPool::new(),
        }
    }

    /// Takes the buffers for new shards from `pool` (give the same pool to the
    /// [`super::Finisher`], which hands written shards' buffers back to it).
    #[must_use]
    pub fn with_pool(mut self, pool: BufferPool) -> Self {
        self.pool = pool;
        self
    }

    /// Room reserved for a shard's samples when no earlier shard gives its size: the limit
    /// (untouched memory costs nothing until written), capped for huge limits.
    fn first_capacity(&self) -> usize {
        const CAP: u64 = 256 << 20;
        self.size_limit.map_or(1 << 20, |limit| limit.min(CAP)) as usize
    }

    fn header_charge(config: &[u8]) -> u64 {
        4 + 4 + config.len() as u64
    }

    /// Whether the current shard must be flushed (even if empty) before a sample whose
    /// encoding is `encoded_sample_len` bytes is pushed.
    pub fn needs_flush_before(&self, encoded_sample_len: usize) -> bool {
        let next = (encoded_sample_len as u64).saturating_add(PER_SAMPLE);
        self.size_limit
            .is_some_and(|limit| limit < self.current.saturating_add(next))
    }

    /// Appends one framed sample to the current shard.
    pub fn push(&mut self, encoded_sample: &[u8]) {
        self.data.extend_from_slice(encoded_sample);
        self.ends.push(self.samples_len());
        self.current += encoded_sample.len() as u64 + PER_SAMPLE;
    }

    /// Where the next sample starts, for [`Self::commit_at`] and [`Self::rollback`].
    pub fn mark(&self) -> Mark {
        Mark {
            data: self.data.len(),
            shared: self.shared.len(),
        }
    }

    /// Appends `bytes` to the sample being framed by reference, without copying them.
    pub fn push_shared(&mut self, bytes: SharedBytes) {
        self.shared_len += bytes.bytes().len() as u64;
        self.shared.push((self.data.len(), bytes));
    }

    /// Drops what was framed since `mark`.
    pub fn rollback(&mut self, mark: Mark) {
        self.data.truncate(mark.data);
        for (_, dropped) in self.shared.drain(mark.shared..) {
            self.shared_len -= dropped.bytes().len() as u64;
        }
    }

    fn samples_len(&self) -> u64 {
        self.data.len() as u64 + self.shared_len
    }

    /// The current shard's sample bytes, for a caller that frames the next sample in place
    /// (no intermediate buffer): it appends from `buffer().len()`, then calls
    /// [`Self::commit`] with that start, or truncates back to it to drop the sample.
    pub fn buffer(&mut self) -> &mut Vec<u8> {
        if self.data.capacity() == 0 {
            self.data = self.pool.take_sized(self.first_capacity());
        }
        &mut self.data
    }

    /// Takes the bytes appended after `start` as one sample. If the splitting rule says the
    /// current shard must be written first, that shard is returned and the sample opens
    /// the next one. On error (a shard of 4 GiB or more) the sample is dropped and the
    /// current shard is left as it was. For samples framed without [`Self::push_shared`];
    /// [`Self::commit_at`] takes any.
    pub fn commit(&mut self, start: usize) -> Result<Option<ShardParts>> {
        let shared = self.shared.len();
        self.commit_at(Mark {
            data: start,
            shared,
        })
    }

    /// [`Self::commit`] for a sample framed since `mark`, shared values included.
    pub fn commit_at(&mut self, mark: Mark) -> Result<Option<ShardParts>> {
        let start = mark.data;
        let shared_bytes: u64 = self.shared[mark.shared..]
            .iter()
            .map(|(_, s)| s.bytes().len() as u64)
            .sum();
        let len = (self.data.len() - start) as u64 + shared_bytes;
        if !self.needs_flush_before(len as usize) {
            self.ends.push(self.samples_len());
            self.current += len + PER_SAMPLE;
            return Ok(None);
        }
        // The next shard will be about as big as this one: size it once.
        let mut next = self.pool.take_sized(start.max(self.data.len() - start));
        next.extend_from_slice(&self.data[start..]);
        let next_shared: Vec<_> = self.shared[mark.shared..]
            .iter()
            .map(|(pos, s)| (pos - start, s.clone()))
            .collect();
        self.rollback(mark);
        let parts = self.take_parts().inspect_err(|_| self.rollback(mark))?;
        self.data = next;
        self.shared = next_shared;
        self.shared_len = shared_bytes;
        self.ends.push(len);
        self.current += len + PER_SAMPLE;
        Ok(Some(parts))
    }

    /// Samples in the current shard.
    pub fn num_samples(&self) -> usize {
        self.ends.len()
    }

    /// Whether the current shard has no samples.
    pub fn is_empty(&self) -> bool {
        self.ends.is_empty()
    }

    /// The size the current shard's file would have.
    pub fn current_size(&self) -> u64 {
        self.current
    }

    /// The config JSON written into every shard.
    pub fn config_json(&self) -> &[u8] {
        &self.config
    }

    /// Serialises the current shard and starts a new, empty one (see [`Self::shard_bytes`]).
    pub fn take_shard_bytes(&mut self) -> Result<Vec<u8>> {
        Ok(self.take_parts()?.to_vec())
    }

    /// Takes the current shard as header and sample bytes (no copy of the samples) and
    /// starts a new, empty one. Errors, leaving the shard in place, at 4 GiB or more.
    pub fn take_parts(&mut self) -> Result<ShardParts> {
        let header = self.header()?;
        let samples = self.ends.len();
        let body = std::mem::take(&mut self.data);
        let shared = std::mem::take(&mut self.shared);
        self.shared_len = 0;
        self.ends.clear();
        self.current = Self::header_charge(&self.config);
        Ok(ShardParts {
            samples,
            header,
            body,
            shared,
        })
    }

    /// The file bytes of the current shard, leaving it in place.
    pub fn shard_bytes(&self) -> Result<Vec<u8>> {
        let parts = ShardParts {
            samples: self.ends.len(),
            header: self.header()?,
            body: self.data.clone(),
            shared: self.shared.clone(),
        };
        Ok(parts.to_vec())
    }

    /// `u32 N`, the `N + 1` absolute offsets and the config. Offsets are `u32`, so a shard
    /// of 4 GiB or more is an error rather than the silent wrap-around of the upstream
    /// writer.
    fn header(&self) -> Result<Vec<u8>> {
        let n = self.ends.len() as u64;
        let first = 4 + 4 * (n + 1) + self.config.len() as u64;
        let total = first + self.samples_len();
        if total > u64::from(u32::MAX) {
            return Err(Error::InvalidValue(format!(
                "shard of {n} samples would be {total} bytes; MDS shards must stay under 4 GiB \
                 (lower size_limit or split large samples)"
            )));
        }
        let mut out = Vec::with_capacity(first as usize);
        out.extend_from_slice(&(n as u32).to_le_bytes());
        out.extend_from_slice(&(first as u32).to_le_bytes());
        for end in &self.ends {
            out.extend_from_slice(&((first + end) as u32).to_le_bytes());
        }
        out.extend_from_slice(&self.config);
        Ok(out)
    }
}

/// A position in the shard being built: see [`ShardBuilder::mark`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Mark {
    data: usize,
    shared: usize,
}
