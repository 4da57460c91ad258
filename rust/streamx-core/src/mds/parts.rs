//! A finished shard as header, framed sample bytes, and large sample values held by
//! reference, so neither the samples nor the large values are copied behind a header.

use std::fmt;
use std::sync::Arc;

/// Bytes the writer holds by reference instead of copying into the shard buffer: a large,
/// immutable value (for example a Python `bytes` object kept alive by its owner).
#[derive(Clone)]
pub struct SharedBytes(Arc<dyn AsRef<[u8]> + Send + Sync>);

impl SharedBytes {
    /// Holds `owner`, whose bytes must not change while it lives.
    pub fn new(owner: impl AsRef<[u8]> + Send + Sync + 'static) -> Self {
        Self(Arc::new(owner))
    }

    /// The bytes.
    pub fn bytes(&self) -> &[u8] {
        (*self.0).as_ref()
    }
}

impl fmt::Debug for SharedBytes {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "SharedBytes({} bytes)", self.bytes().len())
    }
}

impl PartialEq for SharedBytes {
    fn eq(&self, other: &Self) -> bool {
        self.bytes() == other.bytes()
    }
}

impl Eq for SharedBytes {}

/// A finished shard: its header (count, offsets, config) apart from its sample bytes.
///
/// The samples are `body` with each `shared` value inserted at its position in `body`
/// (positions ascending; several may share one).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ShardParts {
    /// Samples in the shard.
    pub samples: usize,
    /// `u32 N`, the `N + 1` offsets, and the config JSON.
    pub header: Vec<u8>,
    /// The framed samples, back to back, less the shared values.
    pub body: Vec<u8>,
    /// Values held by reference, each with the position in `body` it goes before.
    pub shared: Vec<(usize, SharedBytes)>,
}

impl ShardParts {
    /// The shard file's size in bytes.
    pub fn len(&self) -> usize {
        let shared: usize = self.shared.iter().map(|(_, s)| s.bytes().len()).sum();
        self.header.len() + self.body.len() + shared
    }

    /// Whether the file would be empty (never: the header is always there).
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// The file's bytes as consecutive slices, in order, without copying.
    pub fn segments(&self) -> Vec<&[u8]> {
        let mut out = Vec::with_capacity(2 + 2 * self.shared.len());
        out.push(&self.header[..]);
        let mut at = 0;
        for (pos, shared) in &self.shared {
            out.push(&self.body[at..*pos]);
            out.push(shared.bytes());
            at = *pos;
        }
        out.push(&self.body[at..]);
        out.retain(|s| !s.is_empty());
        out
    }

    /// The whole file as one buffer (a copy).
    pub fn to_vec(&self) -> Vec<u8> {
        let mut out = Vec::with_capacity(self.len());
        for segment in self.segments() {
            out.extend_from_slice(segment);
        }
        out
    }
}
