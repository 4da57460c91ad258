//! Shard buffers handed back by the finisher once written, so the next shard is framed into
//! memory that is already mapped.
//!
//! A fresh 64 MiB buffer costs a page fault and a kernel zeroing per 4 KiB page on first
//! touch: for 100 KB samples that was about two thirds of the writer's time on the calling
//! thread. The pool keeps at most [`SPARES`] buffers (one being filled, one queued and one
//! being written exist at once), and is emptied when the writer finishes.

use std::sync::{Arc, Mutex, PoisonError};

/// Spare buffers kept at most.
const SPARES: usize = 2;

/// Spare shard buffers shared by a [`super::ShardBuilder`] and its [`super::Finisher`].
#[derive(Debug, Clone, Default)]
pub struct BufferPool {
    spares: Arc<Mutex<Vec<Vec<u8>>>>,
}

impl BufferPool {
    /// An empty pool.
    pub fn new() -> Self {
        Self::default()
    }

    /// An empty buffer: a spare one if there is one (its capacity kept), else a new one.
    pub fn take(&self) -> Vec<u8> {
        self.lock().pop().unwrap_or_default()
    }

    /// An empty buffer with room for at least `capacity` bytes: a spare one if there is one,
    /// else a new one. A spare a little too small is grown rather than dropped: the part
    /// already touched is what saves the page faults.
    pub fn take_sized(&self, capacity: usize) -> Vec<u8> {
        let mut buf = self.take();
        buf.reserve_exact(capacity);
        buf
    }

    /// Keeps `buf`'s memory for a later [`Self::take`], unless [`SPARES`] are kept already.
    pub fn give(&self, mut buf: Vec<u8>) {
        if buf.capacity() == 0 {
            return;
        }
        buf.clear();
        let mut spares = self.lock();
        if spares.len() < SPARES {
            spares.push(buf);
        }
    }

    /// Frees every spare buffer.
    pub fn clear(&self) {
        self.lock().clear();
    }

    /// Number of spare buffers kept.
    pub fn len(&self) -> usize {
        self.lock().len()
    }

    /// Whether no spare buffer is kept.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Vec<Vec<u8>>> {
        self.spares.lock().unwrap_or_else(PoisonError::into_inner)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keeps_capacity_and_bounds_spares() {
        let pool = BufferPool::new();
        assert_eq!(pool.take().capacity(), 0);
        for _ in 0..=SPARES {
            pool.give(vec![1u8; 1000]);
        }
        assert_eq!(pool.len(), SPARES);
        let buf = pool.take();
        assert!(buf.is_empty() && buf.capacity() >= 1000);
        pool.give(Vec::new());
        assert_eq!(pool.len(), SPARES - 1);
        pool.clear();
        assert!(pool.is_empty());
    }
}
