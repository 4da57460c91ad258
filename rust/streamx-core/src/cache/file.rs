//! Opening a ledger file, or making one that cannot half-exist.
//!
//! A new ledger is made under a temporary name: its blocks are reserved (`fallocate`, else
//! written) *before* it is mapped, so a full disk fails here with `ENOSPC` rather than later
//! with `SIGBUS` on a write through the mapping; only a complete, initialised file is renamed
//! into place. A file found half-made, truncated or of an older layout holds nothing that
//! cannot be rebuilt (the cache is re-scanned at start), so it is replaced the same way.
//! Replacing by rename never truncates a file another process may still have mapped.

use std::fs::File;
use std::io::{self, Write};
use std::os::unix::fs::FileExt;
use std::os::unix::io::AsRawFd;
use std::path::{Path, PathBuf};
use std::sync::atomic::Ordering::{Relaxed, Release};

use super::layout::{pin_slot_count, View, MAGIC, VERSION};
use super::lock::open_no_follow;
use crate::error::{Error, Result};

/// Maps the ledger at `path` for `num_shards`, making or replacing it as needed. The caller
/// holds the ledger's lock.
pub(crate) fn open_or_create(path: &Path, num_shards: usize) -> Result<View> {
    match open_no_follow(path, false) {
        Ok(file) => {
            if let Some(view) = check_existing(path, &file, num_shards)? {
                return Ok(view);
            }
            create(path, num_shards)
        }
        Err(err) if err.kind() == io::ErrorKind::NotFound => create(path, num_shards),
        Err(err) => Err(Error::io(path, refused(path, err))),
    }
}

/// The existing ledger's mapping, `None` when it must be rebuilt, or an error when it is
/// a complete ledger made for another shard count.
fn check_existing(path: &Path, file: &File, num_shards: usize) -> Result<Option<View>> {
    let meta = file.metadata().map_err(|e| Error::io(path, e))?;
    if !meta.is_file() {
        return Err(Error::InvalidArgument(format!(
            "cache ledger {} is not a regular file",
            path.display()
        )));
    }
    let mut head = [0u8; 24];
    if file.read_exact_at(&mut head, 0).is_err() {
        return Ok(None); // empty or truncated: half-made
    }
    let word = |i: usize| u64::from_ne_bytes(head[i * 8..i * 8 + 8].try_into().unwrap_or([0; 8]));
    let (magic, version, shards) = (word(0), word(1), word(2));
    if magic == MAGIC && version == VERSION && shards != num_shards as u64 {
        return Err(Error::InvalidArgument(format!(
            "cache ledger {} was made for another shard count ({shards}) than {num_shards}",
            path.display()
        )));
    }
    if magic != MAGIC || version != VERSION || meta.len() != View::file_len(num_shards) {
        return Ok(None);
    }
    View::map(file, num_shards)
        .map(Some)
        .map_err(|e| Error::io(path, e))
}

fn create(path: &Path, num_shards: usize) -> Result<View> {
    let tmp = temp_name(path);
    let made = make(&tmp, num_shards).and_then(|view| {
        std::fs::rename(&tmp, path)?;
        Ok(view)
    });
    made.map_err(|err| {
        let _ = std::fs::remove_file(&tmp);
        Error::io(path, err)
    })
}

fn make(tmp: &Path, num_shards: usize) -> io::Result<View> {
    let file = std::fs::OpenOptions::new()
        .read(true)
        .write(true)
        .create_new(true)
        .open(tmp)?;
    reserve(&file, View::file_len(num_shards))?;
    let view = View::map(&file, num_shards)?;
    let header = view.header();
    header.version.store(VERSION, Relaxed);
    header.num_shards.store(num_shards as u64, Relaxed);
    header
        .pin_slots
        .store(pin_slot_count(num_shards) as u64, Relaxed);
    header.magic.store(MAGIC, Release);
    Ok(view)
}

/// Allocates `len` bytes of real blocks (zeroes): afterwards no write through a mapping
/// of the file can fail for want of space.
pub(crate) fn reserve(file: &File, len: u64) -> io::Result<()> {
    let size =
        libc::off_t::try_from(len).map_err(|_| io::Error::from(io::ErrorKind::InvalidInput))?;
    // SAFETY: the descriptor is valid for the life of `file`; no memory is passed.
    #[allow(unsafe_code)]
    let rc = unsafe { libc::posix_fallocate(file.as_raw_fd(), 0, size) };
    match rc {
        0 => Ok(()),
        libc::EOPNOTSUPP | libc::EINVAL => write_zeroes(file, len),
        errno => Err(io::Error::from_raw_os_error(errno)),
    }
}

fn write_zeroes(mut file: &File, len: u64) -> io::Result<()> {
    let chunk = vec![0u8; 1 << 16];
    let mut left = len;
    while left > 0 {
        let n = left.min(chunk.len() as u64) as usize;
        file.write_all(&chunk[..n])?;
        left -= n as u64;
    }
    file.sync_data()
}

fn temp_name(path: &Path) -> PathBuf {
    let name = path
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    let nonce = super::clock::now_nanos();
    path.with_file_name(format!(".{name}.{}.{nonce:x}.tmp", std::process::id()))
}

fn refused(path: &Path, err: io::Error) -> io::Error {
    if err.raw_os_error() == Some(libc::ELOOP) {
        return io::Error::other(format!(
            "{} is a symbolic link; streamx never writes its cache ledger through one \
             (was it planted by another user?)",
            path.display()
        ));
    }
    err
}

/// Whether deleting `path` stays where it was registered: its directory is no symlink (or
/// under one) leading elsewhere, and the file itself is no directory. A shard file is always
/// registered under the real path of its cache directory, so a link planted later is refused.
pub(crate) fn inside_its_directory(path: &Path) -> bool {
    let Some(parent) = path.parent() else {
        return false;
    };
    let real = std::fs::canonicalize(parent);
    let meta = std::fs::symlink_metadata(path);
    real.is_ok_and(|r| r == parent) && meta.map_or(true, |m| !m.is_dir())
}
