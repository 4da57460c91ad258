//! Read-only memory maps of local files: the only `unsafe` in the core.
//!
//! Shards are read through maps so a sample costs no syscall and no copy. A zero-length
//! file cannot be mapped on every platform, so it is represented by an empty slice.

use std::fs::File;
use std::path::Path;

use memmap2::Mmap;

use crate::error::{Error, Result};

/// A whole file mapped read-only, or nothing for an empty file.
#[derive(Debug)]
pub struct MappedFile {
    map: Option<Mmap>,
}

impl MappedFile {
    /// Maps `path` read-only. A missing file gives [`Error::NotFound`].
    pub fn open(path: &Path) -> Result<Self> {
        let file = File::open(path).map_err(|e| Error::io(path, e))?;
        let len = file.metadata().map_err(|e| Error::io(path, e))?.len();
        if len == 0 {
            return Ok(Self { map: None });
        }
        Ok(Self {
            map: Some(map_file(&file).map_err(|e| Error::io(path, e))?),
        })
    }

    /// The file's bytes.
    pub fn as_slice(&self) -> &[u8] {
        self.map.as_deref().unwrap_or(&[])
    }

    /// The file's length in bytes.
    pub fn len(&self) -> usize {
        self.as_slice().len()
    }

    /// Whether the file is empty.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

impl AsRef<[u8]> for MappedFile {
    fn as_ref(&self) -> &[u8] {
        self.as_slice()
    }
}

#[allow(unsafe_code)]
fn map_file(file: &File) -> std::io::Result<Mmap> {
    // SAFETY: the map is read-only and private to this process. Shard files are only ever
    // replaced by atomic rename (streamx and mosaicml-streaming both write a temp file and
    // rename it), which leaves this mapping on the old inode. Truncating a mapped file in
    // place would fault; nothing in either library does that.
    unsafe { Mmap::map(file) }
}
