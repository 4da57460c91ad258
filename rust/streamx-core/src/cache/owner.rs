//! Owner identity that holds across PID namespaces.
//!
//! A process that downloads or pins through a ledger first creates an *owner file*
//! `owners/<token>` beside the ledger and holds an exclusive `flock` on it for as long as it
//! uses the ledger. Another process judges the owner alive exactly when that lock cannot be
//! taken. The kernel drops the lock when the process dies, however it dies; and a lock is seen
//! by every process of the host whatever its PID namespace, which pids are not. A forked
//! child makes its own owner file on first use and closes the inherited descriptor.

use std::fs::File;
use std::io::{self, Read};
use std::os::unix::io::{FromRawFd, IntoRawFd};
use std::path::{Path, PathBuf};
use std::sync::atomic::{
    AtomicI32, AtomicU64, Ordering::AcqRel, Ordering::Acquire, Ordering::Release,
};

use super::lock::{flock, open_no_follow, ProcessId};

/// Set in `Owner::pid` while a thread of that pid is creating its owner file.
const CLAIMING: u64 = 1 << 32;

/// This process's owner file for one ledger directory.
pub(crate) struct Owner {
    dir: PathBuf,
    /// Pid the current token and descriptor belong to (`CLAIMING | pid` while being made).
    pid: AtomicU64,
    token: AtomicU64,
    fd: AtomicI32,
}

impl Owner {
    pub(crate) fn new(ledger_dir: &Path) -> Self {
        Self {
            dir: ledger_dir.join("owners"),
            pid: AtomicU64::new(0),
            token: AtomicU64::new(0),
            fd: AtomicI32::new(-1),
        }
    }

    /// This process's identity, its owner file made and locked on first use.
    pub(crate) fn me(&self) -> io::Result<ProcessId> {
        let me = u64::from(std::process::id());
        loop {
            let current = self.pid.load(Acquire);
            if current == me {
                return Ok(ProcessId {
                    pid: me as u32,
                    start: self.token.load(Acquire),
                });
            }
            if current == CLAIMING | me {
                std::thread::yield_now(); // another thread of ours is making it
                continue;
            }
            if self
                .pid
                .compare_exchange(current, CLAIMING | me, AcqRel, Acquire)
                .is_ok()
            {
                return self.claim(me);
            }
        }
    }

    fn claim(&self, me: u64) -> io::Result<ProcessId> {
        // A descriptor inherited over fork: closing our copy leaves the parent's lock held.
        let inherited = self.fd.swap(-1, AcqRel);
        if inherited >= 0 {
            // SAFETY: the descriptor was ours (inherited) and nothing else in this process owns it.
            #[allow(unsafe_code)]
            drop(unsafe { File::from_raw_fd(inherited) });
        }
        match create_locked(&self.dir) {
            Ok((token, file)) => {
                self.token.store(token, Release);
                self.fd.store(file.into_raw_fd(), Release);
                self.pid.store(me, Release);
                Ok(ProcessId {
                    pid: me as u32,
                    start: token,
                })
            }
            Err(err) => {
                self.pid.store(0, Release);
                Err(err)
            }
        }
    }

    /// Whether `process` still holds its owner file's lock. An owner found dead has its
    /// file removed.
    pub(crate) fn is_alive(&self, process: ProcessId) -> bool {
        if process.pid == 0 || process.start == 0 {
            return false;
        }
        let path = self.dir.join(format!("{:016x}", process.start));
        let Ok(file) = open_no_follow(&path, false) else {
            return false;
        };
        match flock(&file, libc::LOCK_EX | libc::LOCK_NB) {
            Ok(()) => {
                let _ = std::fs::remove_file(&path);
                false
            }
            // Held (EWOULDBLOCK), or locks cannot be judged here: never take over live work.
            Err(_) => true,
        }
    }

    /// Removes the owner files of dead processes (those nobody holds locked).
    pub(crate) fn sweep(&self) {
        let Ok(names) = std::fs::read_dir(&self.dir) else {
            return;
        };
        for name in names.flatten() {
            let name = name.file_name();
            let Some(token) = name.to_str().and_then(|n| u64::from_str_radix(n, 16).ok()) else {
                continue; // a pending file being made right now, or not ours
            };
            let _ = self.is_alive(ProcessId {
                pid: 1,
                start: token,
            });
        }
    }
}

impl Drop for Owner {
    fn drop(&mut self) {
        let fd = *self.fd.get_mut();
        if fd < 0 {
            return;
        }
        if *self.pid.get_mut() == u64::from(std::process::id()) {
            let _ = std::fs::remove_file(self.dir.join(format!("{:016x}", *self.token.get_mut())));
        }
        // SAFETY: the descriptor is owned by this value alone.
        #[allow(unsafe_code)]
        drop(unsafe { File::from_raw_fd(fd) });
    }
}

/// A new owner file, locked before it takes its final name so no sweeper sees it unlocked.
fn create_locked(dir: &Path) -> io::Result<(u64, File)> {
    std::fs::create_dir_all(dir)?;
    let token = random_token();
    let pending = dir.join(format!(".pending-{token:016x}"));
    let file = std::fs::OpenOptions::new()
        .read(true)
        .write(true)
        .create_new(true)
        .open(&pending)?;
    flock(&file, libc::LOCK_EX)?;
    std::fs::rename(&pending, dir.join(format!("{token:016x}")))?;
    Ok((token, file))
}

fn random_token() -> u64 {
    let mut bytes = [0u8; 8];
    let read = File::open("/dev/urandom").and_then(|mut f| f.read_exact(&mut bytes));
    let token = match read {
        Ok(()) => u64::from_le_bytes(bytes),
        Err(_) => super::clock::now_nanos() ^ (u64::from(std::process::id()) << 40),
    };
    token.max(1)
}
