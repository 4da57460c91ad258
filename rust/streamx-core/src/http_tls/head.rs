//! One `HEAD` over a kept TLS session: the answer's status and header fields, so that an
//! object's size and version are asked on the sessions its GETs use (a `HEAD` on another
//! connection would cost a TCP and TLS handshake of its own).
//!
//! A `HEAD` answer has no body whatever its `Content-Length` says; bytes after its head
//! answer nothing asked, so the session is then not reused. Every wait is bounded by the
//! deadline, as the GETs' are.

use std::io;
use std::time::Instant;

use super::{Answer, TlsStream};
use crate::http_range::{header_fields, AnswerSource};

/// A `HEAD`'s answer: its status and header fields, in the order sent.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct HeadAnswer {
    pub status: u16,
    /// `(name, value)` pairs, values decoded as Latin-1 (as Python's `http.client` does)
    /// and trimmed.
    pub fields: Vec<(String, String)>,
    /// Whether the session may carry another request.
    pub reusable: bool,
}

/// How a `HEAD` ended, when it did not fail with an I/O or protocol error.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum HeadOutcome {
    Answered(HeadAnswer),
    /// The connection ended before any byte of an answer: a kept-alive session the server
    /// has since closed.
    Stale,
    /// The deadline passed before the answer's head was complete.
    TimedOut,
}

impl TlsStream {
    /// Sends `request` (a whole `HEAD` request head) and reads its answer's head.
    ///
    /// # Errors
    /// An answer that is not HTTP (`InvalidData`), a connection that ends mid-head
    /// (`UnexpectedEof`), and socket or TLS failures.
    pub fn head(&mut self, request: &[u8], deadline: Instant) -> io::Result<HeadOutcome> {
        let (head, buffer) = match self.exchange(request, deadline)? {
            Answer::Head(head, buffer) => (head, buffer),
            Answer::Stale => return Ok(HeadOutcome::Stale),
            Answer::TimedOut => return Ok(HeadOutcome::TimedOut),
        };
        let fields = header_fields(&buffer[..head.length]);
        let reusable = head.keep_alive && buffer.len() == head.length && self.nothing_pending();
        Ok(HeadOutcome::Answered(HeadAnswer {
            status: head.status,
            fields,
            reusable,
        }))
    }
}

/// An answer's `ETag` and `Last-Modified` (the first of each), for the caller to pin the
/// object's version across the GETs of its parts.
pub type Version = (Option<String>, Option<String>);

/// The version a head that `http_range::parse_head` has accepted announces.
pub(super) fn version_of(head: &[u8]) -> Version {
    let fields = header_fields(head);
    let first = |name: &str| {
        fields
            .iter()
            .find(|(field, _)| field.eq_ignore_ascii_case(name))
            .map(|(_, value)| value.clone())
    };
    (first("etag"), first("last-modified"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_version_is_the_first_etag_and_last_modified() {
        let head = b"HTTP/1.1 206 Partial\r\netag: \"v1\"\r\nETag: \"v2\"\r\n\
                     Last-Modified: Sun, 06 Dec 2026 10:00:00 GMT\r\n\r\n";
        assert_eq!(
            version_of(head),
            (
                Some("\"v1\"".to_owned()),
                Some("Sun, 06 Dec 2026 10:00:00 GMT".to_owned())
            )
        );
        assert_eq!(version_of(b"HTTP/1.1 200 OK\r\n\r\n"), (None, None));
    }
}
