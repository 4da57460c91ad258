//! HTTPS GETs over a TLS session kept by Rust (`streamx_core::http_tls`), run without the GIL.

use std::os::fd::RawFd;
use std::sync::{Arc, Mutex, MutexGuard};

use pyo3::exceptions::{PyConnectionError, PyOSError, PyRuntimeError, PyTimeoutError};
use pyo3::prelude::*;
use streamx_core::http_tls::{self, Handshake, HeadOutcome, TlsConfig, WholeGet};

use crate::netio::{deadline_in, outcome_tuple, page_tuple, range_get, PageTuple};

type Outcome = (&'static str, u64, Option<u64>, bool, u16);
type HeadTuple = (&'static str, u16, Vec<(String, String)>, bool);

/// The certificates HTTPS connections trust: the system's store plus the PEM bundles
/// given as `(where it was named, path)`. Raises `OSError` naming a bundle that cannot be used.
#[pyclass(module = "streamx._core", frozen)]
struct TlsClientConfig {
    inner: Arc<TlsConfig>,
}

#[pymethods]
impl TlsClientConfig {
    #[new]
    fn new(py: Python<'_>, bundles: Vec<(String, String)>) -> PyResult<Self> {
        let inner = py
            .detach(|| http_tls::client_config(&bundles))
            .map_err(PyOSError::new_err)?;
        Ok(TlsClientConfig { inner })
    }
}

/// A TLS session with `host` over the connected non-blocking socket `sock`, which the
/// caller keeps open (and closes) for the session's life.
#[pyclass(module = "streamx._core", frozen)]
struct TlsStream {
    inner: Mutex<http_tls::TlsStream>,
}

impl TlsStream {
    fn lock(&self) -> PyResult<MutexGuard<'_, http_tls::TlsStream>> {
        self.inner
            .try_lock()
            .map_err(|_| PyRuntimeError::new_err("a TLS session is used by one thread at a time"))
    }
}

#[pymethods]
impl TlsStream {
    #[new]
    fn new(config: &TlsClientConfig, host: &str, sock: RawFd) -> PyResult<Self> {
        let inner = http_tls::TlsStream::new(Arc::clone(&config.inner), host, sock)?;
        Ok(TlsStream {
            inner: Mutex::new(inner),
        })
    }

    /// Runs the handshake within `seconds`: None once done, or the reason the server's
    /// certificate failed verification. Raises `TimeoutError` past the deadline, `OSError` on
    /// other failures.
    fn handshake(&self, py: Python<'_>, seconds: f64) -> PyResult<Option<String>> {
        let deadline = deadline_in(seconds);
        let mut guard = self.lock()?;
        let stream: &mut http_tls::TlsStream = &mut guard;
        match py.detach(|| stream.handshake(deadline))? {
            Handshake::Done => Ok(None),
            Handshake::Rejected(reason) => Ok(Some(reason)),
            Handshake::TimedOut => Err(PyTimeoutError::new_err(
                "the TLS handshake ran past its deadline",
            )),
        }
    }

    /// As `_core.ranged_get`, over this session.
    #[pyo3(signature = (file, request, offset, length, expected, seconds))]
    fn ranged_get(
        &self,
        py: Python<'_>,
        file: RawFd,
        request: &[u8],
        offset: u64,
        length: u64,
        expected: Option<u64>,
        seconds: f64,
    ) -> PyResult<Outcome> {
        let get = range_get(request, offset, length, expected, seconds)?;
        let mut guard = self.lock()?;
        let stream: &mut http_tls::TlsStream = &mut guard;
        let outcome = py.detach(|| stream.ranged_get(file, &get))?;
        Ok(outcome_tuple(outcome, length))
    }

    /// The first step of `ranged_get`: sends the request and reads the answer's head. An
    /// accepted answer gives `("head", 0, total, False, 206)`: its version is then in
    /// `version()` and its body waits for `pending_body`. Any other outcome ends the GET,
    /// as `ranged_get`'s does.
    #[pyo3(signature = (request, offset, length, expected, seconds))]
    fn ranged_head(
        &self,
        py: Python<'_>,
        request: &[u8],
        offset: u64,
        length: u64,
        expected: Option<u64>,
        seconds: f64,
    ) -> PyResult<Outcome> {
        let get = range_get(request, offset, length, expected, seconds)?;
        let mut guard = self.lock()?;
        let stream: &mut http_tls::TlsStream = &mut guard;
        Ok(match py.detach(|| stream.ranged_head(&get))? {
            Ok(total) => ("head", 0, total, false, 206),
            Err(outcome) => outcome_tuple(outcome, length),
        })
    }

    /// The second step: moves the body of the answer `ranged_head` accepted into `file`,
    /// within that GET's deadline; `ranged_get`'s tuple. Raises `OSError` when no body is
    /// pending.
    fn pending_body(&self, py: Python<'_>, file: RawFd) -> PyResult<Outcome> {
        let mut guard = self.lock()?;
        let stream: &mut http_tls::TlsStream = &mut guard;
        let length = stream.pending_length().unwrap_or(0);
        let outcome = py.detach(|| stream.pending_body(file))?;
        Ok(outcome_tuple(outcome, length))
    }

    /// A whole GET over this session: a `200` with a Content-Length (of `expected` bytes
    /// when given, at most `most`) and no checksum header is moved into `file` from offset
    /// 0; the tuple is `ranged_get`'s, `total` the body's length. Any other answer is
    /// `"declined"` unread.
    #[pyo3(signature = (file, request, expected, most, seconds))]
    fn whole_get(
        &self,
        py: Python<'_>,
        file: RawFd,
        request: &[u8],
        expected: Option<u64>,
        most: Option<u64>,
        seconds: f64,
    ) -> PyResult<Outcome> {
        let get = WholeGet {
            request,
            expected,
            most,
            deadline: deadline_in(seconds),
        };
        let mut guard = self.lock()?;
        let stream: &mut http_tls::TlsStream = &mut guard;
        let outcome = py.detach(|| stream.whole_get(file, &get))?;
        let length = match outcome {
            streamx_core::http_range::RangeOutcome::Moved { total, .. } => total.unwrap_or(0),
            _ => 0,
        };
        Ok(outcome_tuple(outcome, length))
    }

    /// `(ETag, Last-Modified)` of the answer whose body the last GET moved (None where the
    /// answer had none, or where the last GET moved nothing).
    fn version(&self) -> PyResult<(Option<String>, Option<String>)> {
        Ok(self.lock()?.version().clone())
    }

    /// The page of the last GET's answer when it was declined (an error status) and its
    /// page was short enough to read whole: `(fields, body, reusable)`, the header fields in
    /// the order sent and whether the session may carry another request (a page cut short,
    /// or stalled for two seconds, keeps the fields with an empty body, not reusable). None
    /// otherwise.
    fn declined_page<'py>(&self, py: Python<'py>) -> PyResult<Option<PageTuple<'py>>> {
        let guard = self.lock()?;
        Ok(guard.declined_page().map(|page| page_tuple(py, page)))
    }

    /// Sends `request` (a whole `HEAD` request head) and reads the answer's head within
    /// `seconds`. Returns `(outcome, status, fields, reusable)`: outcome `"complete"` with
    /// the status and the header fields in the order sent, `"stale"` when the connection
    /// ended before any answer, `"head-timeout"` when the deadline passed first. Raises
    /// `ConnectionError` when the connection ends mid-head, `OSError` for an answer that is
    /// not HTTP and for socket or TLS failures.
    fn head(&self, py: Python<'_>, request: &[u8], seconds: f64) -> PyResult<HeadTuple> {
        let deadline = deadline_in(seconds);
        let mut guard = self.lock()?;
        let stream: &mut http_tls::TlsStream = &mut guard;
        let outcome = py
            .detach(|| stream.head(request, deadline))
            .map_err(head_error)?;
        Ok(match outcome {
            HeadOutcome::Answered(answer) => {
                ("complete", answer.status, answer.fields, answer.reusable)
            }
            HeadOutcome::Stale => ("stale", 0, Vec::new(), false),
            HeadOutcome::TimedOut => ("head-timeout", 0, Vec::new(), false),
        })
    }
}

/// A connection that ended mid-head as `ConnectionError`; other errors as `OSError`s.
fn head_error(err: std::io::Error) -> PyErr {
    if err.kind() == std::io::ErrorKind::UnexpectedEof {
        PyConnectionError::new_err(err.to_string())
    } else {
        PyErr::from(err)
    }
}

/// Bodies moved whole over Rust TLS sessions in this process.
#[pyfunction]
fn tls_bodies_moved() -> u64 {
    http_tls::bodies_moved()
}

/// Adds this module's classes and functions to `_core`.
pub fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_class::<TlsClientConfig>()?;
    m.add_class::<TlsStream>()?;
    m.add_function(wrap_pyfunction!(tls_bodies_moved, m)?)
}
