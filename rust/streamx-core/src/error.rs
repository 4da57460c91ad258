//! The one error type of the core. Every variant names the file, shard, column or
//! argument at fault, so the Python side can surface it unchanged.

use std::path::PathBuf;

/// Result alias used across the core.
pub type Result<T> = std::result::Result<T, Error>;

/// Everything that can go wrong in the core. Bad data never panics; it lands here.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// An I/O error while touching `path`.
    #[error("{path}: {source}")]
    Io {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    /// A file that should exist does not.
    #[error("No such file: {0}")]
    NotFound(PathBuf),
    /// A shard file whose bytes contradict its header or index entry.
    #[error("Corrupt shard {path}: {reason}")]
    CorruptShard { path: PathBuf, reason: String },
    /// An `index.json` that is empty, not JSON, or not a valid MDS index.
    #[error("Index file at {path} is empty or corrupted. {reason}")]
    CorruptIndex { path: PathBuf, reason: String },
    /// A digest that does not match the one recorded in the index.
    #[error("Checksum failure: {path}")]
    ChecksumMismatch { path: PathBuf },
    /// An encoding name the format does not define.
    #[error("Unsupported encoding: {0}")]
    UnsupportedEncoding(String),
    /// A sample id outside `0..len`.
    #[error("Sample index {index} out of range for {len} samples")]
    IndexOutOfRange { index: i64, len: u64 },
    /// A caller-supplied argument or value that cannot be used.
    #[error("{0}")]
    InvalidArgument(String),
    /// A value whose type or size does not fit its column.
    #[error("{0}")]
    InvalidValue(String),
    /// An allocation sized by input that the process cannot make (Python: `MemoryError`).
    #[error("{0}")]
    OutOfMemory(String),
}

impl Error {
    /// Wraps an `io::Error` with the path it concerns; `NotFound` gets its own variant.
    pub fn io(path: impl Into<PathBuf>, source: std::io::Error) -> Self {
        let path = path.into();
        if source.kind() == std::io::ErrorKind::NotFound {
            Error::NotFound(path)
        } else {
            Error::Io { path, source }
        }
    }
}
