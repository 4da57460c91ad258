//! OS primitives of the ledger: an exclusive `flock`, and files opened without following
//! links (a cache directory may be shared, and a planted symlink must not redirect a write).

use std::fs::{File, OpenOptions};
use std::io;
use std::os::unix::fs::OpenOptionsExt;
use std::os::unix::io::AsRawFd;
use std::path::Path;

/// An exclusive `flock` held for the life of the value.
///
/// Each acquisition opens its own descriptor: `flock` belongs to the open file description, so
/// sharing one descriptor would let two threads, or a parent and its forked child, both "hold"
/// the lock at once. Dropping the value unlocks before it closes: a child forked while the
/// lock was held has a copy of the descriptor, and closing ours alone would leave the lock to
/// that copy, which the child never closes (the thread that held it does not exist there), so
/// the child, and every process after it, would wait for it forever. The death of the process
/// releases it too.
pub(crate) struct FileLock {
    file: File,
}

impl FileLock {
    pub(crate) fn exclusive(path: &Path) -> io::Result<Self> {
        let file = open_no_follow(path, true)?;
        flock(&file, libc::LOCK_EX)?;
        Ok(Self { file })
    }
}

impl Drop for FileLock {
    fn drop(&mut self) {
        let _ = flock(&self.file, libc::LOCK_UN); // for a forked child's copy too; then closed
    }
}

/// Opens `path` read-write, never through a symlink (`ELOOP` instead), creating it if asked.
pub(crate) fn open_no_follow(path: &Path, create: bool) -> io::Result<File> {
    OpenOptions::new()
        .read(true)
        .write(true)
        .create(create)
        .truncate(false)
        .mode(0o644)
        .custom_flags(libc::O_NOFOLLOW)
        .open(path)
}

/// `flock(operation)`, retried when a signal interrupts it.
pub(crate) fn flock(file: &File, operation: libc::c_int) -> io::Result<()> {
    loop {
        // SAFETY: the descriptor is valid for the life of `file`; flock has no memory effects.
        #[allow(unsafe_code)]
        let rc = unsafe { libc::flock(file.as_raw_fd(), operation) };
        if rc == 0 {
            return Ok(());
        }
        let err = io::Error::last_os_error();
        if err.kind() != io::ErrorKind::Interrupted {
            return Err(err);
        }
    }
}

/// A process as recorded in the ledger: its pid (for messages) and a random token naming the
/// owner file it holds locked (see `super::owner`), which is what liveness is judged by.
/// Pids mean nothing across PID namespaces (containers sharing a host cache directory); a
/// `flock` held by a live process is seen by every process of the host.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ProcessId {
    /// The operating-system process id, in the owner's own namespace.
    pub pid: u32,
    /// The owner's token; 0 means none.
    pub start: u64,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_symlink_is_never_followed() {
        let dir = tempfile::tempdir().unwrap();
        let target = dir.path().join("target");
        std::fs::write(&target, b"victim").unwrap();
        let link = dir.path().join("link");
        std::os::unix::fs::symlink(&target, &link).unwrap();
        assert!(open_no_follow(&link, true).is_err());
        assert!(FileLock::exclusive(&link).is_err());
        assert_eq!(std::fs::read(&target).unwrap(), b"victim");
    }
}
