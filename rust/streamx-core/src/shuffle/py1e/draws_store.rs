//! Where a py1e epoch's counted draws are kept between processes: one file per epoch in a
//! directory private to this user, written whole (a temp file renamed into place), read only
//! if it is a regular file of ours no longer than the epoch's longest, the newest few kept.
//!
//! Keeping is best effort: nothing here fails a plan. A directory that is not private, a file
//! that cannot be written, or a file that does not decode is reported in [`CountCacheStats`]
//! and the draws are counted as if there were no file.
//!
//! The processes of a node (a data loader's workers, ranks) start an epoch together: one
//! counts a node's draws under the epoch's [`CountLock`] while the others wait, then read
//! them. A lock not had within [`CountCache::wait`] is counted around.

use std::fs::{self, File, OpenOptions};
use std::io::{self, Read, Write};
use std::os::unix::fs::{MetadataExt, OpenOptionsExt, PermissionsExt};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant, SystemTime};

use crate::cache::lock::flock;

/// Where counted py1e draws are kept, and from how many counted samples they are worth a file.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct CountCache {
    /// A directory of this user that no one else may write (else it is not used).
    pub dir: PathBuf,
    /// Draws are written once a plan has counted at least this many samples' draws itself.
    pub min_samples: u64,
    /// The longest a plan waits for another process counting the same node, then counts it
    /// itself.
    pub wait: Duration,
    /// py1e's resume marks from a state dict (see [`super::resume_marks`]), or empty: the
    /// canonical nodes they are valid for are laid out from them instead of counted.
    pub marks: Vec<u8>,
}

impl CountCache {
    /// A cache in `dir` written from `min_samples` counted samples on, waiting up to ten
    /// minutes for another process's count of a node.
    pub fn new(dir: PathBuf, min_samples: u64) -> Self {
        CountCache {
            dir,
            min_samples,
            wait: WAIT,
            marks: Vec::new(),
        }
    }
}

/// How long a plan waits for another process's count of a node: a live holder writes the node
/// and unlocks within its count (under a minute at 10^10 samples a node on a loaded machine),
/// and a dead one's lock is released by the kernel at once.
const WAIT: Duration = Duration::from_secs(600);
/// The longest sleep between two tries of a held lock.
const MAX_PAUSE: Duration = Duration::from_millis(50);

/// What a plan did with its [`CountCache`].
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct CountCacheStats {
    /// Canonical nodes whose draws were read from a file rather than counted.
    pub loaded_nodes: usize,
    /// Canonical nodes whose draws this plan wrote (all counted so far, at its last write).
    pub saved_nodes: usize,
    /// Why a file found for this epoch was not used, why none could be written, or why the
    /// epoch's lock was not had (the node was then counted here), or why resume marks were
    /// not used.
    pub problem: Option<String>,
    /// Canonical nodes that resume marks were given for (laid out from them unless a piece
    /// needs draws before their mark).
    pub seeded_nodes: usize,
}

/// Files this many epochs (or configurations) deep are kept per directory; older ones go.
const KEEP: usize = 4;
const PREFIX: &str = "py1e-draws-";
/// The file-name prefixes of the other shuffles' counts (see [`crate::shuffle::marks`]): each
/// prefix is pruned apart, so one algorithm's files do not push out another's.
pub(crate) const PY1S: &str = "py1s-draws-";
pub(crate) const PY1BR: &str = "py1br-draws-";
pub(crate) const PY2S: &str = "py2s-draws-";
pub(crate) const PY2S_RUN: &str = "py2s-run-draws-";
const SUFFIX: &str = ".bin";
/// A temp file this old was left by a writer that died: removed when pruning.
const STALE_TEMP: Duration = Duration::from_secs(3600);

/// The file of the epoch whose key digest is `digest`.
pub(super) fn file_name(digest: u128) -> String {
    file_name_for(PREFIX, digest)
}

/// The file of the epoch whose key digest is `digest`, for the algorithm of `prefix`.
pub(crate) fn file_name_for(prefix: &str, digest: u128) -> String {
    format!("{prefix}{digest:032x}{SUFFIX}")
}

/// The lock file of the epoch whose key digest is `digest` (a dot name: one a holder that died
/// left is pruned like a temp file once an hour old).
#[cfg(test)]
pub(super) fn lock_name(digest: u128) -> String {
    lock_name_for(PREFIX, digest)
}

fn lock_name_for(prefix: &str, digest: u128) -> String {
    format!(".{prefix}{digest:032x}.lock")
}

/// An exclusive `flock` on an epoch's lock file, held while one node is counted and written.
///
/// Dropping it removes the file, then unlocks: a waiter still holding the removed file sees
/// that it is no longer the one at the path and opens the path again, so at most one process
/// holds the file at the path, and the directory keeps only draws files. Unlocked before it is
/// closed, so that a child forked meanwhile (with a copy of the descriptor) does not keep it;
/// the kernel releases it when the holder dies.
pub(crate) struct CountLock {
    file: File,
    path: PathBuf,
}

impl Drop for CountLock {
    fn drop(&mut self) {
        let _ = fs::remove_file(&self.path);
        let _ = flock(&self.file, libc::LOCK_UN);
    }
}

/// Takes the epoch's [`CountLock`] in `dir` (checked private first), waiting at most `wait`
/// while other processes hold it.
pub(super) fn lock(dir: &Path, digest: u128, wait: Duration) -> io::Result<CountLock> {
    lock_for(dir, PREFIX, digest, wait)
}

/// [`lock`] for the algorithm of `prefix`.
pub(crate) fn lock_for(
    dir: &Path,
    prefix: &str,
    digest: u128,
    wait: Duration,
) -> io::Result<CountLock> {
    check_private(dir)?;
    let path = dir.join(lock_name_for(prefix, digest));
    let deadline = Instant::now() + wait;
    loop {
        let file = open_lock(&path)?;
        lock_until(&file, deadline).map_err(|err| {
            let what = format!("{}: {err} (waited {wait:?})", path.display());
            io::Error::new(err.kind(), what)
        })?;
        let held = file.metadata()?;
        match fs::symlink_metadata(&path) {
            Ok(now) if (now.dev(), now.ino()) == (held.dev(), held.ino()) => {
                return Ok(CountLock { file, path });
            }
            Ok(_) => {}
            Err(err) if err.kind() == io::ErrorKind::NotFound => {}
            Err(err) => return Err(err),
        }
        // The holder before us removed it: lock the file now at the path instead.
    }
}

/// Opens (creating) the lock file: a regular file of this user, never through a symlink.
fn open_lock(path: &Path) -> io::Result<File> {
    let file = OpenOptions::new()
        .read(true)
        .write(true)
        .create(true)
        .truncate(false)
        .mode(0o600)
        .custom_flags(libc::O_NOFOLLOW | libc::O_NONBLOCK | libc::O_CLOEXEC)
        .open(path)?;
    let meta = file.metadata()?;
    if !meta.is_file() || meta.uid() != euid() {
        return Err(io::Error::new(
            io::ErrorKind::InvalidData,
            format!("{} is not a file of this user", path.display()),
        ));
    }
    Ok(file)
}

/// Locks `file` exclusively, trying until `deadline` while another holds it.
fn lock_until(file: &File, deadline: Instant) -> io::Result<()> {
    let mut pause = Duration::from_millis(1);
    loop {
        match flock(file, libc::LOCK_EX | libc::LOCK_NB) {
            Err(err) if err.kind() == io::ErrorKind::WouldBlock => {}
            done => return done,
        }
        let left = deadline.saturating_duration_since(Instant::now());
        if left.is_zero() {
            return Err(io::Error::new(
                io::ErrorKind::TimedOut,
                "held by another process",
            ));
        }
        std::thread::sleep(pause.min(left));
        pause = (pause * 2).min(MAX_PAUSE);
    }
}

/// Refuses a directory another user could write into (or plant files in).
pub(crate) fn check_private(dir: &Path) -> io::Result<()> {
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
pub(crate) fn read(dir: &Path, name: &str, max_len: u64) -> io::Result<Option<Vec<u8>>> {
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
    write_for(dir, PREFIX, name, bytes)
}

/// [`write`] for the algorithm of `prefix` (its files pruned apart).
pub(crate) fn write_for(dir: &Path, prefix: &str, name: &str, bytes: &[u8]) -> io::Result<()> {
    static SERIAL: AtomicU64 = AtomicU64::new(0);
    let temp = dir.join(format!(
        ".{prefix}{}-{}.tmp",
        std::process::id(),
        SERIAL.fetch_add(1, Ordering::Relaxed)
    ));
    let result = write_new(&temp, bytes).and_then(|()| fs::rename(&temp, dir.join(name)));
    if result.is_err() {
        let _ = fs::remove_file(&temp);
    }
    result?;
    prune(dir, prefix);
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

/// Removes all but the [`KEEP`] newest draws files of `prefix`, and its temp (and lock) files
/// left by dead writers.
fn prune(dir: &Path, prefix: &str) {
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
        if name.starts_with(prefix) && name.ends_with(SUFFIX) {
            kept.push((modified, entry.path()));
        } else if name.starts_with(&format!(".{prefix}"))
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
