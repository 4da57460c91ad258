//! OS primitives of the ledger: an exclusive `flock` and process identity for liveness checks.

use std::fs::{File, OpenOptions};
use std::io;
use std::os::unix::io::AsRawFd;
use std::path::Path;
use std::sync::atomic::{AtomicU32, AtomicU64, Ordering};

/// An exclusive `flock` held for the life of the value.
///
/// Each acquisition opens its own descriptor: `flock` belongs to the open file description, so
/// sharing one descriptor would let two threads, or a parent and its forked child, both "hold"
/// the lock at once. Dropping the file closes the descriptor, which releases the lock; so does
/// the death of the process.
pub(crate) struct FileLock {
    _file: File,
}

impl FileLock {
    pub(crate) fn exclusive(path: &Path) -> io::Result<Self> {
        let file = OpenOptions::new()
            .read(true)
            .write(true)
            .create(true)
            .truncate(false)
            .open(path)?;
        loop {
            // SAFETY: the descriptor is valid for the life of `file`; flock has no memory effects.
            #[allow(unsafe_code)]
            let rc = unsafe { libc::flock(file.as_raw_fd(), libc::LOCK_EX) };
            if rc == 0 {
                return Ok(Self { _file: file });
            }
            let err = io::Error::last_os_error();
            if err.kind() != io::ErrorKind::Interrupted {
                return Err(err);
            }
        }
    }
}

/// A process as recorded in the ledger: its pid plus its start time (clock ticks since boot,
/// from `/proc/<pid>/stat`), so a recycled pid is not mistaken for the original owner.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ProcessId {
    /// The operating-system process id.
    pub pid: u32,
    /// Start time in clock ticks since boot; 0 where `/proc` is unavailable.
    pub start: u64,
}

static CACHED_START: AtomicU64 = AtomicU64::new(0);
static CACHED_PID: AtomicU32 = AtomicU32::new(0);

impl ProcessId {
    /// The calling process. Re-read after a fork because the pid changes.
    pub fn current() -> Self {
        let pid = std::process::id();
        if CACHED_PID.load(Ordering::Acquire) == pid {
            return Self {
                pid,
                start: CACHED_START.load(Ordering::Relaxed),
            };
        }
        let start = proc_stat(pid).map_or(0, |(_, start)| start);
        CACHED_START.store(start, Ordering::Relaxed);
        CACHED_PID.store(pid, Ordering::Release);
        Self { pid, start }
    }
}

/// Whether `process` still runs. Zombies and recycled pids count as dead.
pub fn is_alive(process: ProcessId) -> bool {
    if process.pid == 0 || process.pid > i32::MAX as u32 {
        return false;
    }
    // SAFETY: signal 0 only probes for existence and permission; nothing is delivered.
    #[allow(unsafe_code)]
    let rc = unsafe { libc::kill(process.pid as libc::pid_t, 0) };
    if rc != 0 && io::Error::last_os_error().raw_os_error() != Some(libc::EPERM) {
        return false;
    }
    match proc_stat(process.pid) {
        Some((state, start)) => state != 'Z' && (process.start == 0 || start == process.start),
        None => true,
    }
}

/// State letter and start time (field 22) of `/proc/<pid>/stat`.
fn proc_stat(pid: u32) -> Option<(char, u64)> {
    let text = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    // The command name may contain spaces and parentheses; fields resume after the last ')'.
    let rest = &text[text.rfind(')')? + 1..];
    let mut fields = rest.split_whitespace();
    let state = fields.next()?.chars().next()?;
    let start = fields.nth(18)?.parse().ok()?;
    Some((state, start))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn current_process_is_alive() {
        let me = ProcessId::current();
        assert_eq!(me.pid, std::process::id());
        assert!(is_alive(me));
        assert!(
            !is_alive(ProcessId {
                pid: me.pid,
                start: me.start.wrapping_add(1)
            }) || me.start == 0
        );
        assert!(!is_alive(ProcessId { pid: 0, start: 0 }));
    }

    #[test]
    fn reaped_child_is_dead() {
        let mut child = std::process::Command::new("true").spawn().unwrap();
        let pid = child.id();
        child.wait().unwrap();
        assert!(!is_alive(ProcessId { pid, start: 0 }));
    }
}
