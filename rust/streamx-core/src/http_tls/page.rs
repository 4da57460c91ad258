//! A declined answer's short page over a TLS session: read by [`http_range::read_page`]
//! (the plain GETs' reader) and kept for [`TlsStream::declined_page`].

use std::time::Instant;

use super::TlsStream;
use crate::http_range::{self, DeclinedPage, Head};

impl TlsStream {
    /// Reads the page of the declined answer `head` (`buffer` holds the head and the bytes
    /// read along with it) when it is short; kept for [`TlsStream::declined_page`]. A page
    /// cut short is dropped, and the session is then not reused.
    pub(super) fn read_page(&mut self, head: &Head, buffer: Vec<u8>, deadline: Instant) {
        self.page = http_range::read_page(self, head, buffer, deadline);
    }

    /// The page of the last GET's answer when it was declined and its page read whole.
    pub fn declined_page(&self) -> Option<&DeclinedPage> {
        self.page.as_ref()
    }
}
