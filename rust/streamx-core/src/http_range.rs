//! One ranged HTTP/1.1 GET on a plain, kept-alive TCP connection: the request is sent, the
//! answer's head read and checked, and the body moved into a file at its offset, all without
//! the caller's runtime (for Python: without the GIL, and without `http.client` parsing a
//! head per part, which cost more CPU than the part's bytes).
//!
//! Only the answer a healthy server gives is handled here: `206` for exactly the range asked
//! for, with a fixed length. Anything else (an error status, the whole object, another range,
//! a chunked body, an object of another size) is *declined*, and the caller asks again by its
//! general path, which reads and reports it, unless the status says all (a `503`). Of a
//! declined answer only an error's short page is read ([`DeclinedPage`]), so that the
//! connection serves on and its `Retry-After` is kept. Every wait is bounded by the deadline.

use std::io;
use std::os::fd::RawFd;
use std::time::Instant;

use crate::netio::{self, BodyEnd};

mod page;
pub(crate) use page::{header_fields, read_page};
pub use page::{DeclinedPage, MOST_PAGE_BYTES};

/// The longest answer head read. Real heads are well under 2 KiB; past this the answer is
/// refused rather than buffered without bound.
pub const MAX_HEAD_BYTES: usize = 64 << 10;
const HEAD_READ_BYTES: usize = 16 << 10;
/// The most header fields an answer may have. Stores send more than one would think (S3's
/// `x-amz-meta-*`, a CDN's own), and this is as many as Python's `http.client` reads (and so
/// boto3 and requests): the routes it answers and these agree on which answers are sound,
/// and a hostile server still cannot make a parse hold more.
pub(crate) const MAX_HEADERS: usize = 100;
/// The checksum headers the Python path verifies on a whole GET.
const CHECKSUMS: [&str; 3] = [
    "x-amz-checksum-crc32",
    "x-amz-checksum-sha1",
    "x-amz-checksum-sha256",
];

/// One ranged GET: the request and where its body goes.
pub struct RangeGet<'a> {
    /// The whole request head, as sent (request line, headers, blank line).
    pub request: &'a [u8],
    /// The first byte asked for; the body lands at this offset of the file.
    pub offset: u64,
    /// Bytes asked for (at least one).
    pub length: u64,
    /// The object's size, when known: an answer giving another one is declined.
    pub expected_total: Option<u64>,
    pub deadline: Instant,
}

/// How a ranged GET ended, when it did not fail with an I/O error.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RangeOutcome {
    /// A `206` for exactly the range: its body was moved as far as `end` says. `total` is
    /// the object's size (`None` when the server gave `*`); `reusable` says whether the
    /// connection may carry another request.
    Moved {
        end: BodyEnd,
        total: Option<u64>,
        reusable: bool,
    },
    /// Any other answer, with its status. Its body was not read, but for an error's short
    /// page (a [`DeclinedPage`], which says whether the connection may serve on); otherwise
    /// the connection must be closed.
    Declined { status: u16 },
    /// The connection ended before any byte of an answer: a kept-alive connection the
    /// server has since closed.
    Stale,
    /// The deadline passed before the answer's head was complete.
    TimedOut,
}

/// Sends `get.request` on the connected non-blocking socket `sock` and handles the answer;
/// a declined answer's page when it was short enough to read whole.
pub fn ranged_get(
    sock: RawFd,
    file: RawFd,
    get: &RangeGet<'_>,
) -> io::Result<(RangeOutcome, Option<DeclinedPage>)> {
    match send_all(sock, get.request, get.deadline) {
        Ok(true) => {}
        Ok(false) => return Ok((RangeOutcome::TimedOut, None)),
        Err(err) if is_reset(&err) => return Ok((RangeOutcome::Stale, None)),
        Err(err) => return Err(err),
    }
    let mut buffer = Vec::with_capacity(HEAD_READ_BYTES);
    let Some(head) = read_head(&mut PlainSocket(sock), &mut buffer, get.deadline)? else {
        let outcome = if buffer.is_empty() {
            RangeOutcome::Stale
        } else {
            RangeOutcome::TimedOut
        };
        return Ok((outcome, None));
    };
    let Some(total) = accepted_total(&head, get) else {
        let status = head.status;
        let page = read_page(&mut PlainSocket(sock), &head, buffer, get.deadline);
        return Ok((RangeOutcome::Declined { status }, page));
    };
    let early = &buffer[head.length..];
    let taken = early.len().min(get.length as usize);
    netio::write_all_at(file, &early[..taken], get.offset)?;
    let rest = get.length - taken as u64;
    let end = if rest == 0 {
        BodyEnd::Complete
    } else {
        match netio::socket_to_file(sock, file, get.offset + taken as u64, rest, get.deadline)? {
            BodyEnd::Closed(done) => BodyEnd::Closed(done + taken as u64),
            BodyEnd::TimedOut(done) => BodyEnd::TimedOut(done + taken as u64),
            BodyEnd::Complete => BodyEnd::Complete,
        }
    };
    let reusable = end == BodyEnd::Complete
        && head.keep_alive
        && early.len() <= get.length as usize
        && nothing_pending(sock);
    let outcome = RangeOutcome::Moved {
        end,
        total,
        reusable,
    };
    Ok((outcome, None))
}

/// What the checks need from an answer's head.
pub(crate) struct Head {
    /// Bytes of the head, blank line included.
    pub(crate) length: usize,
    pub(crate) status: u16,
    pub(crate) keep_alive: bool,
    content_length: Announced,
    content_range: Option<String>,
    transfer_encoding: bool,
    /// A whole-object checksum the caller would verify (`x-amz-checksum-*`, not composite).
    checksum: bool,
}

/// The `Content-Length` of a head.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Announced {
    Absent,
    Length(u64),
    /// Unreadable, or given twice with different values.
    Invalid,
}

/// Where an answer's bytes come from: a plain socket, or a TLS session over one.
pub(crate) trait AnswerSource {
    /// Reads some of the answer into `buf`: `Ok(Some(0))` when the connection ended,
    /// `Ok(None)` once the deadline passes.
    fn read_some(&mut self, buf: &mut [u8], deadline: Instant) -> io::Result<Option<usize>>;

    /// Whether nothing follows the answer read so far (nor did the server close the
    /// connection): the connection may carry another request.
    fn nothing_pending(&mut self) -> bool;
}

/// A plain, non-blocking socket.
struct PlainSocket(RawFd);

impl AnswerSource for PlainSocket {
    fn read_some(&mut self, buf: &mut [u8], deadline: Instant) -> io::Result<Option<usize>> {
        loop {
            if !netio::wait_for(self.0, libc::POLLIN, deadline)? {
                return Ok(None);
            }
            match netio::recv_now(self.0, buf) {
                Ok(got) => return Ok(Some(got)),
                Err(err) if matches!(err.raw_os_error(), Some(libc::EAGAIN | libc::EINTR)) => {}
                Err(err) => return Err(err),
            }
        }
    }

    fn nothing_pending(&mut self) -> bool {
        nothing_pending(self.0)
    }
}

/// Reads until the head is complete; `None` when the connection ended or the deadline
/// passed first (an empty `buffer` then means no byte of an answer came).
pub(crate) fn read_head(
    source: &mut impl AnswerSource,
    buffer: &mut Vec<u8>,
    deadline: Instant,
) -> io::Result<Option<Head>> {
    loop {
        if let Some(head) = parse_head(buffer)? {
            return Ok(Some(head));
        }
        if buffer.len() >= MAX_HEAD_BYTES {
            return Err(io::Error::new(
                io::ErrorKind::InvalidData,
                format!("the answer's head is over {MAX_HEAD_BYTES} bytes"),
            ));
        }
        let start = buffer.len();
        buffer.resize(start + HEAD_READ_BYTES.min(MAX_HEAD_BYTES - start), 0);
        let got = match source.read_some(&mut buffer[start..], deadline) {
            Ok(Some(got)) => got,
            Ok(None) => {
                buffer.truncate(start);
                return Ok(None);
            }
            Err(err) => {
                buffer.truncate(start);
                if is_reset(&err) && start == 0 {
                    return Ok(None);
                }
                return Err(err);
            }
        };
        buffer.truncate(start + got);
        if got == 0 {
            if start == 0 {
                return Ok(None);
            }
            return Err(io::Error::new(
                io::ErrorKind::UnexpectedEof,
                format!("the connection closed after {start} bytes of the answer's head"),
            ));
        }
    }
}

pub(crate) fn parse_head(buffer: &[u8]) -> io::Result<Option<Head>> {
    let mut headers = [httparse::EMPTY_HEADER; MAX_HEADERS];
    let mut response = httparse::Response::new(&mut headers);
    let length = match response.parse(buffer) {
        Ok(httparse::Status::Complete(length)) => length,
        Ok(httparse::Status::Partial) => return Ok(None),
        Err(httparse::Error::TooManyHeaders) => {
            return Err(io::Error::new(
                io::ErrorKind::InvalidData,
                format!("malformed answer head: more than {MAX_HEADERS} header fields"),
            ))
        }
        Err(err) => {
            return Err(io::Error::new(
                io::ErrorKind::InvalidData,
                format!("malformed answer head: {err}"),
            ))
        }
    };
    let mut head = Head {
        length,
        status: response.code.unwrap_or(0),
        keep_alive: response.version == Some(1),
        content_length: Announced::Absent,
        content_range: None,
        transfer_encoding: false,
        checksum: false,
    };
    for header in response.headers.iter() {
        let value = std::str::from_utf8(header.value).unwrap_or("").trim();
        if header.name.eq_ignore_ascii_case("content-length") {
            let parsed = value
                .parse::<u64>()
                .map_or(Announced::Invalid, Announced::Length);
            // Two different lengths are as bad as an unreadable one.
            head.content_length = match head.content_length {
                Announced::Absent => parsed,
                before if before == parsed => parsed,
                _ => Announced::Invalid,
            };
        } else if header.name.eq_ignore_ascii_case("content-range") {
            head.content_range = match head.content_range {
                None => Some(value.to_owned()),
                Some(_) => Some(String::new()), // more than one: matches no range
            };
        } else if header.name.eq_ignore_ascii_case("transfer-encoding") {
            head.transfer_encoding = true;
        } else if CHECKSUMS
            .iter()
            .any(|name| header.name.eq_ignore_ascii_case(name))
            && !value.is_empty()
            && !value.contains('-')
        {
            head.checksum = true;
        } else if header.name.eq_ignore_ascii_case("connection")
            && value
                .split(',')
                .any(|token| token.trim().eq_ignore_ascii_case("close"))
        {
            head.keep_alive = false;
        }
    }
    Ok(Some(head))
}

/// The object's size (`Some(None)` for `*`) when the head answers exactly the range asked
/// for with a fixed-length body; `None` declines it.
#[allow(clippy::option_option)]
pub(crate) fn accepted_total(head: &Head, get: &RangeGet<'_>) -> Option<Option<u64>> {
    if head.status != 206 || head.transfer_encoding {
        return None;
    }
    if !matches!(head.content_length, Announced::Absent)
        && head.content_length != Announced::Length(get.length)
    {
        return None;
    }
    let range = head.content_range.as_deref()?.strip_prefix("bytes ")?;
    let (span, total) = range.split_once('/')?;
    let (first, last) = span.split_once('-')?;
    if first.parse::<u64>().ok()? != get.offset
        || last.parse::<u64>().ok()? != get.offset + get.length - 1
    {
        return None;
    }
    let total = if total == "*" {
        None
    } else {
        Some(total.parse::<u64>().ok()?)
    };
    match (total, get.expected_total) {
        (Some(found), Some(expected)) if found != expected => None,
        _ => Some(total),
    }
}

/// The body's length when the head is a `200` with a fixed length, no checksum to verify,
/// of `expected` bytes (when given) and at most `most`; `None` declines it.
pub(crate) fn accepted_whole(head: &Head, expected: Option<u64>, most: Option<u64>) -> Option<u64> {
    if head.status != 200 || head.transfer_encoding || head.checksum {
        return None;
    }
    let Announced::Length(length) = head.content_length else {
        return None;
    };
    if expected.is_some_and(|expected| expected != length) || most.is_some_and(|most| length > most)
    {
        return None;
    }
    Some(length)
}

/// The length of an error answer's page (a status of 300 or more) when it is announced,
/// not chunked and at most `most` bytes: a page short enough to read whole, so that the
/// connection may serve on; `None` leaves it unread.
pub(crate) fn short_page(head: &Head, most: u64) -> Option<u64> {
    if head.status < 300 || head.transfer_encoding {
        return None;
    }
    match head.content_length {
        Announced::Length(length) if length <= most => Some(length),
        _ => None,
    }
}

/// Sends all of `data`; false once the deadline passes.
fn send_all(sock: RawFd, mut data: &[u8], deadline: Instant) -> io::Result<bool> {
    while !data.is_empty() {
        let sent = match netio::send_now(sock, data) {
            Ok(sent) => sent,
            Err(err) => match err.raw_os_error() {
                Some(libc::EINTR) => continue,
                Some(libc::EAGAIN) => {
                    if !netio::wait_for(sock, libc::POLLOUT, deadline)? {
                        return Ok(false);
                    }
                    continue;
                }
                _ => return Err(err),
            },
        };
        data = &data[sent..];
    }
    Ok(true)
}

/// Whether nothing follows the body on the socket (nor did the server close it).
fn nothing_pending(sock: RawFd) -> bool {
    let mut byte = 0u8;
    // SAFETY: one writable byte; MSG_PEEK leaves the socket's data where it is.
    #[allow(unsafe_code)]
    let got = unsafe {
        libc::recv(
            sock,
            (&raw mut byte).cast(),
            1,
            libc::MSG_PEEK | libc::MSG_DONTWAIT,
        )
    };
    got < 0 && io::Error::last_os_error().raw_os_error() == Some(libc::EAGAIN)
}

pub(crate) fn is_reset(err: &io::Error) -> bool {
    matches!(
        err.raw_os_error(),
        Some(libc::ECONNRESET | libc::EPIPE | libc::ECONNABORTED)
    )
}

#[cfg(test)]
mod tests;
