//! HTTP/1.1 GETs (ranged or whole) over a TLS connection kept by Rust (rustls), the body
//! decrypted straight into the file at its offset: no Python `ssl` reads, no GIL.
//!
//! The caller connects the socket (non-blocking) and keeps it; this owns only the TLS state,
//! never closes the socket and never sends `close_notify`, so a forked child dropping its
//! copy cannot disturb the parent's session. The answer's head is read and checked by the
//! same code as the plain path ([`http_range`]); only a healthy answer is taken (a `206` for
//! exactly the range, or a `200` of fixed length with no checksum to verify for a whole GET)
//! and anything else is declined (an error's short page is read, [`DeclinedPage`]). Exactly
//! the bytes asked for are decrypted into the file; a connection that ends first (with or
//! without `close_notify`) is a short body. Every wait is a `poll` bounded by the deadline.

use std::io::{self, Read, Write};
use std::os::fd::RawFd;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Instant;

use rustls::pki_types::ServerName;
use rustls::{ClientConfig, ClientConnection};

use crate::http_range::{self, AnswerSource, RangeGet, RangeOutcome};
use crate::netio::{self, BodyEnd};
use socket::{Fd, Received};

mod config;
mod head;
mod page;
mod socket;
mod two_step;
pub use crate::http_range::{DeclinedPage, MOST_PAGE_BYTES};
pub use config::client_config;
pub use head::{HeadAnswer, HeadOutcome, Version};
pub use rustls::ClientConfig as TlsConfig;

const HEAD_READ_BYTES: usize = 16 << 10;
const BUFFER_BYTES: usize = 1 << 20;

/// Bodies moved whole through this path since the process started (a hook for tests that
/// must prove the TLS path ran, and for the bench).
static BODIES: AtomicU64 = AtomicU64::new(0);

pub fn bodies_moved() -> u64 {
    BODIES.load(Ordering::Relaxed)
}

/// How a handshake ended, when it did not fail with an I/O or protocol error.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Handshake {
    Done,
    /// The server's certificate failed verification; the reason, as rustls gives it.
    Rejected(String),
    TimedOut,
}

/// One whole-object GET: the body lands at offset 0.
pub struct WholeGet<'a> {
    pub request: &'a [u8],
    /// The object's size, when known: an answer announcing another one is declined.
    pub expected: Option<u64>,
    /// The most bytes accepted: a larger announced body is declined.
    pub most: Option<u64>,
    pub deadline: Instant,
}

/// A TLS client session over a connected, non-blocking socket the caller owns.
pub struct TlsStream {
    sock: RawFd,
    conn: ClientConnection,
    received: Received,
    buffer: Vec<u8>,
    /// The version (`ETag`, `Last-Modified`) of the last body taken.
    version: Version,
    /// The last GET's declined answer's page, when it was read whole.
    page: Option<DeclinedPage>,
    /// An accepted answer whose body is still to be moved ([`TlsStream::ranged_head`]).
    pending: Option<two_step::Pending>,
}

impl TlsStream {
    /// A session with `host` (a name for SNI and verification, or an IP address) over `sock`.
    pub fn new(config: Arc<ClientConfig>, host: &str, sock: RawFd) -> io::Result<TlsStream> {
        let name = ServerName::try_from(host.to_owned()).map_err(|err| {
            io::Error::new(
                io::ErrorKind::InvalidInput,
                format!("TLS server name {host:?}: {err}"),
            )
        })?;
        let conn = ClientConnection::new(config, name).map_err(|err| protocol_error(&err))?;
        Ok(TlsStream {
            sock,
            conn,
            received: Received::default(),
            buffer: Vec::new(),
            version: Version::default(),
            page: None,
            pending: None,
        })
    }

    /// Runs the handshake until done, refused, or the deadline.
    pub fn handshake(&mut self, deadline: Instant) -> io::Result<Handshake> {
        while self.conn.is_handshaking() {
            if !self.flush(deadline)? {
                return Ok(Handshake::TimedOut);
            }
            if !self.conn.is_handshaking() {
                break;
            }
            match self.received.feed(self.sock, &mut self.conn) {
                Ok(0) => {
                    return Err(io::Error::new(
                        io::ErrorKind::ConnectionAborted,
                        "the server closed the connection during the TLS handshake",
                    ))
                }
                Ok(_) => {}
                Err(err) if err.kind() == io::ErrorKind::Interrupted => continue,
                Err(err) if err.kind() == io::ErrorKind::WouldBlock => {
                    if !netio::wait_for(self.sock, libc::POLLIN, deadline)? {
                        return Ok(Handshake::TimedOut);
                    }
                    continue;
                }
                Err(err) => return Err(err),
            }
            if let Err(err) = self.process() {
                return match err {
                    rustls::Error::InvalidCertificate(_) => {
                        Ok(Handshake::Rejected(err.to_string()))
                    }
                    other => Err(protocol_error(&other)),
                };
            }
        }
        Ok(if self.flush(deadline)? {
            Handshake::Done
        } else {
            Handshake::TimedOut
        })
    }

    /// A ranged GET, with the same outcomes as [`http_range::ranged_get`].
    pub fn ranged_get(&mut self, file: RawFd, get: &RangeGet<'_>) -> io::Result<RangeOutcome> {
        match self.ranged_head(get)? {
            Ok(_) => self.pending_body(file),
            Err(outcome) => Ok(outcome),
        }
    }

    /// A whole GET: a `200` of announced length, no checksum to verify, of `expected`
    /// bytes (when given) and at most `most`, moved to offset 0; anything else declined
    /// unread. `total` of a moved body is its length.
    pub fn whole_get(&mut self, file: RawFd, get: &WholeGet<'_>) -> io::Result<RangeOutcome> {
        let (head, buffer) = match self.exchange(get.request, get.deadline)? {
            Answer::Head(head, buffer) => (head, buffer),
            Answer::Stale => return Ok(RangeOutcome::Stale),
            Answer::TimedOut => return Ok(RangeOutcome::TimedOut),
        };
        let early = &buffer[head.length..];
        let Some(length) = http_range::accepted_whole(&head, get.expected, get.most) else {
            self.read_page(&head, buffer, get.deadline);
            return Ok(RangeOutcome::Declined {
                status: head.status,
            });
        };
        self.version = head::version_of(&buffer[..head.length]);
        let (end, reusable) = self.body(file, early, 0, length, get.deadline)?;
        Ok(RangeOutcome::Moved {
            end,
            total: Some(length),
            reusable: reusable && head.keep_alive,
        })
    }

    /// The version (`ETag`, `Last-Modified`) of the answer whose body the last GET took;
    /// `(None, None)` once another request has started.
    pub fn version(&self) -> &Version {
        &self.version
    }

    /// Sends the request and reads the answer's head; the head and the bytes read (the
    /// head's, then those of the body read along with it).
    fn exchange(&mut self, request: &[u8], deadline: Instant) -> io::Result<Answer> {
        self.version = Version::default();
        self.page = None;
        self.pending = None;
        match self.send(request, deadline) {
            Ok(true) => {}
            Ok(false) => return Ok(Answer::TimedOut),
            Err(err) if http_range::is_reset(&err) => return Ok(Answer::Stale),
            Err(err) => return Err(err),
        }
        let mut buffer = Vec::with_capacity(HEAD_READ_BYTES);
        let Some(head) = http_range::read_head(self, &mut buffer, deadline)? else {
            return Ok(if buffer.is_empty() {
                Answer::Stale
            } else {
                Answer::TimedOut
            });
        };
        Ok(Answer::Head(head, buffer))
    }

    /// Moves the body (`early` first) into `file`; how it ended, and whether the session
    /// may carry another request as far as the body goes.
    fn body(
        &mut self,
        file: RawFd,
        early: &[u8],
        offset: u64,
        length: u64,
        deadline: Instant,
    ) -> io::Result<(BodyEnd, bool)> {
        let taken = early.len().min(length as usize);
        netio::write_all_at(file, &early[..taken], offset)?;
        let end = match self.move_to_file(
            file,
            offset + taken as u64,
            length - taken as u64,
            deadline,
        )? {
            BodyEnd::Closed(done) => BodyEnd::Closed(done + taken as u64),
            BodyEnd::TimedOut(done) => BodyEnd::TimedOut(done + taken as u64),
            BodyEnd::Complete => BodyEnd::Complete,
        };
        if end != BodyEnd::Complete {
            return Ok((end, false));
        }
        BODIES.fetch_add(1, Ordering::Relaxed);
        Ok((
            end,
            early.len() <= length as usize && self.nothing_pending(),
        ))
    }

    /// Decrypts `length` bytes into `file` at `offset`: what the socket has is gathered
    /// into one buffer, then written with one `pwrite`.
    fn move_to_file(
        &mut self,
        file: RawFd,
        offset: u64,
        length: u64,
        deadline: Instant,
    ) -> io::Result<BodyEnd> {
        let mut buffer = std::mem::take(&mut self.buffer);
        buffer.resize(BUFFER_BYTES.min(length as usize).max(buffer.len()), 0);
        let result = self.move_through(&mut buffer, file, offset, length, deadline);
        self.buffer = buffer;
        result
    }

    fn move_through(
        &mut self,
        buffer: &mut [u8],
        file: RawFd,
        offset: u64,
        length: u64,
        deadline: Instant,
    ) -> io::Result<BodyEnd> {
        let mut done = 0u64;
        while done < length {
            if Instant::now() >= deadline {
                return Ok(BodyEnd::TimedOut(done));
            }
            let want = (length - done).min(buffer.len() as u64) as usize;
            let (filled, ended) = self.gather(&mut buffer[..want], deadline)?;
            netio::write_all_at(file, &buffer[..filled], offset + done)?;
            done += filled as u64;
            match ended {
                Some(Ended::Closed) => return Ok(BodyEnd::Closed(done)),
                Some(Ended::TimedOut) => return Ok(BodyEnd::TimedOut(done)),
                None => {}
            }
        }
        Ok(BodyEnd::Complete)
    }

    /// Fills `buffer` with what can be decrypted now (waiting only while it is empty);
    /// the bytes filled, and how the stream ended if it did.
    fn gather(
        &mut self,
        buffer: &mut [u8],
        deadline: Instant,
    ) -> io::Result<(usize, Option<Ended>)> {
        let mut filled = 0;
        while filled < buffer.len() {
            match self.conn.reader().read(&mut buffer[filled..]) {
                // close_notify: the server ended the stream before the body did.
                Ok(0) => return Ok((filled, Some(Ended::Closed))),
                Ok(got) => {
                    filled += got;
                    continue;
                }
                Err(err) if err.kind() == io::ErrorKind::WouldBlock => {}
                // Closed without close_notify: as short, and never trusted as complete.
                Err(err) if err.kind() == io::ErrorKind::UnexpectedEof => {
                    return Ok((filled, Some(Ended::Closed)))
                }
                Err(err) => return Err(err),
            }
            match self.received.feed(self.sock, &mut self.conn) {
                Ok(_) => self.process().map_err(|err| protocol_error(&err))?,
                Err(err) if err.kind() == io::ErrorKind::Interrupted => {}
                Err(err) if err.kind() == io::ErrorKind::WouldBlock => {
                    if filled > 0 {
                        break; // write what came; wait afterwards
                    }
                    if !netio::wait_for(self.sock, libc::POLLIN, deadline)? {
                        return Ok((0, Some(Ended::TimedOut)));
                    }
                }
                Err(err) => return Err(err),
            }
        }
        Ok((filled, None))
    }

    /// Sends all of `data`; false once the deadline passes.
    fn send(&mut self, mut data: &[u8], deadline: Instant) -> io::Result<bool> {
        while !data.is_empty() {
            let took = self.conn.writer().write(data)?;
            data = &data[took..];
            if !self.flush(deadline)? {
                return Ok(false);
            }
        }
        self.flush(deadline)
    }

    /// Writes what the session has to send; false once the deadline passes.
    fn flush(&mut self, deadline: Instant) -> io::Result<bool> {
        while self.conn.wants_write() {
            match self.conn.write_tls(&mut Fd(self.sock)) {
                Ok(_) => {}
                Err(err) if err.kind() == io::ErrorKind::Interrupted => {}
                Err(err) if err.kind() == io::ErrorKind::WouldBlock => {
                    if !netio::wait_for(self.sock, libc::POLLOUT, deadline)? {
                        return Ok(false);
                    }
                }
                Err(err) => return Err(err),
            }
        }
        Ok(true)
    }

    /// Decrypts the records read; on a protocol error the alert rustls queued is sent if
    /// the socket takes it at once.
    fn process(&mut self) -> Result<(), rustls::Error> {
        match self.conn.process_new_packets() {
            Ok(_) => Ok(()),
            Err(err) => {
                let _ = self.conn.write_tls(&mut Fd(self.sock));
                Err(err)
            }
        }
    }
}

impl AnswerSource for TlsStream {
    fn read_some(&mut self, buf: &mut [u8], deadline: Instant) -> io::Result<Option<usize>> {
        Ok(match self.gather(buf, deadline)? {
            (0, Some(Ended::TimedOut)) => None,
            (filled, _) => Some(filled),
        })
    }

    /// No plaintext, nothing unread on the socket but records that carry none (session
    /// tickets), and no end of the stream.
    fn nothing_pending(&mut self) -> bool {
        loop {
            match self.conn.reader().read(&mut [0u8; 1]) {
                Err(err) if err.kind() == io::ErrorKind::WouldBlock => {}
                _ => return false,
            }
            match self.received.feed(self.sock, &mut self.conn) {
                Err(err) if err.kind() == io::ErrorKind::WouldBlock => return true,
                Ok(got) if got > 0 => {
                    if self.process().is_err() {
                        return false;
                    }
                }
                _ => return false,
            }
        }
    }
}

enum Answer {
    Head(http_range::Head, Vec<u8>),
    Stale,
    TimedOut,
}

#[derive(Clone, Copy)]
enum Ended {
    Closed,
    TimedOut,
}

fn protocol_error(err: &rustls::Error) -> io::Error {
    io::Error::new(io::ErrorKind::InvalidData, format!("TLS: {err}"))
}
