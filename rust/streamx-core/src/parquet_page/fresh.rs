//! Memory about to be filled, faulted in by one `madvise` call instead of one page fault
//! per 4 KiB as it is written: a random `dataset[i]` decodes each row group it meets into
//! fresh memory, and those faults cost as much as the decode itself on the machines measured.

/// Below this many bytes the call costs more than the faults it saves.
const MIN_BYTES: usize = 64 << 10;
const PAGE: usize = 4096;

/// Faults in the whole pages of `v`'s spare capacity (writable, as a write would), at most
/// `limit` bytes of it, so filling it takes no page fault. `limit`: what the input can
/// really fill (a size read from a header is not trusted to touch memory). Best effort: a
/// kernel without `MADV_POPULATE_WRITE` (before Linux 5.14) or any failure leaves the pages
/// to fault as they are written.
pub(super) fn populate<T>(v: &mut Vec<T>, limit: usize) {
    let spare = v.spare_capacity_mut();
    let bytes = std::mem::size_of_val(spare).min(limit);
    let start = spare.as_mut_ptr() as usize;
    let (first, end) = (start.next_multiple_of(PAGE), (start + bytes) / PAGE * PAGE);
    if end <= first || end - first < MIN_BYTES {
        return;
    }
    advise(first, end - first);
}

#[cfg(target_os = "linux")]
fn advise(at: usize, length: usize) {
    // SAFETY: `[at, at + length)` lies inside a live allocation this thread holds mutably
    // (the caller's vector), and MADV_POPULATE_WRITE only maps its pages: it changes no
    // byte the program can see, frees nothing and moves nothing.
    #[allow(unsafe_code)]
    let _ = unsafe { libc::madvise(at as *mut libc::c_void, length, libc::MADV_POPULATE_WRITE) };
}

#[cfg(not(target_os = "linux"))]
fn advise(_at: usize, _length: usize) {}
