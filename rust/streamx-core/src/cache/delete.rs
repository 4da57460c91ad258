//! Deleting an evicted shard's files, and nothing else.
//!
//! The paths come from an index that a remote served, into a directory others may write. A
//! file is unlinked only when it is still the one streamx put there: reached without a
//! symlink (its directory is the real one it was registered under, and the file itself is
//! opened with `O_NOFOLLOW`), a regular file, and of the size the index gives it. Anything
//! else (a symlink, a directory, a FIFO, a file of another size) is left alone and no longer
//! counted; it is not ours to delete.

use std::fs::File;
use std::io;
use std::os::unix::fs::{MetadataExt, OpenOptionsExt};
use std::path::Path;

use super::ledger::Ledger;
use super::shard_files::ShardFiles;
use crate::error::{Error, Result};

impl Ledger {
    /// Registers the size the index gives each of [`Ledger::with_shard_files`]'s files
    /// (same shape): eviction deletes a file only at that size.
    ///
    /// # Errors
    /// [`Error::InvalidArgument`] if the shape differs from the registered files'.
    pub fn with_file_sizes(mut self, sizes: Vec<Vec<u64>>) -> Result<Self> {
        let ShardFiles::Listed {
            files,
            sizes: known,
        } = &mut self.files
        else {
            return Err(Error::InvalidArgument(
                "shard_sizes needs shard_files".into(),
            ));
        };
        let same = sizes.len() == files.len()
            && sizes.iter().zip(&*files).all(|(s, f)| s.len() == f.len());
        if !same {
            return Err(Error::InvalidArgument(
                "shard_sizes must give one size per file of shard_files".into(),
            ));
        }
        *known = sizes
            .into_iter()
            .map(|s| s.into_iter().map(Some).collect())
            .collect();
        Ok(self)
    }

    pub(super) fn delete_files(&self, victim: usize) -> io::Result<()> {
        for (path, expected) in self.files.of(victim) {
            remove_ours(&path, expected)?;
        }
        Ok(())
    }
}

/// Unlinks `path` if it is a regular file reached without a symlink and, when `expected` is
/// given, of that many bytes. Returns whether it did; a missing file is not an error.
pub(crate) fn remove_ours(path: &Path, expected: Option<u64>) -> io::Result<bool> {
    if !super::file::inside_its_directory(path) {
        return Ok(false);
    }
    let file = match File::options()
        .read(true)
        .custom_flags(libc::O_NOFOLLOW | libc::O_NONBLOCK)
        .open(path)
    {
        Ok(file) => file,
        Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(false),
        // A symlink, or a file we may not even read: not one streamx made.
        Err(e) if e.raw_os_error() == Some(libc::ELOOP) => return Ok(false),
        Err(e) if e.kind() == io::ErrorKind::PermissionDenied => return Ok(false),
        Err(e) => return Err(e),
    };
    let meta = file.metadata()?;
    if !meta.is_file() || expected.is_some_and(|bytes| bytes != meta.len()) {
        return Ok(false);
    }
    // Still the same file at that name (not swapped since it was opened)?
    let now = std::fs::symlink_metadata(path)?;
    if (now.dev(), now.ino()) != (meta.dev(), meta.ino()) {
        return Ok(false);
    }
    match std::fs::remove_file(path) {
        Ok(()) => Ok(true),
        Err(e) if e.kind() == io::ErrorKind::NotFound => Ok(false),
        Err(e) => Err(e),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ledger(dir: &Path, names: &[&str], sizes: &[u64]) -> Ledger {
        let files = vec![names.iter().map(|n| dir.join(n)).collect()];
        Ledger::open(dir.join("ledger"), 1, Some(1))
            .unwrap()
            .with_shard_files(files)
            .unwrap()
            .with_file_sizes(vec![sizes.to_vec()])
            .unwrap()
    }

    #[test]
    fn only_regular_files_of_the_expected_size_are_deleted() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path().canonicalize().unwrap();
        let outside = tempfile::tempdir().unwrap();
        let target = outside.path().join("precious");
        std::fs::write(&target, vec![1u8; 10]).unwrap();
        std::fs::write(root.join("ours.mds"), vec![0u8; 10]).unwrap();
        std::fs::write(root.join("planted.mds"), vec![0u8; 11]).unwrap();
        std::os::unix::fs::symlink(&target, root.join("link.mds")).unwrap();
        std::fs::create_dir(root.join("dir.mds")).unwrap();
        let names = [
            "ours.mds",
            "planted.mds",
            "link.mds",
            "dir.mds",
            "missing.mds",
        ];
        let ledger = ledger(&root, &names, &[10, 10, 10, 0, 3]);
        ledger.sync(0, Some(10)).unwrap();
        assert_eq!(ledger.evict(0).unwrap(), Some(10));
        assert!(!root.join("ours.mds").exists());
        assert_eq!(std::fs::read(root.join("planted.mds")).unwrap().len(), 11);
        assert!(root.join("link.mds").symlink_metadata().is_ok());
        assert!(root.join("dir.mds").is_dir());
        assert_eq!(std::fs::read(&target).unwrap(), vec![1u8; 10]);
        assert_eq!(ledger.usage(), 0);
    }

    #[test]
    fn sizes_must_match_the_files_shape() {
        let dir = tempfile::tempdir().unwrap();
        let files = vec![vec![dir.path().join("a"), dir.path().join("b")]];
        let ledger = Ledger::open(dir.path().join("ledger"), 1, None)
            .unwrap()
            .with_shard_files(files)
            .unwrap();
        assert!(ledger.with_file_sizes(vec![vec![1]]).is_err());
    }
}
