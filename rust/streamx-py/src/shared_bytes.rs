//! Python `bytes` values held by reference in a shard being built, so a large value is
//! copied once (into the file, by the background writer) rather than twice.

use pyo3::prelude::*;
use pyo3::types::{PyBytes, PyBytesMethods};
use streamx_core::mds::SharedBytes;

/// Values at least this big are held by reference; smaller ones cost less to copy than to
/// track (and each becomes a separate piece of the file write).
pub const SHARED_MIN_BYTES: usize = 32 << 10;

/// A `bytes` object kept alive, with its data's address taken while the GIL was held.
struct HeldBytes {
    _owner: Py<PyBytes>,
    ptr: *const u8,
    len: usize,
}

// SAFETY: a `bytes` object's data never moves or changes while the object lives, and
// `_owner` keeps it alive; the pointer is only read. Dropping `_owner` off the GIL is
// deferred by pyo3 to the next time the GIL is held.
#[allow(unsafe_code)]
unsafe impl Send for HeldBytes {}
#[allow(unsafe_code)]
unsafe impl Sync for HeldBytes {}

impl AsRef<[u8]> for HeldBytes {
    #[allow(unsafe_code)]
    fn as_ref(&self) -> &[u8] {
        // SAFETY: see the `Send` impl: `ptr..ptr+len` is the live object's immutable data.
        unsafe { std::slice::from_raw_parts(self.ptr, self.len) }
    }
}

/// `value` held by reference, if it is a `bytes` object of at least [`SHARED_MIN_BYTES`].
pub fn share(value: &Bound<'_, PyAny>) -> Option<SharedBytes> {
    let bytes = value.cast::<PyBytes>().ok()?;
    let data = bytes.as_bytes();
    if data.len() < SHARED_MIN_BYTES {
        return None;
    }
    Some(SharedBytes::new(HeldBytes {
        ptr: data.as_ptr(),
        len: data.len(),
        _owner: bytes.clone().unbind(),
    }))
}
