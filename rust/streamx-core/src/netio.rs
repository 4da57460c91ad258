//! An HTTP body moved from a socket into a file at an offset, with a deadline.
//!
//! The Python downloader parses the status line and headers; this moves the body. On Linux
//! the bytes go socket -> pipe -> file with `splice(2)`, so they never enter user space (a
//! `recv` then `pwrite` loop copies each byte twice). Where splice is refused (a socket
//! type or filesystem without support) the same loop runs with `recv` and `pwrite`. Every
//! wait is a `poll` bounded by what is left of the deadline, so a body that stalls mid-way
//! fails in time; exactly `length` bytes are read, never more.

use std::io;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd, RawFd};
use std::time::Instant;

/// How moving a body ended, when it did not fail with an I/O error.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum BodyEnd {
    /// All `length` bytes were written.
    Complete,
    /// The peer closed the connection after this many bytes.
    Closed(u64),
    /// The deadline passed after this many bytes.
    TimedOut(u64),
}

/// The pipe's capacity asked for: larger pipes mean fewer splice calls per megabyte.
const PIPE_BYTES: i32 = 1 << 20;
const BUFFER_BYTES: usize = 1 << 20;

/// Moves `length` bytes from the connected socket `sock` into `file` at `offset`, until
/// `deadline`. `sock` must be in non-blocking mode (Python sockets with a timeout are).
pub fn socket_to_file(
    sock: RawFd,
    file: RawFd,
    offset: u64,
    length: u64,
    deadline: Instant,
) -> io::Result<BodyEnd> {
    let mut body = Body {
        sock,
        file,
        offset,
        length,
        done: 0,
        deadline,
    };
    if let Ok(pipe) = Pipe::new() {
        if let Some(end) = body.splice_through(&pipe)? {
            return Ok(end);
        }
        // splice was refused before any byte moved: copy instead.
    }
    body.copy_through_buffer()
}

struct Body {
    sock: RawFd,
    file: RawFd,
    offset: u64,
    length: u64,
    done: u64,
    deadline: Instant,
}

impl Body {
    /// `None` when the socket refuses splice before any byte has moved.
    fn splice_through(&mut self, pipe: &Pipe) -> io::Result<Option<BodyEnd>> {
        while self.done < self.length {
            if !self.wait_readable()? {
                return Ok(Some(BodyEnd::TimedOut(self.done)));
            }
            let want = (self.length - self.done).min(pipe.capacity as u64) as usize;
            // SAFETY: plain syscall on descriptors this call does not own or close.
            #[allow(unsafe_code)]
            let got = unsafe {
                libc::splice(
                    self.sock,
                    std::ptr::null_mut(),
                    pipe.write.as_raw_fd(),
                    std::ptr::null_mut(),
                    want,
                    libc::SPLICE_F_MOVE | libc::SPLICE_F_NONBLOCK,
                )
            };
            if got < 0 {
                let err = io::Error::last_os_error();
                match err.raw_os_error() {
                    Some(libc::EAGAIN | libc::EINTR) => continue,
                    Some(libc::EINVAL | libc::ENOSYS) if self.done == 0 => return Ok(None),
                    _ => return Err(err),
                }
            }
            if got == 0 {
                return Ok(Some(BodyEnd::Closed(self.done)));
            }
            self.drain_pipe(pipe, got as usize)?;
        }
        Ok(Some(BodyEnd::Complete))
    }

    /// Writes the `count` bytes now in the pipe at the file's next offset.
    fn drain_pipe(&mut self, pipe: &Pipe, mut count: usize) -> io::Result<()> {
        while count > 0 {
            let mut at = (self.offset + self.done) as libc::loff_t;
            // SAFETY: `at` outlives the call; the descriptors stay open throughout.
            #[allow(unsafe_code)]
            let moved = unsafe {
                libc::splice(
                    pipe.read.as_raw_fd(),
                    std::ptr::null_mut(),
                    self.file,
                    &raw mut at,
                    count,
                    libc::SPLICE_F_MOVE,
                )
            };
            if moved < 0 {
                let err = io::Error::last_os_error();
                match err.raw_os_error() {
                    Some(libc::EINTR) => continue,
                    // A filesystem without splice support: read the pipe, write the file.
                    Some(libc::EINVAL | libc::ENOSYS) => return self.pipe_by_hand(pipe, count),
                    _ => return Err(err),
                }
            }
            if moved == 0 {
                return Err(io::Error::new(
                    io::ErrorKind::WriteZero,
                    "the file took no bytes",
                ));
            }
            self.done += moved as u64;
            count -= moved as usize;
        }
        Ok(())
    }

    fn pipe_by_hand(&mut self, pipe: &Pipe, mut count: usize) -> io::Result<()> {
        let mut buffer = vec![0u8; count.min(BUFFER_BYTES)];
        while count > 0 {
            let want = count.min(buffer.len());
            let got = retry_eintr(|| {
                // SAFETY: `buffer` holds at least `want` writable bytes.
                #[allow(unsafe_code)]
                unsafe {
                    libc::read(pipe.read.as_raw_fd(), buffer.as_mut_ptr().cast(), want)
                }
            })?;
            if got == 0 {
                return Err(io::Error::new(
                    io::ErrorKind::UnexpectedEof,
                    "the pipe ran dry",
                ));
            }
            self.write_at(&buffer[..got])?;
            count -= got;
        }
        Ok(())
    }

    fn copy_through_buffer(&mut self) -> io::Result<BodyEnd> {
        let mut buffer = vec![0u8; (self.length - self.done).min(BUFFER_BYTES as u64) as usize];
        while self.done < self.length {
            if !self.wait_readable()? {
                return Ok(BodyEnd::TimedOut(self.done));
            }
            let want = (self.length - self.done).min(buffer.len() as u64) as usize;
            // SAFETY: `buffer` holds at least `want` writable bytes.
            #[allow(unsafe_code)]
            let got = unsafe {
                libc::recv(
                    self.sock,
                    buffer.as_mut_ptr().cast(),
                    want,
                    libc::MSG_DONTWAIT,
                )
            };
            if got < 0 {
                let err = io::Error::last_os_error();
                match err.raw_os_error() {
                    Some(libc::EAGAIN | libc::EINTR) => continue,
                    _ => return Err(err),
                }
            }
            if got == 0 {
                return Ok(BodyEnd::Closed(self.done));
            }
            self.write_at(&buffer[..got as usize])?;
        }
        Ok(BodyEnd::Complete)
    }

    fn write_at(&mut self, data: &[u8]) -> io::Result<()> {
        write_all_at(self.file, data, self.offset + self.done)?;
        self.done += data.len() as u64;
        Ok(())
    }

    /// Waits until the socket has bytes (or was closed); false once the deadline passes.
    fn wait_readable(&self) -> io::Result<bool> {
        wait_for(self.sock, libc::POLLIN, self.deadline)
    }
}

/// Writes all of `data` into `file` at `offset`.
pub(crate) fn write_all_at(file: RawFd, mut data: &[u8], mut offset: u64) -> io::Result<()> {
    while !data.is_empty() {
        let wrote = retry_eintr(|| {
            // SAFETY: `data` is a live slice of `data.len()` readable bytes.
            #[allow(unsafe_code)]
            unsafe {
                libc::pwrite(
                    file,
                    data.as_ptr().cast(),
                    data.len(),
                    offset as libc::off_t,
                )
            }
        })?;
        if wrote == 0 {
            return Err(io::Error::new(
                io::ErrorKind::WriteZero,
                "the file took no bytes",
            ));
        }
        offset += wrote as u64;
        data = &data[wrote..];
    }
    Ok(())
}

/// Waits until `fd` is ready for `events` (or hung up, or in error: the next call on it
/// says which); false once `deadline` passes.
pub(crate) fn wait_for(fd: RawFd, events: libc::c_short, deadline: Instant) -> io::Result<bool> {
    loop {
        let left = deadline.saturating_duration_since(Instant::now());
        if left.is_zero() {
            return Ok(false);
        }
        // Rounded up: a 0 ms poll with time left would spin.
        let millis = left.as_millis().clamp(1, i32::MAX as u128) as i32;
        let mut fds = libc::pollfd {
            fd,
            events,
            revents: 0,
        };
        // SAFETY: one pollfd, alive for the call.
        #[allow(unsafe_code)]
        let ready = unsafe { libc::poll(&raw mut fds, 1, millis) };
        if ready < 0 {
            let err = io::Error::last_os_error();
            if err.raw_os_error() == Some(libc::EINTR) {
                continue;
            }
            return Err(err);
        }
        if ready > 0 {
            return Ok(true);
        }
    }
}

pub(crate) fn retry_eintr(mut call: impl FnMut() -> isize) -> io::Result<usize> {
    loop {
        let got = call();
        if got >= 0 {
            return Ok(got as usize);
        }
        let err = io::Error::last_os_error();
        if err.raw_os_error() != Some(libc::EINTR) {
            return Err(err);
        }
    }
}

struct Pipe {
    read: OwnedFd,
    write: OwnedFd,
    capacity: usize,
}

impl Pipe {
    fn new() -> io::Result<Pipe> {
        let mut fds = [0 as RawFd; 2];
        // SAFETY: `fds` has room for the two descriptors pipe2 returns.
        #[allow(unsafe_code)]
        let made = unsafe { libc::pipe2(fds.as_mut_ptr(), libc::O_CLOEXEC) };
        if made < 0 {
            return Err(io::Error::last_os_error());
        }
        // SAFETY: pipe2 succeeded, so both descriptors are open and owned by nobody else.
        #[allow(unsafe_code)]
        let (read, write) = unsafe { (OwnedFd::from_raw_fd(fds[0]), OwnedFd::from_raw_fd(fds[1])) };
        // SAFETY: fcntl on a descriptor owned here. Refused above the system's cap: then
        // the pipe keeps the size it has, which F_GETPIPE_SZ reports.
        #[allow(unsafe_code)]
        let capacity = unsafe {
            libc::fcntl(write.as_raw_fd(), libc::F_SETPIPE_SZ, PIPE_BYTES);
            libc::fcntl(write.as_raw_fd(), libc::F_GETPIPE_SZ)
        };
        let capacity = if capacity > 0 {
            capacity as usize
        } else {
            1 << 16
        };
        Ok(Pipe {
            read,
            write,
            capacity,
        })
    }
}

/// One `recv` into `buf` without blocking: the bytes read (0 once the peer closed), or the
/// OS error (`EAGAIN` when nothing is there yet, `EINTR`).
pub(crate) fn recv_now(sock: RawFd, buf: &mut [u8]) -> io::Result<usize> {
    // SAFETY: `buf` is a live, writable slice of the length passed.
    #[allow(unsafe_code)]
    let got = unsafe { libc::recv(sock, buf.as_mut_ptr().cast(), buf.len(), libc::MSG_DONTWAIT) };
    if got < 0 {
        return Err(io::Error::last_os_error());
    }
    Ok(got as usize)
}

/// One `send` of `data` without blocking and without `SIGPIPE`: the bytes sent, or the OS
/// error (`EAGAIN` when the socket's buffer is full, `EINTR`).
pub(crate) fn send_now(sock: RawFd, data: &[u8]) -> io::Result<usize> {
    // SAFETY: `data` is a live slice of the length passed.
    #[allow(unsafe_code)]
    let sent = unsafe {
        libc::send(
            sock,
            data.as_ptr().cast(),
            data.len(),
            libc::MSG_DONTWAIT | libc::MSG_NOSIGNAL,
        )
    };
    if sent < 0 {
        return Err(io::Error::last_os_error());
    }
    Ok(sent as usize)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::{Read, Write};
    use std::net::{TcpListener, TcpStream};
    use std::time::Duration;

    fn connected() -> (TcpStream, TcpStream) {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let client = TcpStream::connect(listener.local_addr().unwrap()).unwrap();
        let (server, _) = listener.accept().unwrap();
        client.set_nonblocking(true).unwrap();
        (client, server)
    }

    fn run(client: &TcpStream, file: &std::fs::File, offset: u64, length: u64) -> BodyEnd {
        let deadline = Instant::now() + Duration::from_millis(500);
        socket_to_file(
            client.as_raw_fd(),
            file.as_raw_fd(),
            offset,
            length,
            deadline,
        )
        .unwrap()
    }

    #[test]
    fn body_lands_at_its_offset_and_nothing_past_it_is_read() {
        let (client, mut server) = connected();
        let body: Vec<u8> = (0..3_000_000u32).map(|i| (i % 251) as u8).collect();
        let sender = std::thread::spawn(move || {
            server.write_all(&body).unwrap();
            server.write_all(b"NEXT").unwrap();
            server
        });
        let mut file = tempfile::tempfile().unwrap();
        assert_eq!(run(&client, &file, 10, 3_000_000), BodyEnd::Complete);
        let _server = sender.join().unwrap();
        let mut got = Vec::new();
        file.read_to_end(&mut got).unwrap();
        assert_eq!(got.len(), 3_000_010);
        assert!(got[..10].iter().all(|&b| b == 0));
        assert!(got[10..]
            .iter()
            .enumerate()
            .all(|(i, &b)| b == (i % 251) as u8));
        let mut rest = [0u8; 4];
        client.set_nonblocking(false).unwrap();
        (&client).read_exact(&mut rest).unwrap();
        assert_eq!(&rest, b"NEXT");
    }

    #[test]
    fn a_short_body_ends_as_closed_with_its_count() {
        let (client, mut server) = connected();
        server.write_all(&[7u8; 1000]).unwrap();
        drop(server);
        let file = tempfile::tempfile().unwrap();
        assert_eq!(run(&client, &file, 0, 5000), BodyEnd::Closed(1000));
    }

    #[test]
    fn a_stalled_body_times_out_with_its_count() {
        let (client, mut server) = connected();
        server.write_all(&[7u8; 1000]).unwrap();
        let file = tempfile::tempfile().unwrap();
        let start = Instant::now();
        assert_eq!(run(&client, &file, 0, 5000), BodyEnd::TimedOut(1000));
        assert!(start.elapsed() < Duration::from_secs(3));
        drop(server);
    }

    #[test]
    fn the_buffer_path_moves_the_same_bytes() {
        let (client, mut server) = connected();
        server.write_all(&vec![9u8; 70_000]).unwrap();
        let mut file = tempfile::tempfile().unwrap();
        let mut body = Body {
            sock: client.as_raw_fd(),
            file: file.as_raw_fd(),
            offset: 3,
            length: 70_000,
            done: 0,
            deadline: Instant::now() + Duration::from_millis(500),
        };
        assert_eq!(body.copy_through_buffer().unwrap(), BodyEnd::Complete);
        let mut got = Vec::new();
        file.read_to_end(&mut got).unwrap();
        assert_eq!(got.len(), 70_003);
        assert!(got[3..].iter().all(|&b| b == 9));
    }
}
