//! Keeping the heap that batches of large samples free, instead of handing it back to the
//! kernel after every batch.
//!
//! glibc trims the top of its heap as soon as more than 128 KiB there is free, and raises
//! that threshold only after it frees a block it had mmapped (one of 128 KiB or more). A
//! batch of `bytes` samples just under 128 KiB (100 KB images) is allocated on the heap and
//! freed as a whole, so every batch grows the heap, faults its pages in, and trims it again:
//! a cold epoch of such samples spent a third of its time there. This sets, once, the
//! thresholds glibc's own adaptive rule reaches after freeing its largest mmapped block:
//! blocks under 32 MiB come from the heap, and up to 64 MiB of free heap top is kept.

use std::sync::OnceLock;

/// The variable that turns this off (`0`), for processes that tune their allocator.
pub const ENV: &str = "STREAMX_KEEP_FREED_HEAP";

/// Blocks at least this large are mmapped (glibc's largest adaptive value on 64-bit).
pub const MMAP_THRESHOLD: usize = 32 << 20;
/// Free heap top kept rather than trimmed (glibc's adaptive rule: twice the above).
pub const TRIM_THRESHOLD: usize = 64 << 20;

/// A decoded sample at least this large is one that loaders gather into batches large
/// enough to be trimmed after every batch.
pub const LARGE_SAMPLE: usize = 64 << 10;
/// A gathered batch at least this large would be.
pub const LARGE_BATCH: usize = 1 << 20;

static IN_FORCE: OnceLock<bool> = OnceLock::new();

/// Applies the thresholds once per process unless `STREAMX_KEEP_FREED_HEAP=0`; a no-op
/// where the allocator is not glibc's. Returns whether they are in force.
pub fn keep_freed_heap() -> bool {
    *IN_FORCE.get_or_init(|| std::env::var(ENV).map_or(true, |v| v.trim() != "0") && apply())
}

#[cfg(all(target_os = "linux", target_env = "gnu"))]
#[allow(unsafe_code)]
fn apply() -> bool {
    // SAFETY: mallopt only sets allocator parameters; any value is accepted or refused (0).
    unsafe {
        libc::mallopt(libc::M_MMAP_THRESHOLD, MMAP_THRESHOLD as libc::c_int) == 1
            && libc::mallopt(libc::M_TRIM_THRESHOLD, TRIM_THRESHOLD as libc::c_int) == 1
    }
}

#[cfg(not(all(target_os = "linux", target_env = "gnu")))]
fn apply() -> bool {
    false
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn applies_once_and_keeps_reporting_it() {
        let first = keep_freed_heap();
        let expected = cfg!(all(target_os = "linux", target_env = "gnu"))
            && std::env::var(ENV).map_or(true, |v| v.trim() != "0");
        assert_eq!(first, expected);
        assert_eq!(keep_freed_heap(), first);
    }
}
