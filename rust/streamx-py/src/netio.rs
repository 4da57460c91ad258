//! The HTTP body mover for the Python downloader, run without the GIL.

use std::os::fd::RawFd;
use std::time::{Duration, Instant};

use pyo3::prelude::*;
use streamx_core::netio::{self, BodyEnd};

/// Moves the next `length` bytes of the non-blocking socket `sock` into `file` at
/// `offset`, within `seconds`. Returns the bytes moved and how it ended: `"complete"`,
/// `"closed"` (the peer hung up first) or `"timeout"`.
#[pyfunction]
fn socket_to_file(
    py: Python<'_>,
    sock: RawFd,
    file: RawFd,
    offset: u64,
    length: u64,
    seconds: f64,
) -> PyResult<(u64, &'static str)> {
    // NaN or negative time left is no time left.
    let left = Duration::try_from_secs_f64(seconds).unwrap_or(Duration::ZERO);
    let deadline = Instant::now() + left.min(Duration::from_secs(1 << 32));
    let end = py.detach(move || netio::socket_to_file(sock, file, offset, length, deadline))?;
    Ok(match end {
        BodyEnd::Complete => (length, "complete"),
        BodyEnd::Closed(done) => (done, "closed"),
        BodyEnd::TimedOut(done) => (done, "timeout"),
    })
}

/// Adds this module's functions to `_core`.
pub fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_function(wrap_pyfunction!(socket_to_file, m)?)
}
