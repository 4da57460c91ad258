//! Finishing shards in the background: hashing, compressing and writing each finished shard
//! on a thread of its own, so the writer keeps framing samples meanwhile.
//!
//! Shards are finished one at a time, in order, by one thread per writer (created with the
//! first shard, never at import, so nothing is shared across `fork`). At most [`QUEUE`]
//! shards wait for it: a writer that outruns the disk blocks in [`Finisher::submit`] rather
//! than holding every shard in memory. The first failure stops the thread; the shards still
//! queued are dropped (their files never appear), and the error is handed out by the next
//! [`Finisher::drain`], [`Finisher::submit`] or [`Finisher::finish`].

use std::path::PathBuf;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::mpsc::{channel, sync_channel, Receiver, SyncSender};
use std::sync::Arc;
use std::thread::JoinHandle;

use crate::compression::Compression;
use crate::error::{Error, Result};
use crate::hashing::HashAlgo;
use crate::mds::files::{write_shard_parts, FileInfo};
use crate::mds::parts::ShardParts;
use crate::mds::pool::BufferPool;

/// Finished shards that may wait for the thread (each up to `size_limit` bytes).
const QUEUE: usize = 1;

/// A shard written to disk: its index entry's fields.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ShardDone {
    /// Samples in the shard.
    pub samples: usize,
    /// The raw shard (`raw_data`).
    pub raw: FileInfo,
    /// The compressed file, when compressing (`zip_data`).
    pub zip: Option<FileInfo>,
}

struct Job {
    basename: String,
    parts: ShardParts,
}

struct Running {
    jobs: SyncSender<Job>,
    results: Receiver<Result<ShardDone>>,
    thread: JoinHandle<()>,
}

/// Writes finished shards into one directory on a background thread, in submission order.
pub struct Finisher {
    dir: PathBuf,
    compression: Option<Compression>,
    hashes: Vec<HashAlgo>,
    running: Option<Running>,
    /// Results the thread has sent and `drain` has not yet taken.
    ready: Arc<AtomicUsize>,
    /// Where written shards' buffers go back to, for the builder to reuse.
    pool: BufferPool,
}

impl Finisher {
    /// A finisher writing into `dir`, with the writer's codec and hash algorithms.
    pub fn new(dir: PathBuf, compression: Option<Compression>, hashes: Vec<HashAlgo>) -> Self {
        Self {
            dir,
            compression,
            hashes,
            running: None,
            ready: Arc::new(AtomicUsize::new(0)),
            pool: BufferPool::new(),
        }
    }

    /// Hands each written shard's sample buffer back to `pool` (the builder's).
    #[must_use]
    pub fn with_pool(mut self, pool: BufferPool) -> Self {
        self.pool = pool;
        self
    }

    /// Queues one shard for writing as `basename`, waiting while [`QUEUE`] shards already
    /// wait. Errors if the thread stopped on an earlier failure (that failure is what
    /// [`Self::drain`] returns next).
    pub fn submit(&mut self, basename: String, parts: ShardParts) -> Result<()> {
        if self.running.is_none() {
            self.running = Some(self.spawn()?);
        }
        let running = self.running.as_ref().expect("spawned above");
        running
            .jobs
            .send(Job { basename, parts })
            .map_err(|_| stopped())
    }

    /// Whether some shards are done and waiting for [`Self::drain`].
    pub fn has_results(&self) -> bool {
        self.ready.load(Ordering::Acquire) > 0
    }

    /// The shards finished since the last call, in order, without waiting. Returns the
    /// background failure instead, once there is one.
    pub fn drain(&mut self) -> Result<Vec<ShardDone>> {
        let Some(running) = &self.running else {
            return Ok(Vec::new());
        };
        let mut done = Vec::new();
        while let Ok(result) = running.results.try_recv() {
            self.ready.fetch_sub(1, Ordering::AcqRel);
            done.push(result?);
        }
        Ok(done)
    }

    /// Waits for every queued shard, stops the thread, and returns the shards finished
    /// since the last [`Self::drain`], or the first failure.
    pub fn finish(&mut self) -> Result<Vec<ShardDone>> {
        let Some(Running {
            jobs,
            results,
            thread,
        }) = self.running.take()
        else {
            return Ok(Vec::new());
        };
        drop(jobs); // Ends the thread's loop once the queue is empty.
        let joined = thread.join();
        self.pool.clear();
        let mut done = Vec::new();
        for result in results.try_iter() {
            self.ready.fetch_sub(1, Ordering::AcqRel);
            done.push(result?);
        }
        joined.map_err(|_| Error::InvalidValue("the shard writer thread panicked".into()))?;
        Ok(done)
    }

    fn spawn(&self) -> Result<Running> {
        let (jobs, queue) = sync_channel::<Job>(QUEUE);
        let (send, results) = channel();
        let (dir, compression, hashes) = (self.dir.clone(), self.compression, self.hashes.clone());
        let ready = Arc::clone(&self.ready);
        let pool = self.pool.clone();
        let thread = std::thread::Builder::new()
            .name("streamx-shards".into())
            .spawn(move || {
                for job in queue {
                    let result = write_shard_parts(
                        &dir,
                        &job.basename,
                        &job.parts,
                        compression.as_ref(),
                        &hashes,
                    )
                    .map(|(raw, zip)| ShardDone {
                        samples: job.parts.samples,
                        raw,
                        zip,
                    });
                    pool.give(job.parts.body);
                    let failed = result.is_err();
                    // Counted before sending, so `has_results` never misses a result.
                    ready.fetch_add(1, Ordering::AcqRel);
                    if send.send(result).is_err() || failed {
                        break; // Dropping `queue` cancels the shards still waiting.
                    }
                }
            })
            .map_err(|e| Error::io(self.dir.clone(), e))?;
        Ok(Running {
            jobs,
            results,
            thread,
        })
    }
}

fn stopped() -> Error {
    Error::InvalidValue("the shard writer stopped after an earlier failure".into())
}

impl Drop for Finisher {
    /// A writer dropped without `finish` still completes the shards it queued.
    fn drop(&mut self) {
        let _ = self.finish();
    }
}
