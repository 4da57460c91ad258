//! A compressed shard decompressed while it downloads.
//!
//! The downloader writes a compressed file's parts in place, in parallel, and reports how
//! far from its start the file is complete (the parts done without a gap). A thread here
//! reads the file up to that mark, decoding as it goes, and waits when it catches up, so
//! decompression ends shortly after the last byte arrives instead of starting then. The
//! output goes to a temp file renamed into place only by [`GrowingDecompression::finish`],
//! so readers never see a partial shard.

use std::fs::File;
use std::io::{self, Read};
use std::os::unix::fs::FileExt;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Condvar, Mutex, MutexGuard, PoisonError};
use std::thread::JoinHandle;

use crate::compression::{temp_path, write_decoded, Compression};
use crate::error::{Error, Result};

/// How much of the compressed file is there, shared with the decoding thread.
#[derive(Default)]
struct Mark {
    file: Option<(Arc<File>, PathBuf)>,
    available: u64,
    finished: bool,
    aborted: bool,
}

#[derive(Default)]
struct Shared {
    mark: Mutex<Mark>,
    moved: Condvar,
}

impl Shared {
    fn lock(&self) -> MutexGuard<'_, Mark> {
        self.mark.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// The mark, once `ready` holds of it or the decoding is aborted.
    fn wait_for(&self, ready: impl Fn(&Mark) -> bool) -> MutexGuard<'_, Mark> {
        self.moved
            .wait_while(self.lock(), |mark| !mark.aborted && !ready(mark))
            .unwrap_or_else(PoisonError::into_inner)
    }
}

/// Decompresses one file as it arrives; see the module docs.
pub struct GrowingDecompression {
    shared: Arc<Shared>,
    thread: Option<JoinHandle<Result<u64>>>,
    tmp: PathBuf,
    raw: PathBuf,
}

impl GrowingDecompression {
    /// Starts the decoding thread for a file compressed with `compression` (which must
    /// [stream](Compression::streams)) that decompresses to `raw`, at most `limit` bytes.
    pub fn start(compression: Compression, raw: &Path, limit: Option<u64>) -> Result<Self> {
        if !compression.streams() {
            return Err(Error::io(
                raw,
                io::Error::other(format!("{compression} does not stream")),
            ));
        }
        let shared = Arc::new(Shared::default());
        let tmp = temp_path(raw);
        let input = GrowingFile {
            shared: Arc::clone(&shared),
            pos: 0,
        };
        let out = tmp.clone();
        let limit = limit.unwrap_or(u64::MAX);
        let thread = std::thread::Builder::new()
            .name("streamx-unzip".into())
            .spawn(move || {
                let zip = input.wait_for_file()?;
                write_decoded(&zip, &out, &compression, limit, |sink| {
                    compression.decompress_from(input, sink)
                })
            })
            .map_err(|e| Error::io(raw, e))?;
        Ok(Self {
            shared,
            thread: Some(thread),
            tmp,
            raw: raw.to_path_buf(),
        })
    }

    /// The first `available` bytes of the compressed file at `zip` are final.
    pub fn advance(&self, zip: &Path, available: u64) -> Result<()> {
        let mut mark = self.shared.lock();
        if mark.file.is_none() {
            let file = File::open(zip).map_err(|e| Error::io(zip, e))?;
            mark.file = Some((Arc::new(file), zip.to_path_buf()));
        }
        mark.available = mark.available.max(available);
        self.shared.moved.notify_all();
        Ok(())
    }

    /// The compressed file at `zip` is complete at `total` bytes: waits for the decoding
    /// to end, renames the output into place and returns its size.
    pub fn finish(mut self, zip: &Path, total: u64) -> Result<u64> {
        self.advance(zip, total)?;
        self.shared.lock().finished = true;
        self.shared.moved.notify_all();
        let result = self.join();
        match result {
            Ok(len) => match std::fs::rename(&self.tmp, &self.raw) {
                Ok(()) => Ok(len),
                Err(e) => {
                    let _ = std::fs::remove_file(&self.tmp);
                    Err(Error::io(&self.raw, e))
                }
            },
            Err(e) => {
                let _ = std::fs::remove_file(&self.tmp); // best effort, like decompress_file
                                                         // The decoder read the file under its download name: name the shard's.
                Err(match e {
                    Error::CorruptShard { reason, .. } => Error::CorruptShard {
                        path: zip.to_path_buf(),
                        reason,
                    },
                    other => other,
                })
            }
        }
    }

    /// Stops the decoding (the download failed) and removes its output.
    pub fn abort(mut self) {
        self.stop();
    }

    fn stop(&mut self) {
        if self.thread.is_none() {
            return;
        }
        self.shared.lock().aborted = true;
        self.shared.moved.notify_all();
        let _ = self.join();
        let _ = std::fs::remove_file(&self.tmp);
    }

    fn join(&mut self) -> Result<u64> {
        let thread = self.thread.take().expect("joined once");
        thread.join().unwrap_or_else(|_| {
            Err(Error::io(
                &self.raw,
                io::Error::other("the decoder panicked"),
            ))
        })
    }
}

impl Drop for GrowingDecompression {
    fn drop(&mut self) {
        self.stop(); // never leave a thread waiting for bytes that will not come
    }
}

/// The compressed file as the decoder reads it: up to the mark, waiting at it.
struct GrowingFile {
    shared: Arc<Shared>,
    pos: u64,
}

impl GrowingFile {
    /// The compressed file's path (the download's), once the downloader has opened it.
    fn wait_for_file(&self) -> Result<PathBuf> {
        let mark = self.shared.wait_for(|mark| mark.file.is_some());
        match &mark.file {
            Some((_, zip)) if !mark.aborted => Ok(zip.clone()),
            _ => Err(Error::io("<abandoned download>", aborted())),
        }
    }
}

fn aborted() -> io::Error {
    io::Error::new(io::ErrorKind::Interrupted, "the download was abandoned")
}

impl Read for GrowingFile {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        if buf.is_empty() {
            return Ok(0);
        }
        let (file, end) = {
            let mark = self
                .shared
                .wait_for(|mark| mark.available > self.pos || mark.finished);
            if mark.aborted {
                return Err(aborted());
            }
            if mark.available <= self.pos {
                return Ok(0); // finished, and all read
            }
            (
                Arc::clone(&mark.file.as_ref().expect("a mark past 0 has a file").0),
                mark.available,
            )
        };
        let want = (end - self.pos).min(buf.len() as u64) as usize;
        let got = file.read_at(&mut buf[..want], self.pos)?;
        if got == 0 {
            return Err(io::Error::new(
                io::ErrorKind::UnexpectedEof,
                "the compressed file is shorter than its download reported",
            ));
        }
        self.pos += got as u64;
        Ok(got)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::Write;

    fn packed(codec: &str, raw: &[u8]) -> (Compression, Vec<u8>) {
        let compression = Compression::parse(codec).unwrap();
        let zip = compression.compress(raw).unwrap();
        (compression, zip)
    }

    fn sample_bytes() -> Vec<u8> {
        (0..100_000u32)
            .flat_map(|i| (i / 7).to_le_bytes())
            .collect()
    }

    #[test]
    fn decodes_a_file_written_in_pieces_while_it_grows() {
        for codec in ["zstd", "gz", "bz2", "br"] {
            let dir = tempfile::tempdir().unwrap();
            let raw_bytes = sample_bytes();
            let (compression, zip_bytes) = packed(codec, &raw_bytes);
            let zip = dir.path().join("shard.zip");
            let raw = dir.path().join("shard.mds");
            let mut file = File::create(&zip).unwrap();
            let job = GrowingDecompression::start(compression, &raw, None).unwrap();
            for piece in zip_bytes.chunks(997) {
                file.write_all(piece).unwrap();
                file.flush().unwrap();
                let at = file.metadata().unwrap().len();
                job.advance(&zip, at).unwrap();
                assert!(!raw.exists(), "{codec}: output visible before the end");
            }
            let len = job.finish(&zip, zip_bytes.len() as u64).unwrap();
            assert_eq!(len, raw_bytes.len() as u64, "{codec}");
            assert_eq!(std::fs::read(&raw).unwrap(), raw_bytes, "{codec}");
            assert_eq!(
                std::fs::read_dir(dir.path()).unwrap().count(),
                2,
                "{codec}: leftovers"
            );
        }
    }

    #[test]
    fn a_corrupt_stream_fails_as_a_corrupt_shard_and_leaves_nothing() {
        let dir = tempfile::tempdir().unwrap();
        let (compression, mut zip_bytes) = packed("zstd", &sample_bytes());
        zip_bytes[..4].fill(0x55); // not a zstd frame
        let zip = dir.path().join("shard.zstd");
        std::fs::write(&zip, &zip_bytes).unwrap();
        let raw = dir.path().join("shard.mds");
        let job = GrowingDecompression::start(compression, &raw, None).unwrap();
        job.advance(&zip, 10).unwrap(); // opened under its download name
        let named = dir.path().join("named.zstd");
        let err = job.finish(&named, zip_bytes.len() as u64).unwrap_err();
        assert!(
            matches!(&err, Error::CorruptShard { path, .. } if path == &named),
            "{err}"
        );
        assert_eq!(std::fs::read_dir(dir.path()).unwrap().count(), 1);
    }

    #[test]
    fn output_past_the_limit_is_refused() {
        let dir = tempfile::tempdir().unwrap();
        let (compression, zip_bytes) = packed("gz", &sample_bytes());
        let zip = dir.path().join("shard.gz");
        std::fs::write(&zip, &zip_bytes).unwrap();
        let raw = dir.path().join("shard.mds");
        let job = GrowingDecompression::start(compression, &raw, Some(1000)).unwrap();
        let err = job.finish(&zip, zip_bytes.len() as u64).unwrap_err();
        assert!(err.to_string().contains("1000 bytes"), "{err}");
        assert!(!raw.exists());
    }

    #[test]
    fn abort_and_drop_stop_a_waiting_decoder() {
        let dir = tempfile::tempdir().unwrap();
        let (compression, zip_bytes) = packed("zstd", &sample_bytes());
        let zip = dir.path().join("shard.zstd");
        std::fs::write(&zip, &zip_bytes[..100]).unwrap();
        let raw = dir.path().join("shard.mds");
        let job = GrowingDecompression::start(compression, &raw, None).unwrap();
        job.advance(&zip, 100).unwrap();
        job.abort(); // returns: the thread waiting past byte 100 was told to stop
        let never_fed = GrowingDecompression::start(compression, &raw, None).unwrap();
        drop(never_fed);
        assert_eq!(std::fs::read_dir(dir.path()).unwrap().count(), 1);
    }

    #[test]
    fn snappy_does_not_stream() {
        let snappy = Compression::parse("snappy").unwrap();
        assert!(!snappy.streams());
        let dir = tempfile::tempdir().unwrap();
        assert!(GrowingDecompression::start(snappy, &dir.path().join("x"), None).is_err());
    }
}
