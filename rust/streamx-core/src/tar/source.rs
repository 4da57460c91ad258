//! Where a scan reads the archive from.

use std::fs::File;
use std::io;
use std::os::unix::fs::FileExt;

/// Windows of an archive: `read_at(start, len)` returns its bytes `[start, start + len)`,
/// fewer only where the archive ends first.
pub trait ReadAt {
    type Error;
    fn read_at(&mut self, start: u64, len: usize) -> Result<Vec<u8>, Self::Error>;
}

/// An archive held in memory.
pub struct SliceSource<'a>(pub &'a [u8]);

impl ReadAt for SliceSource<'_> {
    type Error = std::convert::Infallible;

    fn read_at(&mut self, start: u64, len: usize) -> Result<Vec<u8>, Self::Error> {
        let begin = usize::try_from(start).map_or(self.0.len(), |s| s.min(self.0.len()));
        let end = begin.saturating_add(len).min(self.0.len());
        Ok(self.0[begin..end].to_vec())
    }
}

/// A local file, read in place by positioned reads (no seek state, no copy).
pub struct FileSource(pub File);

impl ReadAt for FileSource {
    type Error = io::Error;

    fn read_at(&mut self, start: u64, len: usize) -> Result<Vec<u8>, Self::Error> {
        // `len` is bounded by the scan's window and the archive's declared size.
        let mut data = vec![0u8; len];
        let mut filled = 0usize;
        while filled < len {
            match self.0.read_at(&mut data[filled..], start + filled as u64) {
                Ok(0) => break,
                Ok(n) => filled += n,
                Err(err) if err.kind() == io::ErrorKind::Interrupted => {}
                Err(err) => return Err(err),
            }
        }
        data.truncate(filled);
        Ok(data)
    }
}
