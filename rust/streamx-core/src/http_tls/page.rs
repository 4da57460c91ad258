//! The short page of an answer a GET declined (a `503`'s, a `404`'s), read whole so that
//! the session may carry the next request: a new TLS connection's set-up costs the next
//! request's time, and under a request pace its spacing. Its header fields are kept for
//! the caller (a throttled answer's `Retry-After`). A page that is not announced, chunked
//! or over [`MOST_PAGE_BYTES`] is left unread, and the session is then not reused.

use std::io;
use std::time::Instant;

use super::{head, Ended, TlsStream};
use crate::http_range::{self, Head};

/// The longest page read (as many bytes as the Python path reads of an error's page).
pub const MOST_PAGE_BYTES: u64 = 64 << 10;

/// A declined answer's page, read whole.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DeclinedPage {
    /// `(name, value)` pairs in the order sent, as [`HeadAnswer`](super::HeadAnswer)'s.
    pub fields: Vec<(String, String)>,
    pub body: Vec<u8>,
    /// Whether the session may carry another request.
    pub reusable: bool,
}

impl TlsStream {
    /// Reads the page of the declined answer `head` (`buffer` holds the head and the bytes
    /// read along with it) when it is short; kept for [`TlsStream::declined_page`]. A page
    /// cut short (the deadline, the connection ending, a socket or TLS error) is dropped:
    /// the status alone is the answer, and the session is not reused.
    pub(super) fn read_page(&mut self, head: &Head, mut buffer: Vec<u8>, deadline: Instant) {
        let Some(length) = http_range::short_page(head, MOST_PAGE_BYTES) else {
            return;
        };
        let length = length as usize;
        let fields = head::header_fields(&buffer[..head.length]);
        let mut body = buffer.split_off(head.length);
        let more_than_the_page = body.len() > length;
        let have = body.len().min(length);
        body.resize(length, 0);
        if !matches!(self.fill(&mut body[have..], deadline), Ok(true)) {
            return;
        }
        let reusable = head.keep_alive && !more_than_the_page && self.nothing_pending();
        self.page = Some(DeclinedPage {
            fields,
            body,
            reusable,
        });
    }

    /// The page of the last GET's answer when it was declined and its page read whole.
    pub fn declined_page(&self) -> Option<&DeclinedPage> {
        self.page.as_ref()
    }

    /// Fills `buffer` with the answer's next bytes; false when the stream ended or the
    /// deadline passed first.
    fn fill(&mut self, buffer: &mut [u8], deadline: Instant) -> io::Result<bool> {
        let mut done = 0;
        while done < buffer.len() {
            let (filled, ended) = self.gather(&mut buffer[done..], deadline)?;
            done += filled;
            match ended {
                Some(Ended::Closed | Ended::TimedOut) => return Ok(done == buffer.len()),
                None => {}
            }
        }
        Ok(true)
    }
}
