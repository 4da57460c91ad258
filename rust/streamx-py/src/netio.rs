//! The HTTP body mover and ranged GET of the Python downloader, run without the GIL.

use std::os::fd::RawFd;
use std::time::{Duration, Instant};

use pyo3::prelude::*;
use pyo3::types::PyBytes;
use streamx_core::http_range::{self, DeclinedPage, RangeGet, RangeOutcome};
use streamx_core::netio::{self, BodyEnd};

type Outcome = (&'static str, u64, Option<u64>, bool, u16);
/// A declined answer's page as Python gets it: `(fields, body, reusable)`.
pub(crate) type PageTuple<'py> = (Vec<(String, String)>, Bound<'py, PyBytes>, bool);

/// A deadline `seconds` from now (NaN or negative time left is no time left).
pub(crate) fn deadline_in(seconds: f64) -> Instant {
    let left = Duration::try_from_secs_f64(seconds).unwrap_or(Duration::ZERO);
    Instant::now() + left.min(Duration::from_secs(1 << 32))
}

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
    let deadline = deadline_in(seconds);
    let end = py.detach(move || netio::socket_to_file(sock, file, offset, length, deadline))?;
    Ok(match end {
        BodyEnd::Complete => (length, "complete"),
        BodyEnd::Closed(done) => (done, "closed"),
        BodyEnd::TimedOut(done) => (done, "timeout"),
    })
}

/// Sends `request` (a whole request head asking for bytes `offset..offset + length`) on the
/// connected non-blocking socket `sock` and, when the answer is a `206` for exactly that
/// range (of an object of `expected` bytes, when given), moves its body into `file` at
/// `offset`, all within `seconds`. Returns `((outcome, moved, total, reusable, status),
/// page)`: outcome `"complete"`, `"closed"` or `"timeout"` for a moved body (`total` is the
/// object's size, None for `*`), `"declined"` for any other answer (`status` is its status),
/// `"stale"` when the connection ended before any answer, and `"head-timeout"` when the
/// deadline passed before the answer's head was complete. `page` is a declined error's
/// short page, read whole: `(fields, body, reusable)`, the header fields in the order sent
/// and whether the connection may carry another request (a page cut short, or stalled for
/// two seconds, keeps the fields with an empty body, not reusable); None otherwise (nothing
/// of the answer's body read, and the connection to be closed).
#[pyfunction]
#[pyo3(signature = (sock, file, request, offset, length, expected, seconds))]
fn ranged_get<'py>(
    py: Python<'py>,
    sock: RawFd,
    file: RawFd,
    request: &[u8],
    offset: u64,
    length: u64,
    expected: Option<u64>,
    seconds: f64,
) -> PyResult<(Outcome, Option<PageTuple<'py>>)> {
    let get = range_get(request, offset, length, expected, seconds)?;
    let (outcome, page) = py.detach(|| http_range::ranged_get(sock, file, &get))?;
    let page = page.as_ref().map(|page| page_tuple(py, page));
    Ok((outcome_tuple(outcome, length), page))
}

/// A declined answer's page as Python gets it.
pub(crate) fn page_tuple<'py>(py: Python<'py>, page: &DeclinedPage) -> PageTuple<'py> {
    (
        page.fields.clone(),
        PyBytes::new(py, &page.body),
        page.reusable,
    )
}

/// A ranged GET's arguments as Python passes them, checked: at least one byte is asked for.
pub(crate) fn range_get(
    request: &[u8],
    offset: u64,
    length: u64,
    expected: Option<u64>,
    seconds: f64,
) -> PyResult<RangeGet<'_>> {
    if length == 0 {
        return Err(pyo3::exceptions::PyValueError::new_err(
            "a ranged GET asks for at least one byte",
        ));
    }
    Ok(RangeGet {
        request,
        offset,
        length,
        expected_total: expected,
        deadline: deadline_in(seconds),
    })
}

/// What Python gets for a GET's outcome: `(outcome, moved, total, reusable, status)`, as
/// [`ranged_get`] documents; `length` is the bytes a complete body has.
pub(crate) fn outcome_tuple(outcome: RangeOutcome, length: u64) -> Outcome {
    match outcome {
        RangeOutcome::Moved {
            end,
            total,
            reusable,
        } => match end {
            BodyEnd::Complete => ("complete", length, total, reusable, 206),
            BodyEnd::Closed(done) => ("closed", done, total, false, 206),
            BodyEnd::TimedOut(done) => ("timeout", done, total, false, 206),
        },
        RangeOutcome::Declined { status } => ("declined", 0, None, false, status),
        RangeOutcome::Stale => ("stale", 0, None, false, 0),
        RangeOutcome::TimedOut => ("head-timeout", 0, None, false, 0),
    }
}

/// Adds this module's functions to `_core`.
pub fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_function(wrap_pyfunction!(socket_to_file, m)?)?;
    m.add_function(wrap_pyfunction!(ranged_get, m)?)
}
