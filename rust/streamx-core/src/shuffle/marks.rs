//! The counted generators of py1s, py1br and py2s, kept between processes as py1e's draws are
//! (see [`super::py1e::draws_store`]): a later start or resume of the same epoch on the node
//! reads how far the epoch generator was counted instead of counting it again.
//!
//! Each of these shuffles counts one generator in order and keeps it at the start of each
//! unit (a span, a piece, a block window, a node's first draw): a flat list of generators,
//! which the algorithm turns back into its own units. File layout, little-endian: `magic (8) |
//! version u32 | key digest u128 | inc u128 | count u64 | the generator after them | count
//! generators | xxh3-128 of everything before`; a generator is `state u128 | has-buffer u8 |
//! buffer u32`. Nothing read is trusted: the checksum, magic, version, key, length (checked
//! before anything is allocated) and each buffer flag are checked, and [`MarkStore::load`]
//! gives nothing on any mismatch.
//!
//! Keeping is best effort, as for py1e: a directory that is not private, a file that cannot
//! be written or does not decode is reported in [`CountCacheStats`] and the count goes on.

use xxhash_rust::xxh3::{xxh3_128, Xxh3};

use super::py1e::draws_store::{self, CountLock, PY2S_RUN};
use super::py1e::{CountCache, CountCacheStats};
use super::rng::Pcg64;

const MAGIC: [u8; 8] = *b"SXMARKS1";
/// Bumped whenever what a count keeps, or how it draws, changes: older files are then ignored.
const VERSION: u32 = 1;
const RNG: usize = 16 + 1 + 4;
const HEADER: usize = 8 + 4 + 16 + 16 + 8 + RNG;
const CHECK: usize = 16;
/// A count is written again once it grew by 1/GROWTH of what the file holds (or by the
/// cache's minimum): a pass over the epoch rewrites the file a few hundred times (about 64
/// times its final size), and a resume recounts at most 1/GROWTH of what came before it.
const GROWTH: u64 = 64;

/// A digest of everything a count depends on: the algorithm, the unit sizes, and `words`.
pub(crate) fn key(algo: &str, sizes: &[i64], words: &[u128]) -> u128 {
    let mut hash = Xxh3::new();
    hash.update(b"streamx counted generators\0");
    hash.update(algo.as_bytes());
    hash.update(&(sizes.len() as u64).to_le_bytes());
    for word in words {
        hash.update(&word.to_le_bytes());
    }
    let mut buf = Vec::with_capacity(8 * 4096);
    for chunk in sizes.chunks(4096) {
        buf.clear();
        buf.extend(chunk.iter().flat_map(|s| s.to_le_bytes()));
        hash.update(&buf);
    }
    hash.digest128()
}

/// One count's file: where it is, what it is of, and what was done with it.
pub(crate) struct MarkStore {
    cache: CountCache,
    prefix: &'static str,
    digest: u128,
    /// The counted generator's `inc`: every kept generator shares it.
    inc: u128,
    /// The most generators a count of this epoch keeps (its file's longest).
    max_marks: usize,
    /// Samples counted here since the file was last read or written, and how many it holds.
    unsaved: u64,
    saved: u64,
    /// No file is written: the directory is not private, or a write failed.
    off: bool,
    pub(crate) stats: CountCacheStats,
}

impl MarkStore {
    /// The store of the count `digest` of a generator with `inc`, if a cache is given. A
    /// directory that is not private is reported, and nothing is read or written there.
    pub(crate) fn open(
        cache: Option<&CountCache>,
        prefix: &'static str,
        digest: u128,
        inc: u128,
        max_marks: usize,
    ) -> Option<Self> {
        let cache = cache?.clone();
        let mut stats = CountCacheStats::default();
        let off = match draws_store::check_private(&cache.dir) {
            Ok(()) => false,
            Err(err) => {
                stats.problem = Some(err.to_string());
                true
            }
        };
        Some(MarkStore {
            cache,
            prefix,
            digest,
            inc,
            max_marks,
            unsaved: 0,
            saved: 0,
            off,
            stats,
        })
    }

    fn name(&self) -> String {
        draws_store::file_name_for(self.prefix, self.digest)
    }

    /// The kept generators and the one after them, if the file holds this count.
    pub(crate) fn load(&mut self) -> Option<(Vec<Pcg64>, Pcg64)> {
        if self.off {
            return None;
        }
        let (dir, name) = (&self.cache.dir, self.name());
        let max_len = file_len(self.max_marks);
        let bytes = match draws_store::read(dir, &name, max_len) {
            Ok(bytes) => bytes?,
            Err(err) => {
                self.stats.problem = Some(format!("{}: {err}", dir.join(&name).display()));
                return None;
            }
        };
        let Some(marks) = decode(&bytes, self.digest, self.inc) else {
            let path = dir.join(&name);
            // py2s's run layout is kept for every epoch of the run, apart from the epoch's.
            let what = if self.prefix == PY2S_RUN {
                "this run's layout draws"
            } else {
                "this epoch's draws"
            };
            self.stats.problem = Some(format!("{} does not hold {what}: ignored", path.display()));
            return None;
        };
        self.unsaved = 0; // what was counted here is in the file too
        Some(marks)
    }

    /// The count's lock, if counting `samples` more would be written; `None` where it would
    /// not be, or where the lock could not be had (counted around, the reason kept).
    pub(crate) fn lock(&mut self, samples: u64) -> Option<CountLock> {
        if self.off || !self.worth(samples) {
            return None;
        }
        let (dir, wait) = (&self.cache.dir, self.cache.wait);
        match draws_store::lock_for(dir, self.prefix, self.digest, wait) {
            Ok(lock) => Some(lock),
            Err(err) => {
                self.stats.problem = Some(err.to_string());
                // A holder that did not let go in time: try, but wait no more, later on.
                self.cache.wait = std::time::Duration::ZERO;
                None
            }
        }
    }

    fn worth(&self, more: u64) -> bool {
        let enough = self.cache.min_samples.max(self.saved / GROWTH);
        self.unsaved.saturating_add(more) >= enough
    }

    /// Notes the generators read (`known` samples' worth, over `nodes` canonical nodes).
    pub(crate) fn loaded(&mut self, known: u64, nodes: usize) {
        self.saved = known;
        self.stats.loaded_nodes = nodes;
    }

    /// Writes the generators `marks()` and `after` (`known` samples' worth, over `nodes`
    /// canonical nodes), once `counted` more samples make it worth it.
    pub(crate) fn save(
        &mut self,
        counted: u64,
        marks: impl FnOnce() -> Vec<Pcg64>,
        after: &Pcg64,
        known: u64,
        nodes: usize,
    ) {
        self.unsaved = self.unsaved.saturating_add(counted);
        if self.off || !self.worth(0) {
            return;
        }
        let bytes = encode(self.digest, self.inc, &marks(), after);
        let name = self.name();
        match draws_store::write_for(&self.cache.dir, self.prefix, &name, &bytes) {
            Ok(()) => {
                self.stats.saved_nodes = nodes;
                self.unsaved = 0;
                self.saved = known;
            }
            Err(err) => {
                let path = self.cache.dir.join(&name);
                self.stats.problem = Some(format!("{}: {err}", path.display()));
                self.off = true;
            }
        }
    }
}

/// The file's length with `marks` generators.
fn file_len(marks: usize) -> u64 {
    (marks as u64)
        .saturating_mul(RNG as u64)
        .saturating_add((HEADER + CHECK) as u64)
}

pub(crate) fn encode(digest: u128, inc: u128, marks: &[Pcg64], after: &Pcg64) -> Vec<u8> {
    let mut out = Vec::with_capacity(file_len(marks.len()) as usize);
    out.extend_from_slice(&MAGIC);
    out.extend_from_slice(&VERSION.to_le_bytes());
    out.extend_from_slice(&digest.to_le_bytes());
    out.extend_from_slice(&inc.to_le_bytes());
    out.extend_from_slice(&(marks.len() as u64).to_le_bytes());
    for rng in std::iter::once(after).chain(marks) {
        let (state, _, buf) = rng.words();
        out.extend_from_slice(&state.to_le_bytes());
        out.push(u8::from(buf.is_some()));
        out.extend_from_slice(&buf.unwrap_or(0).to_le_bytes());
    }
    let check = xxh3_128(&out);
    out.extend_from_slice(&check.to_le_bytes());
    out
}

/// The generators and the one after them, if `bytes` are exactly what [`encode`] wrote for
/// this `digest` and `inc`.
pub(crate) fn decode(bytes: &[u8], digest: u128, inc: u128) -> Option<(Vec<Pcg64>, Pcg64)> {
    let (body, check) = bytes.split_at(bytes.len().checked_sub(CHECK)?);
    if body.len() < HEADER || xxh3_128(body).to_le_bytes() != check {
        return None;
    }
    let word = |at: usize, n: usize| &body[at..at + n];
    let same = word(0, 8) == MAGIC
        && word(8, 4) == VERSION.to_le_bytes()
        && word(12, 16) == digest.to_le_bytes()
        && word(28, 16) == inc.to_le_bytes();
    let count = usize::try_from(u64::from_le_bytes(word(44, 8).try_into().ok()?)).ok()?;
    if !same || bytes.len() as u64 != file_len(count) {
        return None;
    }
    let mut rngs = body[52..].chunks_exact(RNG).map(|g| {
        let state = u128::from_le_bytes(g[..16].try_into().ok()?);
        let buf = u32::from_le_bytes(g[17..].try_into().ok()?);
        let buf = match (g[16], buf) {
            (0, 0) => None,
            (1, buf) => Some(buf),
            _ => return None,
        };
        Some(Pcg64::from_words(state, inc, buf))
    });
    let after = rngs.next()??;
    let marks = rngs.collect::<Option<Vec<_>>>()?;
    Some((marks, after))
}
