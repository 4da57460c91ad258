//! Read-only memory maps of local files: the only `unsafe` in the core (with `mmap_guard` and
//! `mmap_lease`).
//!
//! Shards are read through maps so a sample costs no syscall and no copy. A zero-length
//! file cannot be mapped on every platform, so it is represented by an empty slice. Every
//! map is registered with [`crate::mmap_guard`], so a file truncated while mapped does not
//! kill the process: [`MappedFile::check`] after a read reports it instead.

use std::fs::File;
use std::path::Path;

use memmap2::{Mmap, MmapMut};

use crate::error::{Error, Result};
use crate::mmap_guard::Guard;
use crate::mmap_lease::Lease;

/// A whole file mapped read-only, or nothing for an empty file.
#[derive(Debug)]
pub struct MappedFile {
    // Declared before `map`: the guard and the lease are released before the range is
    // unmapped, and the file (whose descriptor holds the lease) is closed last.
    guard: Option<Guard>,
    lease: Option<Lease>,
    map: Option<Mmap>,
    _file: Option<File>,
}

impl MappedFile {
    /// Maps `path` read-only. A missing file gives [`Error::NotFound`].
    pub fn open(path: &Path) -> Result<Self> {
        let Some((file, _)) = open_with_bytes(path)? else {
            return Ok(Self::empty());
        };
        let map = map_file(&file).map_err(|e| Error::io(path, e))?;
        Ok(Self {
            guard: Guard::register(map.as_ptr(), map.len()),
            lease: None,
            map: Some(map),
            _file: None,
        })
    }

    /// Maps `path` for views that outlive any read (`zero_copy=True`): their bytes stay
    /// what they were even if someone truncates or rewrites the file. The map holds a read
    /// lease, so such a change first moves the bytes into private memory
    /// ([`crate::mmap_lease`]); where no lease can be had, the file is copied into private
    /// memory now (and never reports a change: it holds the bytes read at open, whole).
    /// A leased map reports a change through [`MappedFile::changed`] once it was broken.
    pub fn open_for_views(path: &Path) -> Result<Self> {
        let Some((file, len)) = open_with_bytes(path)? else {
            return Ok(Self::empty());
        };
        let map = map_file(&file).map_err(|e| Error::io(path, e))?;
        let guard = Guard::register(map.as_ptr(), map.len());
        if let Some(lease) = Lease::take(&file, map.as_ptr(), map.len()) {
            // A change between mapping and leasing would have gone unnoticed: check now.
            let now = file.metadata().map_err(|e| Error::io(path, e))?.len();
            let poisoned = guard.as_ref().is_some_and(Guard::poisoned);
            if now == len && !poisoned {
                return Ok(Self {
                    guard,
                    lease: Some(lease),
                    map: Some(map),
                    _file: Some(file),
                });
            }
            return Err(changed_error(path));
        }
        drop(guard);
        drop(map);
        let copy = private_copy(&file, len).map_err(|e| Error::io(path, e))?;
        Ok(Self {
            guard: None,
            lease: None,
            map: Some(copy),
            _file: None,
        })
    }

    fn empty() -> Self {
        Self {
            guard: None,
            lease: None,
            map: None,
            _file: None,
        }
    }

    /// Whether the file shrank under the map since it was opened (its bytes were replaced
    /// by zeros), or, for a map opened for views, was opened for writing or truncated (its
    /// bytes were kept in private memory): either way what the map holds may no longer be
    /// the file's.
    pub fn changed(&self) -> bool {
        self.guard.as_ref().is_some_and(Guard::poisoned)
            || self.lease.as_ref().is_some_and(Lease::broken)
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

/// `path` opened with its length, or `None` for an empty file (which cannot be mapped on
/// every platform).
fn open_with_bytes(path: &Path) -> Result<Option<(File, u64)>> {
    let file = File::open(path).map_err(|e| Error::io(path, e))?;
    let len = file.metadata().map_err(|e| Error::io(path, e))?.len();
    Ok((len > 0).then_some((file, len)))
}

/// The file's `len` bytes in private, read-only memory.
fn private_copy(file: &File, len: u64) -> std::io::Result<Mmap> {
    use std::os::unix::fs::FileExt;
    let size = usize::try_from(len).map_err(std::io::Error::other)?;
    let mut copy = MmapMut::map_anon(size)?;
    file.read_exact_at(&mut copy, 0)?;
    copy.make_read_only()
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
    fn a_map_for_views_keeps_its_bytes_when_the_file_is_truncated() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("shard.mds");
        let len = 3 * 65_536 + 5;
        std::fs::write(&path, vec![9u8; len]).unwrap();
        let map = MappedFile::open_for_views(&path).unwrap();
        assert!(
            map.lease.is_some(),
            "a file of our own on a local disk can be leased"
        );
        assert!(!map.changed());
        // Opening for writing waits for the lease's holder (this process) to give it up;
        // then the truncation goes through, and the map still holds the old bytes.
        let file = File::options().write(true).open(&path).unwrap();
        file.set_len(100).unwrap();
        assert_eq!(std::fs::metadata(&path).unwrap().len(), 100);
        assert!(map.as_slice().iter().all(|&b| b == 9));
        assert_eq!(map.len(), len);
        assert!(map.changed());
        assert!(map.check(&path).is_err());
    }

    #[test]
    fn a_map_for_views_copies_a_file_it_cannot_lease() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("shard.mds");
        std::fs::write(&path, vec![4u8; 70_000]).unwrap();
        // A writer holding the file open already: no read lease can be had.
        let writer = File::options().write(true).open(&path).unwrap();
        let map = MappedFile::open_for_views(&path).unwrap();
        assert!(map.lease.is_none() && map.guard.is_none());
        writer.set_len(0).unwrap();
        assert!(map.as_slice().iter().all(|&b| b == 4));
        assert_eq!(map.len(), 70_000);
        assert!(
            !map.changed(),
            "a private copy is the bytes read at open, whole"
        );
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
