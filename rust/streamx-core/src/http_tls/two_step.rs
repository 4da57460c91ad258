//! A ranged GET in two steps: the answer's head (its version then known), then its body.
//! A file's parts wait for the version the first part's answer pins (`If-Match` on theirs);
//! with the head and body read in one call they waited for the lead's whole body, which
//! serialised a file's parts behind its first (a second at 40 MB/s for a 32 MiB part).

use std::io;
use std::os::fd::RawFd;

use super::{Answer, TlsStream};
use crate::http_range::{self, RangeGet, RangeOutcome};

/// An accepted answer whose body is still to be moved.
pub(super) struct Pending {
    early: Vec<u8>,
    offset: u64,
    length: u64,
    total: Option<u64>,
    keep_alive: bool,
    deadline: std::time::Instant,
}

impl TlsStream {
    /// Sends a ranged GET and reads its answer's head: `Ok(total)` when it is accepted (its
    /// version is then in [`TlsStream::version`], and its body waits for
    /// [`TlsStream::pending_body`]), else the outcome that ends the GET, as
    /// [`TlsStream::ranged_get`]'s.
    pub fn ranged_head(
        &mut self,
        get: &RangeGet<'_>,
    ) -> io::Result<Result<Option<u64>, RangeOutcome>> {
        let (head, mut buffer) = match self.exchange(get.request, get.deadline)? {
            Answer::Head(head, buffer) => (head, buffer),
            Answer::Stale => return Ok(Err(RangeOutcome::Stale)),
            Answer::TimedOut => return Ok(Err(RangeOutcome::TimedOut)),
        };
        let Some(total) = http_range::accepted_total(&head, get) else {
            let status = head.status;
            self.read_page(&head, buffer, get.deadline);
            return Ok(Err(RangeOutcome::Declined { status }));
        };
        self.version = super::head::version_of(&buffer[..head.length]);
        self.pending = Some(Pending {
            early: buffer.split_off(head.length),
            offset: get.offset,
            length: get.length,
            total,
            keep_alive: head.keep_alive,
            deadline: get.deadline,
        });
        Ok(Ok(total))
    }

    /// The bytes the pending body has (None when no answer's body is pending).
    pub fn pending_length(&self) -> Option<u64> {
        self.pending.as_ref().map(|pending| pending.length)
    }

    /// Moves the body of the answer [`TlsStream::ranged_head`] accepted into `file`, within
    /// that GET's deadline; the outcome as [`TlsStream::ranged_get`]'s.
    ///
    /// # Errors
    /// `InvalidInput` when no body is pending; socket, file and TLS failures.
    pub fn pending_body(&mut self, file: RawFd) -> io::Result<RangeOutcome> {
        let Some(pending) = self.pending.take() else {
            return Err(io::Error::new(
                io::ErrorKind::InvalidInput,
                "no answer's body is pending on this TLS session",
            ));
        };
        let (end, reusable) = self.body(
            file,
            &pending.early,
            pending.offset,
            pending.length,
            pending.deadline,
        )?;
        Ok(RangeOutcome::Moved {
            end,
            total: pending.total,
            reusable: reusable && pending.keep_alive,
        })
    }
}
