//! py2s's run layout, a piece at a time: every shard's samples scattered once per run by the
//! run generator, shard after shard in run order.
//!
//! The run generator is counted once, in order, only through the shards a piece needs,
//! keeping per shard the generator where its shuffle starts. The layout does not depend on
//! the epoch, so given a [`CountCache`] the kept generators are read from and written to the
//! run's own file ([`MarkStore`]): every epoch of the run reuses them.

use super::marks::{key, MarkStore};
use super::py1e::draws_store::PY2S_RUN;
use super::py1e::{CountCache, CountCacheStats};
use super::rng::Pcg64;
use super::spans::{shard_spans, Span};

/// The run layout of a py2s run.
pub(crate) struct RunLayout {
    /// Shards in run order, and where each one's samples start in the run layout.
    shards: Vec<Span>,
    shard_starts: Vec<i64>,
    /// Per shard counted so far, the run generator at its shuffle.
    fixed: Vec<Pcg64>,
    /// The run generator after the counted shards.
    rng: Pcg64,
    store: Option<MarkStore>,
}

impl RunLayout {
    /// The layout's shards; returns also the layout as ranges, in run order, and the total.
    pub(crate) fn new(
        sizes: &[i64],
        seed: u128,
        cache: Option<&CountCache>,
    ) -> (Self, Vec<Span>, i64) {
        let (mut shards, total) = shard_spans(sizes);
        let mut rng = Pcg64::new(seed);
        rng.shuffle(&mut shards);
        let mut at = 0;
        let mut shard_starts = Vec::with_capacity(shards.len());
        let layout: Vec<Span> = shards
            .iter()
            .map(|&(b, e)| {
                shard_starts.push(at);
                at += e - b;
                (at - (e - b), at)
            })
            .collect();
        let digest = key("py2s-run", sizes, &[seed]);
        let store = MarkStore::open(cache, PY2S_RUN, digest, rng.words().1, shards.len());
        let mut run = RunLayout {
            shards,
            shard_starts,
            fixed: Vec::new(),
            rng,
            store,
        };
        run.load();
        (run, layout, total)
    }

    /// What was done with the run's [`CountCache`] file, if a cache was given.
    pub(crate) fn count_cache_stats(&self) -> Option<&CountCacheStats> {
        self.store.as_ref().map(|s| &s.stats)
    }

    /// The layout positions of the first `shards` shards.
    fn known(&self, shards: usize) -> u64 {
        self.shard_starts.get(shards).map_or_else(
            || self.shards.iter().map(|&(b, e)| (e - b) as u64).sum(),
            |&s| s as u64,
        )
    }

    /// Takes the file's generators, if it holds more than are known here.
    fn load(&mut self) {
        let Some((marks, after)) = self.store.as_mut().and_then(MarkStore::load) else {
            return;
        };
        if marks.len() > self.fixed.len() && marks.len() <= self.shards.len() {
            let known = self.known(marks.len());
            self.fixed = marks;
            self.rng = after;
            if let Some(store) = &mut self.store {
                store.loaded(known, 0);
            }
        }
    }

    /// Counts the run generator through every shard starting before layout position `end`:
    /// under the run's lock, after reading the file again, where the count will be written.
    fn count_through(&mut self, end: i64) {
        let upto = self.shard_starts.partition_point(|&s| s < end);
        if self.fixed.len() >= upto {
            return;
        }
        let from = self.fixed.len();
        let more = self.known(upto) - self.known(from);
        let lock = self.store.as_mut().and_then(|s| s.lock(more));
        if lock.is_some() {
            self.load();
        }
        let from = self.fixed.len();
        while self.fixed.len() < upto {
            let (begin, stop) = self.shards[self.fixed.len()];
            self.fixed.push(self.rng.clone());
            self.rng.skip_shuffle((stop - begin) as usize);
        }
        let to = self.fixed.len();
        let (counted, known) = (self.known(to) - self.known(from), self.known(to));
        if let Some(mut store) = self.store.take() {
            store.save(counted, || self.fixed.clone(), &self.rng, known, 0);
            self.store = Some(store);
        }
        drop(lock); // once written, for the processes waiting to read it
    }

    /// The run layout's samples at positions `[begin, end)`.
    pub(crate) fn samples(&mut self, begin: i64, end: i64) -> Vec<i64> {
        self.count_through(end);
        let mut out = Vec::with_capacity((end - begin) as usize);
        let mut i = self
            .shard_starts
            .partition_point(|&s| s <= begin)
            .saturating_sub(1);
        let mut samples = Vec::new();
        while i < self.shards.len() && self.shard_starts[i] < end {
            let (lo, hi) = self.shards[i];
            let at = self.shard_starts[i];
            let (from, to) = (begin.max(at) - at, end.min(at + hi - lo) - at);
            if from < to {
                samples.clear();
                samples.extend(lo..hi);
                self.fixed[i].clone().shuffle(&mut samples);
                out.extend_from_slice(&samples[from as usize..to as usize]);
            }
            i += 1;
        }
        out
    }
}
