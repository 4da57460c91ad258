//! Surviving a mapped file that shrinks under us.
//!
//! A read-only map of a file that someone truncates (or rewrites through a truncate, as
//! `cp`, `rsync --inplace` and mosaicml-streaming's writer do) raises `SIGBUS` on the first
//! access past the new end, which kills the process. Every map streamx reads through is
//! registered here; one process-wide `SIGBUS` handler looks the faulting address up, replaces
//! the whole mapping with zero pages (`mmap(MAP_FIXED | MAP_ANONYMOUS)`, a bare system call)
//! and marks it *poisoned*, so the faulting read resumes and sees zeros. Every reader checks
//! [`Guard::poisoned`] after copying or decoding out of a map and raises an error naming the
//! file instead of returning those zeros. Faults outside registered ranges go to whatever
//! handler was installed before ours (default: the process dies as it would have).
//!
//! The table is a fixed array of atomics so the handler takes no lock and allocates nothing.
//! The cache ledger's shared read-write map is registered too: its zero pages then take
//! writes, and the ledger reports the truncation as an error at its next operation.
//!
//! Limits: a map registered when all [`SLOTS`] are taken is unprotected (as before); bytes
//! past the new end but inside the last page still mapped read as zeros without a fault (the
//! kernel zero-fills a partial page), so a truncation is noticed from the next page on.

use std::sync::atomic::AtomicBool;
use std::sync::atomic::AtomicUsize;
use std::sync::atomic::Ordering::{AcqRel, Acquire, Relaxed, Release};
use std::sync::{Once, OnceLock};

/// Mappings one process can have protected at once.
pub const SLOTS: usize = 1 << 14;

struct Slot {
    /// First byte of the mapping; 0 when the slot is free.
    start: AtomicUsize,
    /// Length in bytes; 0 while the slot is being claimed or released.
    len: AtomicUsize,
    poisoned: AtomicBool,
    /// A shared read-write mapping (the cache ledger): its zero pages must take writes too.
    writable: AtomicBool,
}

#[allow(clippy::declare_interior_mutable_const)] // a template for the array, never shared
const FREE: Slot = Slot {
    start: AtomicUsize::new(0),
    len: AtomicUsize::new(0),
    poisoned: AtomicBool::new(false),
    writable: AtomicBool::new(false),
};
static TABLE: [Slot; SLOTS] = [FREE; SLOTS];
/// The `SIGBUS` disposition found when ours was installed.
static PREVIOUS: OnceLock<Previous> = OnceLock::new();
static PAGE: AtomicUsize = AtomicUsize::new(4096);

struct Previous(libc::sigaction);
// SAFETY: a plain C struct of integers and function addresses, written once before use.
#[allow(unsafe_code)]
unsafe impl Sync for Previous {}
#[allow(unsafe_code)]
unsafe impl Send for Previous {}

/// A registered mapping. Drop it *before* unmapping, so no later mapping at the same address
/// is taken for this one.
#[derive(Debug)]
pub struct Guard {
    slot: usize,
}

impl Guard {
    /// Protects `len` bytes mapped read-only at `start`; `None` when the table is full.
    pub fn register(start: *const u8, len: usize) -> Option<Guard> {
        Self::register_with(start, len, false)
    }

    /// Like [`Guard::register`] for a mapping also written through: once its file shrinks,
    /// reads see zeros and writes land in private zero pages (lost, never a fault).
    pub fn register_writable(start: *const u8, len: usize) -> Option<Guard> {
        Self::register_with(start, len, true)
    }

    fn register_with(start: *const u8, len: usize, writable: bool) -> Option<Guard> {
        install();
        let start = start as usize;
        if start == 0 || len == 0 {
            return None;
        }
        let hint = start / PAGE.load(Relaxed);
        (0..SLOTS).map(|i| (hint + i) % SLOTS).find_map(|slot| {
            let entry = &TABLE[slot];
            entry
                .start
                .compare_exchange(0, start, AcqRel, Relaxed)
                .ok()?;
            entry.poisoned.store(false, Relaxed);
            entry.writable.store(writable, Relaxed);
            entry.len.store(len, Release);
            Some(Guard { slot })
        })
    }

    /// Whether the file shrank under this mapping (its bytes are gone, reads give zeros).
    pub fn poisoned(&self) -> bool {
        TABLE[self.slot].poisoned.load(Acquire)
    }
}

impl Drop for Guard {
    fn drop(&mut self) {
        let entry = &TABLE[self.slot];
        entry.len.store(0, Release);
        entry.start.store(0, Release);
    }
}

/// Installs the handler once per process (a forked child inherits it and the table).
fn install() {
    static INSTALLED: Once = Once::new();
    INSTALLED.call_once(|| {
        // SAFETY: sysconf and sigaction get valid arguments. The previous disposition is
        // stored before ours is installed, so the handler always finds it.
        #[allow(unsafe_code)]
        unsafe {
            if let Ok(page) = usize::try_from(libc::sysconf(libc::_SC_PAGESIZE)) {
                PAGE.store(page.max(1), Relaxed);
            }
            let mut old: libc::sigaction = std::mem::zeroed();
            libc::sigaction(libc::SIGBUS, std::ptr::null(), &raw mut old);
            let _ = PREVIOUS.set(Previous(old));
            let mut new: libc::sigaction = std::mem::zeroed();
            new.sa_sigaction = on_sigbus as *const () as usize;
            new.sa_flags = libc::SA_SIGINFO | libc::SA_ONSTACK;
            libc::sigemptyset(&raw mut new.sa_mask);
            libc::sigaction(libc::SIGBUS, &raw const new, std::ptr::null_mut());
        }
    });
}

fn find(addr: usize) -> Option<&'static Slot> {
    TABLE.iter().find(|slot| {
        let start = slot.start.load(Acquire);
        start != 0 && addr >= start && addr - start < slot.len.load(Acquire)
    })
}

#[allow(unsafe_code)]
extern "C" fn on_sigbus(sig: libc::c_int, info: *mut libc::siginfo_t, ctx: *mut libc::c_void) {
    // SAFETY: the kernel passes a valid siginfo for SA_SIGINFO handlers.
    let addr = unsafe { (*info).si_addr() } as usize;
    if let Some(slot) = find(addr) {
        let page = PAGE.load(Relaxed);
        let len = slot.len.load(Acquire).div_ceil(page) * page;
        let start = slot.start.load(Acquire) as *mut libc::c_void;
        let prot = if slot.writable.load(Acquire) {
            libc::PROT_READ | libc::PROT_WRITE
        } else {
            libc::PROT_READ
        };
        // SAFETY: the range is a whole mapping of ours (page-aligned start, as mmap returns);
        // replacing it keeps it mapped until its owner unmaps it.
        let zeros = unsafe {
            libc::mmap(
                start,
                len,
                prot,
                libc::MAP_PRIVATE | libc::MAP_ANONYMOUS | libc::MAP_FIXED,
                -1,
                0,
            )
        };
        if zeros != libc::MAP_FAILED {
            slot.poisoned.store(true, Release);
            return; // the faulting read runs again, on zeros
        }
    }
    chain(sig, info, ctx);
}

/// Hands a fault that is not ours to the previous disposition.
#[allow(unsafe_code)]
fn chain(sig: libc::c_int, info: *mut libc::siginfo_t, ctx: *mut libc::c_void) {
    let Some(Previous(old)) = PREVIOUS.get() else {
        return;
    };
    let handler = old.sa_sigaction;
    if handler == libc::SIG_DFL || handler == libc::SIG_IGN {
        // SAFETY: restoring a disposition read from the kernel; returning re-runs the
        // faulting access, which now gets the default action (the process dies).
        unsafe { libc::sigaction(sig, old, std::ptr::null_mut()) };
        return;
    }
    // SAFETY: the previous handler was installed for this signal with these flags.
    unsafe {
        if old.sa_flags & libc::SA_SIGINFO != 0 {
            let f: extern "C" fn(libc::c_int, *mut libc::siginfo_t, *mut libc::c_void) =
                std::mem::transmute(handler);
            f(sig, info, ctx);
        } else {
            let f: extern "C" fn(libc::c_int) = std::mem::transmute(handler);
            f(sig);
        }
    }
}
