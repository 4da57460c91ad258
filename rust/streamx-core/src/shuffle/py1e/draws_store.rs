//! Where a py1e epoch's counted draws are kept between processes: one file per epoch in a
//! directory private to this user, written whole (a temp file renamed into place), read only
//! if it is a regular file of ours no longer than the epoch's longest, the newest few kept.
//!
//! Keeping is best effort: nothing here fails a plan. A directory that is not private, a file
//! that cannot be written, or a file that does not decode is reported in [`CountCacheStats`]
//! and the draws are counted as if there were no file.

use std::fs::{self, File, OpenOptions};
use std::io::{self, Read, Write};
use std::os::unix::fs::{MetadataExt, OpenOptionsExt, PermissionsExt};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, SystemTime};

/// Where counted py1e draws are kept, and from how many counted samples they are worth a file.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct CountCache {
    /// A directory of this user that no one else may write (else it is not used).
    pub dir: PathBuf,
    /// Draws are written once a plan has counted at least this many samples' draws itself.
    pub min_samples: u64,
}

/// What a plan did with its [`CountCache`].
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct CountCacheStats {
    /// Canonical nodes whose draws were read from a file rather than counted.
    pub loaded_nodes: usize,
    /// Canonical nodes whose draws this plan wrote (all counted so far, at its last write).
    pub saved_nodes: usize,
    /// Why a file found for this epoch was not used, or why none could be written.
    pub problem: Option<String>,
}

/// Files this many epochs (or configurations) deep are kept per directory; older ones go.
const KEEP: usize = 4;
const PREFIX: &str = "py1e-draws-";
const SUFFIX: &str = ".bin";
/// A temp file this old was left by a writer that died: removed when pruning.
const STALE_TEMP: Duration = Duration::from_secs(3600);

/// The file of the epoch whose key digest is `digest`.
pub(super) fn file_name(digest: u128) -> String {
    format!("{PREFIX}{digest:032x}{SUFFIX}")
}

/// Refuses a directory another user could write into (or plant files in).
pub(super) fn check_private(dir: &Path) -> io::Result<()> {
    let meta = fs::symlink_metadata(dir)?;
    let mode = meta.permissions().mode();
    if !meta.is_dir() || meta.uid() != euid() || mode & 0o022 != 0 {
        return Err(io::Error::new(
            io::ErrorKind::PermissionDenied,
            format!(
                "{} is not a directory of this user that only it can write (mode {:o})",
                dir.display(),
                mode & 0o7777
            ),
        ));
    }
    Ok(())
}

fn euid() -> u32 {
    // SAFETY: geteuid has no preconditions, touches no memory and cannot fail.
    #[allow(unsafe_code)]
    unsafe {
        libc::geteuid()
    }
}

/// The file's bytes, if it is a regular file of this user (not a symlink) of at most
/// `max_len` bytes; `Ok(None)` if there is none.
pub(super) fn read(dir: &Path, name: &str, max_len: u64) -> io::Result<Option<Vec<u8>>> {
    let opened = OpenOptions::new()
        .read(true)
        .custom_flags(libc::O_NOFOLLOW | libc::O_NONBLOCK | libc::O_CLOEXEC)
        .open(dir.join(name));
    let file = match opened {
        Ok(file) => file,
        Err(err) if err.kind() == io::ErrorKind::NotFound => return Ok(None),
        Err(err) => return Err(err),
    };
    let meta = file.metadata()?;
    if !meta.is_file() || meta.uid() != euid() || meta.len() > max_len {
        return Err(io::Error::new(
            io::ErrorKind::InvalidData,
            format!("not a file of this user of at most {max_len} bytes"),
        ));
    }
    let mut bytes = Vec::with_capacity(meta.len() as usize);
    file.take(max_len).read_to_end(&mut bytes)?;
    Ok(Some(bytes))
}

/// Replaces the file whole: written under a temp name beside it, then renamed; then prunes.
pub(super) fn write(dir: &Path, name: &str, bytes: &[u8]) -> io::Result<()> {
    static SERIAL: AtomicU64 = AtomicU64::new(0);
    let temp = dir.join(format!(
        ".{PREFIX}{}-{}.tmp",
        std::process::id(),
        SERIAL.fetch_add(1, Ordering::Relaxed)
    ));
    let result = write_new(&temp, bytes).and_then(|()| fs::rename(&temp, dir.join(name)));
    if result.is_err() {
        let _ = fs::remove_file(&temp);
    }
    result?;
    prune(dir);
    Ok(())
}

fn write_new(path: &Path, bytes: &[u8]) -> io::Result<()> {
    let mut file: File = OpenOptions::new()
        .write(true)
        .create_new(true)
        .mode(0o600)
        .custom_flags(libc::O_NOFOLLOW | libc::O_CLOEXEC)
        .open(path)?;
    file.write_all(bytes)
}

/// Removes all but the [`KEEP`] newest draws files, and temp files left by dead writers.
fn prune(dir: &Path) {
    let Ok(entries) = fs::read_dir(dir) else {
        return;
    };
    let now = SystemTime::now();
    let mut kept = Vec::new();
    for entry in entries.flatten() {
        let name = entry.file_name().to_string_lossy().into_owned();
        let Ok(modified) = entry.metadata().and_then(|m| m.modified()) else {
            continue;
        };
        if name.starts_with(PREFIX) && name.ends_with(SUFFIX) {
            kept.push((modified, entry.path()));
        } else if name.starts_with(&format!(".{PREFIX}"))
            && now.duration_since(modified).unwrap_or_default() > STALE_TEMP
        {
            let _ = fs::remove_file(entry.path());
        }
    }
    kept.sort_by_key(|k| std::cmp::Reverse(k.0));
    for (_, path) in kept.iter().skip(KEEP) {
        let _ = fs::remove_file(path);
    }
}
