//! The short page of an answer a GET declined (a `503`'s, a `404`'s), read whole so that
//! the connection may carry the next request: a new connection's set-up (TCP, and TLS over
//! it) costs the next request's time, and under a request pace its spacing. Its header
//! fields are kept for the caller (a throttled answer's `Retry-After`), also when the page
//! is cut short. A page that stalls is given up after [`PAGE_WAIT`], not the GET's whole
//! deadline: the status and its fields are then the answer, and the retry need not wait. A
//! page that is not announced, chunked or over [`MOST_PAGE_BYTES`] is left unread, and the
//! connection is then not reused. The plain and the TLS GETs read it through the same
//! [`AnswerSource`].

use std::time::{Duration, Instant};

use super::{short_page, AnswerSource, Head, MAX_HEADERS};

/// The longest page read (as many bytes as the Python path reads of an error's page).
pub const MOST_PAGE_BYTES: u64 = 64 << 10;

/// The longest a declined answer's page is waited for once its head is read: a short page
/// sent at once comes in a round trip or two, and a page that stalls must not hold its GET
/// until the read deadline (the status alone is then the answer).
pub(crate) const PAGE_WAIT: Duration = Duration::from_secs(2);

/// A declined answer's page, read whole (or its head's fields alone, when it was cut
/// short: then `body` is empty and `reusable` false).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DeclinedPage {
    /// `(name, value)` pairs in the order sent, as [`header_fields`] gives them.
    pub fields: Vec<(String, String)>,
    pub body: Vec<u8>,
    /// Whether the connection may carry another request.
    pub reusable: bool,
}

/// Reads the page of the declined answer `head` from `source` when it is short (`buffer`
/// holds the head and the bytes read along with it); `None` leaves it unread. A page cut
/// short (the deadline or [`PAGE_WAIT`], the connection ending, a socket or TLS error)
/// keeps the head's fields with an empty body, and the connection is not reused.
pub(crate) fn read_page(
    source: &mut impl AnswerSource,
    head: &Head,
    mut buffer: Vec<u8>,
    deadline: Instant,
) -> Option<DeclinedPage> {
    let length = short_page(head, MOST_PAGE_BYTES)? as usize;
    let fields = header_fields(&buffer[..head.length]);
    let mut body = buffer.split_off(head.length);
    let more_than_the_page = body.len() > length;
    let have = body.len().min(length);
    body.resize(length, 0);
    let deadline = deadline.min(Instant::now() + PAGE_WAIT);
    if !fill(source, &mut body[have..], deadline) {
        // Cut short or stalled: the head's fields are the answer (its `Retry-After`).
        return Some(DeclinedPage {
            fields,
            body: Vec::new(),
            reusable: false,
        });
    }
    let reusable = head.keep_alive && !more_than_the_page && source.nothing_pending();
    Some(DeclinedPage {
        fields,
        body,
        reusable,
    })
}

/// Fills `buffer` with the answer's next bytes; false when the connection ended, the
/// deadline passed or a read failed first.
fn fill(source: &mut impl AnswerSource, buffer: &mut [u8], deadline: Instant) -> bool {
    let mut done = 0;
    while done < buffer.len() {
        match source.read_some(&mut buffer[done..], deadline) {
            Ok(Some(got)) if got > 0 => done += got,
            _ => return false,
        }
    }
    true
}

/// The header fields of a head that [`super::parse_head`] has accepted.
pub(crate) fn header_fields(head: &[u8]) -> Vec<(String, String)> {
    let mut headers = [httparse::EMPTY_HEADER; MAX_HEADERS];
    let mut response = httparse::Response::new(&mut headers);
    if response.parse(head).is_err() {
        return Vec::new(); // unreachable: the same bytes parsed once already
    }
    response.headers.iter().map(field).collect()
}

/// A header's name and its value decoded as Latin-1 (as Python's `http.client` does),
/// trimmed.
fn field(header: &httparse::Header<'_>) -> (String, String) {
    let value: String = header.value.iter().map(|&byte| char::from(byte)).collect();
    (header.name.to_owned(), value.trim().to_owned())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fields_keep_order_repeats_and_latin1() {
        let head = b"HTTP/1.1 200 OK\r\nContent-Length: 12\r\nETag: \"caf\xe9\"\r\n\
                     x-a: 1\r\nX-A:  2 \r\n\r\n";
        assert_eq!(
            header_fields(head),
            vec![
                ("Content-Length".to_owned(), "12".to_owned()),
                ("ETag".to_owned(), "\"caf\u{e9}\"".to_owned()),
                ("x-a".to_owned(), "1".to_owned()),
                ("X-A".to_owned(), "2".to_owned()),
            ]
        );
    }
}
