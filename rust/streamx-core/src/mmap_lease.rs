//! Keeping zero-copy views valid when someone else truncates or rewrites their file.
//!
//! A view handed to the user (`zero_copy=True`) is memory over a shard's map. The SIGBUS
//! guard ([`crate::mmap_guard`]) keeps a truncation from killing the process, but the view
//! would then read zeros. So each such map also holds a kernel *read lease* on its file
//! (`fcntl(F_SETLEASE, F_RDLCK)`): before anyone opens the file for writing or truncates it,
//! the kernel holds that call back and signals us. Our handler copies the map's bytes into
//! private memory, moves that memory onto the map's address in one step
//! (`mremap(MREMAP_FIXED)`, so a concurrent read sees the old bytes or the same bytes, never
//! a hole), marks the map *broken* and gives the lease up; only then does the other call
//! proceed. The views keep the bytes they had, and the reader raises at its next read.
//!
//! Where a lease cannot be had (a file of another user, a file system without leases, a
//! writer holding it open already), the caller copies the file into private memory instead.
//!
//! A forked child inherits the maps but not the lease's signal (it goes to the process that
//! took it): the child takes its own lease on a fresh open of the same file, or copies.
//!
//! The table is a fixed array of atomics: the handler takes no lock and allocates nothing.
//! Unmapping waits for a copy in progress, so the handler never writes over a range that
//! was given back.

use std::fs::File;
use std::os::fd::AsRawFd;
use std::sync::atomic::Ordering::{AcqRel, Acquire, Relaxed, Release};
use std::sync::atomic::{AtomicI32, AtomicU8, AtomicUsize};
use std::sync::Once;

/// Leased maps one process can have at once; past that, callers copy.
pub const SLOTS: usize = 1 << 12;

const FREE: u8 = 0;
const CLAIMED: u8 = 1; // being set up or torn down by its owner
const LIVE: u8 = 2; // leased, bytes from the file
const COPYING: u8 = 3; // the handler is moving the bytes into private memory
const DETACHED: u8 = 4; // private bytes now; the lease is given up

struct Slot {
    state: AtomicU8,
    fd: AtomicI32,
    start: AtomicUsize,
    len: AtomicUsize,
}

#[allow(clippy::declare_interior_mutable_const)] // a template for the array, never shared
const EMPTY: Slot = Slot {
    state: AtomicU8::new(FREE),
    fd: AtomicI32::new(-1),
    start: AtomicUsize::new(0),
    len: AtomicUsize::new(0),
};
static TABLE: [Slot; SLOTS] = [EMPTY; SLOTS];
static PAGE: AtomicUsize = AtomicUsize::new(4096);

/// The signal the kernel sends when a lease must be given up (a real-time one, so it is
/// queued with its file descriptor and does not collide with `SIGIO` users).
fn lease_signal() -> libc::c_int {
    libc::SIGRTMIN() + 11
}

/// A read lease on a mapped file; dropping it gives the lease up. Drop it *before*
/// unmapping the range.
#[derive(Debug)]
pub struct Lease {
    slot: usize,
}

impl Lease {
    /// Leases `file`, mapped read-only at `start` for `len` bytes; `None` when no lease can
    /// be had (the caller then keeps a private copy instead).
    pub fn take(file: &File, start: *const u8, len: usize) -> Option<Lease> {
        install();
        let fd = file.as_raw_fd();
        let slot = claim(fd, start as usize, len)?;
        // Published before the lease exists, so a break arriving at once finds its slot.
        TABLE[slot].state.store(LIVE, Release);
        if lease_fd(fd) {
            return Some(Lease { slot });
        }
        release_slot(slot);
        None
    }

    /// Whether someone opened the file for writing or truncated it since: the map now holds
    /// a private copy of the bytes it had, which may no longer be the file's.
    pub fn broken(&self) -> bool {
        TABLE[self.slot].state.load(Acquire) == DETACHED
    }
}

impl Drop for Lease {
    fn drop(&mut self) {
        let entry = &TABLE[self.slot];
        // Wait out a copy in progress (another thread's handler) before the range goes.
        loop {
            let state = entry.state.load(Acquire);
            if state == COPYING {
                std::thread::yield_now();
                continue;
            }
            if entry
                .state
                .compare_exchange(state, CLAIMED, AcqRel, Acquire)
                .is_ok()
            {
                break;
            }
        }
        let fd = entry.fd.load(Acquire);
        // SAFETY: fcntl and close on a descriptor this slot owns; F_UNLCK on a descriptor
        // without a lease is a no-op.
        #[allow(unsafe_code)]
        unsafe {
            libc::fcntl(fd, libc::F_SETLEASE, libc::F_UNLCK);
            if owns_fd(self.slot) {
                libc::close(fd);
            }
        }
        release_slot(self.slot);
    }
}

fn claim(fd: i32, start: usize, len: usize) -> Option<usize> {
    if start == 0 || len == 0 {
        return None;
    }
    let hint = start / PAGE.load(Relaxed);
    (0..SLOTS).map(|i| (hint + i) % SLOTS).find(|&slot| {
        let entry = &TABLE[slot];
        if entry
            .state
            .compare_exchange(FREE, CLAIMED, AcqRel, Relaxed)
            .is_err()
        {
            return false;
        }
        entry.fd.store(fd, Relaxed);
        entry.start.store(start, Relaxed);
        entry.len.store(len, Relaxed);
        true
    })
}

fn release_slot(slot: usize) {
    let entry = &TABLE[slot];
    entry.fd.store(-1, Relaxed);
    entry.start.store(0, Relaxed);
    entry.len.store(0, Relaxed);
    entry.state.store(FREE, Release);
}

/// `fcntl`'s command choosing the signal of a lease break (Linux's `F_SETSIG`, which the
/// `libc` crate does not name).
const F_SETSIG: libc::c_int = 10;

/// Asks for our signal on a break, then for the read lease itself.
#[allow(unsafe_code)]
fn lease_fd(fd: i32) -> bool {
    // SAFETY: fcntl on a descriptor the caller keeps open.
    unsafe {
        libc::fcntl(fd, F_SETSIG, lease_signal()) == 0
            && libc::fcntl(fd, libc::F_SETLEASE, libc::F_RDLCK) == 0
    }
}

/// Installs the signal handler and the fork hook once per process.
fn install() {
    static INSTALLED: Once = Once::new();
    INSTALLED.call_once(|| {
        // SAFETY: sysconf, sigaction and pthread_atfork get valid arguments.
        #[allow(unsafe_code)]
        unsafe {
            if let Ok(page) = usize::try_from(libc::sysconf(libc::_SC_PAGESIZE)) {
                PAGE.store(page.max(1), Relaxed);
            }
            let mut new: libc::sigaction = std::mem::zeroed();
            new.sa_sigaction = on_lease_break as *const () as usize;
            new.sa_flags = libc::SA_SIGINFO | libc::SA_RESTART | libc::SA_ONSTACK;
            libc::sigemptyset(&raw mut new.sa_mask);
            libc::sigaction(lease_signal(), &raw const new, std::ptr::null_mut());
            libc::pthread_atfork(None, None, Some(in_forked_child));
        }
    });
}

/// The kernel wants a lease back: every live map whose lease is being broken moves to
/// private memory, then gives its lease up.
#[allow(unsafe_code)]
extern "C" fn on_lease_break(_: libc::c_int, _: *mut libc::siginfo_t, _: *mut libc::c_void) {
    for (slot, entry) in TABLE.iter().enumerate() {
        if entry.state.load(Acquire) != LIVE {
            continue;
        }
        let fd = entry.fd.load(Acquire);
        // SAFETY: F_GETLEASE on a descriptor a live slot keeps open. While a break is
        // pending it reports the type being broken to (F_UNLCK for a read lease).
        let pending = unsafe { libc::fcntl(fd, libc::F_GETLEASE) } == libc::F_UNLCK;
        if pending {
            detach(slot);
        }
    }
}

/// Moves one live map to private memory and gives its lease up; false if the copy failed
/// (the map stays on the file, guarded against SIGBUS only).
#[allow(unsafe_code)]
fn detach(slot: usize) -> bool {
    let entry = &TABLE[slot];
    if entry
        .state
        .compare_exchange(LIVE, COPYING, AcqRel, Acquire)
        .is_err()
    {
        return true; // its owner or another handler has it
    }
    let start = entry.start.load(Acquire);
    let len = entry.len.load(Acquire);
    let fd = entry.fd.load(Acquire);
    let copied = copy_in_place(start, len);
    // SAFETY: giving up the lease on the descriptor this live slot keeps open.
    unsafe { libc::fcntl(fd, libc::F_SETLEASE, libc::F_UNLCK) };
    entry.state.store(DETACHED, Release);
    copied
}

/// Replaces the map at `start` by private pages holding the same bytes, in one step.
#[allow(unsafe_code)]
fn copy_in_place(start: usize, len: usize) -> bool {
    let page = PAGE.load(Relaxed);
    let span = len.div_ceil(page) * page;
    // SAFETY: `start..start + len` is a live read-only map of ours (the slot's owner waits
    // for COPYING to end before unmapping), and the file under it is whole: the other
    // side's truncate or open waits until we give the lease up. The fresh anonymous pages
    // are ours until mremap moves them over the map, which replaces it atomically.
    unsafe {
        let fresh = libc::mmap(
            std::ptr::null_mut(),
            span,
            libc::PROT_READ | libc::PROT_WRITE,
            libc::MAP_PRIVATE | libc::MAP_ANONYMOUS,
            -1,
            0,
        );
        if fresh == libc::MAP_FAILED {
            return false;
        }
        std::ptr::copy_nonoverlapping(start as *const u8, fresh.cast::<u8>(), len);
        libc::mprotect(fresh, span, libc::PROT_READ);
        let moved = libc::mremap(
            fresh,
            span,
            span,
            libc::MREMAP_MAYMOVE | libc::MREMAP_FIXED,
            start as *mut libc::c_void,
        );
        if moved == libc::MAP_FAILED {
            libc::munmap(fresh, span);
            return false;
        }
    }
    true
}

/// In a forked child: the inherited leases signal the parent, so each live map takes a
/// lease of its own on a fresh open of the same file, or moves to private memory.
#[allow(unsafe_code)]
extern "C" fn in_forked_child() {
    for (slot, entry) in TABLE.iter().enumerate() {
        if entry.state.load(Acquire) != LIVE {
            continue;
        }
        let fd = entry.fd.load(Acquire);
        let mut path = *b"/proc/self/fd/\0\0\0\0\0\0\0\0\0\0\0\0";
        write_decimal(&mut path[14..], fd);
        // SAFETY: a NUL-terminated path; open and fcntl are async-signal-safe, as code
        // after fork must be.
        let fresh = unsafe { libc::open(path.as_ptr().cast(), libc::O_RDONLY | libc::O_CLOEXEC) };
        if fresh >= 0 && lease_fd(fresh) {
            entry.fd.store(fresh, Release);
            mark_own_fd(slot);
            continue;
        }
        if fresh >= 0 {
            // SAFETY: closing the descriptor just opened.
            unsafe { libc::close(fresh) };
        }
        let _ = detach(slot);
    }
}

/// Slots whose descriptor this process opened itself (in a forked child), so the owner's
/// drop closes it. One bit per slot, read by [`Lease::drop`] through [`owns_fd`].
static OWN_FD: [AtomicU8; SLOTS] = [const { AtomicU8::new(0) }; SLOTS];

fn mark_own_fd(slot: usize) {
    OWN_FD[slot].store(1, Release);
}

/// Whether the slot's descriptor was opened by this process's fork hook (and is closed
/// with the lease).
fn owns_fd(slot: usize) -> bool {
    OWN_FD[slot].swap(0, AcqRel) == 1
}

/// Writes `value` (non-negative) in decimal at the start of `out`, NUL after it.
fn write_decimal(out: &mut [u8], value: i32) {
    let mut digits = [0u8; 11];
    let mut n = u32::try_from(value).unwrap_or(0);
    let mut count = 0;
    loop {
        digits[count] = b'0' + (n % 10) as u8;
        count += 1;
        n /= 10;
        if n == 0 {
            break;
        }
    }
    for (i, digit) in digits[..count].iter().rev().enumerate() {
        out[i] = *digit;
    }
    out[count] = 0;
}
