//! A row group's column chunks read from an open file into a buffer the caller reuses: the
//! buffer's pages stay the process's own from one row group to the next, where a fresh
//! buffer per row group costs a page fault (and the kernel's zeroing) per 4 KiB of it.

use std::fs::File;
use std::io::{self, ErrorKind};
use std::mem::ManuallyDrop;
use std::os::fd::{FromRawFd, RawFd};
use std::os::unix::fs::FileExt;

/// The ranges `spans` (`(offset, length)`) of the open file `fd`, one after the other, into
/// `buf` (its length set to their total). `Ok(Some((offset, length, read)))`: the first
/// range the file ended in, and the bytes of it read (the caller checks first whether the
/// file changed under it). `Err`: `OutOfMemory` for more than `MAX_PAGE_BYTES` in all, or
/// the read's own error.
///
/// `fd` is borrowed: the caller keeps it open for the call and closes it.
pub fn read_spans(
    fd: RawFd,
    spans: &[(u64, usize)],
    buf: &mut Vec<u8>,
) -> io::Result<Option<(u64, usize, usize)>> {
    let total = spans
        .iter()
        .try_fold(0usize, |sum, (_, length)| sum.checked_add(*length))
        .filter(|total| *total <= super::MAX_PAGE_BYTES)
        .ok_or_else(|| {
            failed(
                ErrorKind::OutOfMemory,
                "column chunks of more than 1 GiB".into(),
            )
        })?;
    // What the last read left is overwritten, not zeroed first (a memset of the whole
    // row group per read): only bytes past it are new. A short read's stale tail is never
    // decoded (the caller raises).
    buf.truncate(total);
    buf.try_reserve(total - buf.len()).map_err(|_| {
        failed(
            ErrorKind::OutOfMemory,
            format!("{total} bytes do not fit in memory"),
        )
    })?;
    // A buffer that held a larger row group already: its pages are not fresh.
    buf.resize(total, 0);
    if fd < 0 {
        return Err(failed(ErrorKind::InvalidInput, format!("descriptor {fd}")));
    }
    // SAFETY: `fd` is open for the duration of the call (the caller's promise), and the
    // `File` is never dropped, so it is never closed here.
    #[allow(unsafe_code)]
    let file = ManuallyDrop::new(unsafe { File::from_raw_fd(fd) });
    let mut at = 0usize;
    for &(offset, length) in spans {
        let part = &mut buf[at..at + length];
        let mut filled = 0usize;
        while filled < length {
            match file.read_at(&mut part[filled..], offset + filled as u64) {
                Ok(0) => return Ok(Some((offset, length, filled))),
                Ok(n) => filled += n,
                Err(e) if e.kind() == ErrorKind::Interrupted => {}
                Err(e) => return Err(e),
            }
        }
        at += length;
    }
    Ok(None)
}

fn failed(kind: ErrorKind, why: String) -> io::Error {
    io::Error::new(kind, why)
}
