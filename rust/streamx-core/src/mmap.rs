//! Read-only memory maps of local files: the only `unsafe` in the core (with `mmap_guard`).
//!
//! Shards are read through maps so a sample costs no syscall and no copy. A zero-length
//! file cannot be mapped on every platform, so it is represented by an empty slice. Every
//! map is registered with [`crate::mmap_guard`], so a file truncated while mapped does not
//! kill the process: [`MappedFile::check`] after a read reports it instead.

use std::fs::File;
use std::path::Path;

use memmap2::Mmap;

use crate::error::{Error, Result};
use crate::mmap_guard::Guard;

/// A whole file mapped read-only, or nothing for an empty file.
#[derive(Debug)]
pub struct MappedFile {
    // Declared before `map`: the guard is released before the range is unmapped.
    guard: Option<Guard>,
    map: Option<Mmap>,
}

impl MappedFile {
    /// Maps `path` read-only. A missing file gives [`Error::NotFound`].
    pub fn open(path: &Path) -> Result<Self> {
        let file = File::open(path).map_err(|e| Error::io(path, e))?;
        let len = file.metadata().map_err(|e| Error::io(path, e))?.len();
        if len == 0 {
            return Ok(Self {
                guard: None,
                map: None,
            });
        }
        let map = map_file(&file).map_err(|e| Error::io(path, e))?;
        Ok(Self {
            guard: Guard::register(map.as_ptr(), map.len()),
            map: Some(map),
        })
    }

    /// Whether the file shrank under the map since it was opened: its bytes were replaced
    /// by zeros, so whatever was read from it is not the file's.
    pub fn changed(&self) -> bool {
        self.guard.as_ref().is_some_and(Guard::poisoned)
    }

    /// [`Error::CorruptShard`] naming `path` if [`MappedFile::changed`]: call it after
    /// reading from the map, before trusting what was read.
    pub fn check(&self, path: &Path) -> Result<()> {
        if self.changed() {
            return Err(changed_error(path));
        }
        Ok(())
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

/// The error for a file that shrank while mapped.
pub fn changed_error(path: &Path) -> Error {
    Error::CorruptShard {
        path: path.to_path_buf(),
        reason: "the file was truncated or rewritten in place while streamx had it mapped \
                 (do not modify a dataset's files while it is read)"
            .into(),
    }
}

#[allow(unsafe_code)]
fn map_file(file: &File) -> std::io::Result<Mmap> {
    // SAFETY: the map is read-only and private to this process. streamx replaces files only
    // by atomic rename, which leaves this mapping on the old inode. Someone else truncating
    // the file in place makes accesses past its new end fault: `mmap_guard` turns that
    // fault into zero pages and a poison flag that every reader checks.
    unsafe { Mmap::map(file) }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_file_truncated_while_mapped_is_reported_not_fatal() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("shard.mds");
        let len = 3 * 65_536;
        std::fs::write(&path, vec![7u8; len]).unwrap();
        let map = MappedFile::open(&path).unwrap();
        let first = map.as_slice().as_ptr();
        // SAFETY: in bounds of the mapping; volatile so the read really happens.
        #[allow(unsafe_code)]
        let before = unsafe { first.read_volatile() };
        assert_eq!(before, 7);
        assert!(map.check(&path).is_ok());
        let file = File::options().write(true).open(&path).unwrap();
        file.set_len(100).unwrap();
        // Past the new end: a SIGBUS, which the guard turns into zero pages.
        #[allow(unsafe_code)]
        let after = unsafe { first.add(len - 1).read_volatile() };
        assert_eq!(after, 0);
        assert!(map.changed());
        let err = map.check(&path).unwrap_err();
        assert!(matches!(err, Error::CorruptShard { .. }), "{err}");
        assert!(err.to_string().contains("shard.mds"), "{err}");
    }

    #[test]
    fn an_untouched_map_is_not_changed() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("f");
        std::fs::write(&path, b"abc").unwrap();
        let map = MappedFile::open(&path).unwrap();
        assert_eq!(map.as_slice(), b"abc");
        assert!(!map.changed());
        drop(map);
        let again = MappedFile::open(&path).unwrap(); // the freed slot is reused cleanly
        assert!(!again.changed());
    }
}
