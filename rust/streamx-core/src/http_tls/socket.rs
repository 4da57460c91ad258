//! The socket as a TLS session reads and writes it: never blocking, never raising SIGPIPE,
//! and read in large pieces. rustls asks its reader for at most 4 KiB at a time, so a body
//! read straight from the socket cost one `recv` per 4 KiB; [`Received`] takes what the
//! socket holds (up to [`RECV_BYTES`]) in one `recv` and hands it to rustls from memory.

use std::io::{self, Read, Write};
use std::os::fd::RawFd;

use rustls::ClientConnection;

use crate::netio;

/// The most bytes one `recv` takes: a quarter of a MiB is sixteen full TLS records.
const RECV_BYTES: usize = 256 << 10;

/// Bytes taken from the socket that rustls has not read yet. Kept with the session for its
/// whole life: whatever is left after one answer (a session ticket) belongs to the next.
#[derive(Default)]
pub(super) struct Received {
    bytes: Vec<u8>,
    start: usize,
    end: usize,
}

impl Received {
    /// Gives `conn` the next bytes of the stream, reading the socket only once every byte
    /// taken before is given; rustls's `read_tls` answer: `Ok(0)` at the end of the stream,
    /// `WouldBlock` while the socket has nothing.
    pub(super) fn feed(&mut self, sock: RawFd, conn: &mut ClientConnection) -> io::Result<usize> {
        if self.start == self.end {
            if self.bytes.is_empty() {
                self.bytes.resize(RECV_BYTES, 0);
            }
            let got = Fd(sock).read(&mut self.bytes)?;
            if got == 0 {
                // rustls learns of the end only from a reader that returns nothing.
                return conn.read_tls(&mut io::empty());
            }
            (self.start, self.end) = (0, got);
        }
        let took = conn.read_tls(&mut &self.bytes[self.start..self.end])?;
        self.start += took;
        Ok(took)
    }
}

/// A socket's descriptor read and written without blocking.
pub(super) struct Fd(pub(super) RawFd);

impl Read for Fd {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        netio::recv_now(self.0, buf)
    }
}

impl Write for Fd {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        netio::send_now(self.0, buf)
    }

    fn flush(&mut self) -> io::Result<()> {
        Ok(())
    }
}
