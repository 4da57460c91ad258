//! Accumulates encoded samples into shard files, splitting exactly where mosaicml-streaming's
//! `MDSWriter` splits, so shard boundaries, bytes and hashes match.

use crate::error::{Error, Result};

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
    /// End of each sample within `data`.
    ends: Vec<u64>,
    current: u64,
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
            ends: Vec::new(),
            current,
        }
    }

    fn header_charge(config: &[u8]) -> u64 {
        4 + 4 + config.len() as u64
    }

    /// Whether the current shard must be flushed (even if empty) before a sample whose
    /// encoding is `encoded_sample_len` bytes is pushed.
    pub fn needs_flush_before(&self, encoded_sample_len: usize) -> bool {
        let next = encoded_sample_len as u64 + PER_SAMPLE;
        self.size_limit
            .is_some_and(|limit| limit < self.current.saturating_add(next))
    }

    /// Appends one framed sample to the current shard.
    pub fn push(&mut self, encoded_sample: &[u8]) {
        self.data.extend_from_slice(encoded_sample);
        self.ends.push(self.data.len() as u64);
        self.current += encoded_sample.len() as u64 + PER_SAMPLE;
    }

    /// The current shard's sample bytes, for a caller that frames the next sample in place
    /// (no intermediate buffer): it appends from `buffer().len()`, then calls
    /// [`Self::commit`] with that start, or truncates back to it to drop the sample.
    pub fn buffer(&mut self) -> &mut Vec<u8> {
        &mut self.data
    }

    /// Takes the bytes appended after `start` as one sample. If the splitting rule says the
    /// current shard must be written first, that shard is returned and the sample opens
    /// the next one. On error (a shard of 4 GiB or more) the sample is dropped and the
    /// current shard is left as it was.
    pub fn commit(&mut self, start: usize) -> Result<Option<ShardParts>> {
        let len = self.data.len() - start;
        if !self.needs_flush_before(len) {
            self.ends.push(self.data.len() as u64);
            self.current += len as u64 + PER_SAMPLE;
            return Ok(None);
        }
        // The next shard will be about as big as this one: size it once.
        let mut next = Vec::with_capacity(start.max(len));
        next.extend_from_slice(&self.data[start..]);
        self.data.truncate(start);
        let parts = self
            .take_parts()
            .inspect_err(|_| self.data.truncate(start))?;
        self.data = next;
        self.ends.push(len as u64);
        self.current += len as u64 + PER_SAMPLE;
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
        self.ends.clear();
        self.current = Self::header_charge(&self.config);
        Ok(ShardParts {
            samples,
            header,
            body,
        })
    }

    /// The file bytes of the current shard, leaving it in place.
    pub fn shard_bytes(&self) -> Result<Vec<u8>> {
        let mut out = self.header()?;
        out.reserve_exact(self.data.len());
        out.extend_from_slice(&self.data);
        Ok(out)
    }

    /// `u32 N`, the `N + 1` absolute offsets and the config. Offsets are `u32`, so a shard
    /// of 4 GiB or more is an error rather than the silent wrap-around of the upstream
    /// writer.
    fn header(&self) -> Result<Vec<u8>> {
        let n = self.ends.len() as u64;
        let first = 4 + 4 * (n + 1) + self.config.len() as u64;
        let total = first + self.data.len() as u64;
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

/// A finished shard: its header (count, offsets, config) apart from its sample bytes, so the
/// samples are written as they were framed, never copied behind a header.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ShardParts {
    /// Samples in the shard.
    pub samples: usize,
    /// `u32 N`, the `N + 1` offsets, and the config JSON.
    pub header: Vec<u8>,
    /// The framed samples, back to back.
    pub body: Vec<u8>,
}

impl ShardParts {
    /// The shard file's size in bytes.
    pub fn len(&self) -> usize {
        self.header.len() + self.body.len()
    }

    /// Whether the file would be empty (never: the header is always there).
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// The whole file as one buffer (a copy).
    pub fn to_vec(&self) -> Vec<u8> {
        let mut out = Vec::with_capacity(self.len());
        out.extend_from_slice(&self.header);
        out.extend_from_slice(&self.body);
        out
    }
}
