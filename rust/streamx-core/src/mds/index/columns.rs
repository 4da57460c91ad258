//! Compact storage for an index's per-shard values: strings in one arena, repeated values
//! (formats, compressions, column layouts) interned once and referred to by id.

use std::collections::HashMap;
use std::hash::Hash;

use serde::{Deserialize, Serialize};

/// Many strings in one buffer: string `i` is `text[ends[i - 1]..ends[i]]`.
#[derive(Debug, Default, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct StrArena {
    text: String,
    ends: Vec<u64>,
}

impl StrArena {
    /// Appends `s` and returns its id.
    pub fn push(&mut self, s: &str) -> usize {
        self.text.push_str(s);
        self.ends.push(self.text.len() as u64);
        self.ends.len() - 1
    }

    /// String `id`.
    pub fn get(&self, id: usize) -> &str {
        let start = if id == 0 {
            0
        } else {
            self.ends[id - 1] as usize
        };
        &self.text[start..self.ends[id] as usize]
    }

    /// Number of strings.
    pub fn len(&self) -> usize {
        self.ends.len()
    }

    /// Every string, in order.
    pub fn iter(&self) -> impl Iterator<Item = &str> {
        let starts = std::iter::once(0).chain(self.ends.iter().copied());
        starts
            .zip(&self.ends)
            .map(|(start, &end)| &self.text[start as usize..end as usize])
    }

    /// Whether some string holds `byte` (one scan of the whole buffer).
    pub fn any_holds(&self, byte: u8) -> bool {
        self.text.as_bytes().contains(&byte)
    }

    /// Whether there are no strings.
    pub fn is_empty(&self) -> bool {
        self.ends.is_empty()
    }

    fn is_consistent(&self) -> bool {
        let mut last = 0u64;
        self.ends.iter().all(|&e| {
            let ok = e >= last
                && (e as usize) <= self.text.len()
                && self.text.is_char_boundary(e as usize);
            last = e;
            ok
        })
    }

    fn shrink(&mut self) {
        self.text.shrink_to_fit();
        self.ends.shrink_to_fit();
    }
}

/// Up to this many distinct values, a value is found by comparing it with each (no hash).
const FEW: usize = 8;

/// Distinct values, each stored once; `ids` finds a value's id while building.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Interner<T: Eq + Hash> {
    values: Vec<T>,
    #[serde(skip)]
    ids: HashMap<T, u32>,
    /// The id `intern` returned last.
    #[serde(skip)]
    last: Option<u32>,
}

impl<T: Eq + Hash> Default for Interner<T> {
    fn default() -> Self {
        Self {
            values: Vec::new(),
            ids: HashMap::new(),
            last: None,
        }
    }
}

impl<T: Eq + Hash + Clone> Interner<T> {
    /// The id of `value`, adding it if new.
    pub fn intern(&mut self, value: T) -> u32 {
        // Entries mostly repeat the previous one's value: a compare is cheaper than a hash.
        if let Some(last) = self.last {
            if self.values[last as usize] == value {
                return last;
            }
        }
        let id = if let Some(&id) = self.ids.get(&value) {
            id
        } else {
            let id = self.values.len() as u32;
            self.ids.insert(value.clone(), id);
            self.values.push(value);
            id
        };
        self.last = Some(id);
        id
    }

    /// The id of the value that `view` stands for, adding it (made by `own`) if new. The
    /// value is looked for among the few values kept (the last id's first) before one is
    /// made, so that an entry like those before it costs no allocation.
    pub fn intern_like<V: ?Sized>(
        &mut self,
        view: &V,
        same: impl Fn(&T, &V) -> bool,
        own: impl FnOnce(&V) -> T,
    ) -> u32 {
        if let Some(last) = self.last {
            if same(&self.values[last as usize], view) {
                return last;
            }
        }
        if self.values.len() <= FEW {
            if let Some(id) = self.values.iter().position(|v| same(v, view)) {
                self.last = Some(id as u32);
                return id as u32;
            }
        }
        self.intern(own(view))
    }

    /// Every distinct value, by id.
    pub fn values(&self) -> &[T] {
        &self.values
    }

    /// Drops the lookup table once building is done.
    pub fn freeze(&mut self) {
        self.ids = HashMap::new();
        self.last = None;
    }
}

/// One hash digest of a file: interned algorithm id and the digest's id in an arena.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct HashRef {
    pub algo: u32,
    pub digest: u32,
}

/// One optional file of every shard (for example every shard's `zip_data`).
#[derive(Debug, Default, Clone, Serialize, Deserialize)]
pub struct FileColumn {
    /// Size in bytes, or [`FileColumn::ABSENT`] for a shard without this file.
    pub bytes: Vec<u64>,
    /// Basename ids into `names`, for present files only, in shard order.
    names: StrArena,
    /// For each shard, the number of present files up to and including it.
    present_ends: Vec<u32>,
    /// For each present file, the end of its hashes in `hashes`.
    hash_ends: Vec<u32>,
    hashes: Vec<HashRef>,
}

/// A file of one shard, as [`FileColumn::get`] reads it back.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FileView<'a> {
    pub basename: &'a str,
    pub bytes: u64,
    pub hashes: &'a [HashRef],
}

impl FileColumn {
    /// The size marking an absent file (a real size never reaches it: files are < 2^63).
    pub const ABSENT: u64 = u64::MAX;

    /// Records the next shard's file (or its absence).
    pub fn push(&mut self, file: Option<(&str, u64, &[HashRef])>) {
        let present = self.names.len() as u32;
        match file {
            None => {
                self.bytes.push(Self::ABSENT);
                self.present_ends.push(present);
            }
            Some((name, bytes, hashes)) => {
                self.names.push(name);
                self.bytes.push(bytes);
                self.present_ends.push(present + 1);
                self.hashes.extend_from_slice(hashes);
                self.hash_ends.push(self.hashes.len() as u32);
            }
        }
    }

    /// Shard `shard`'s file, if it has one.
    pub fn get(&self, shard: usize) -> Option<FileView<'_>> {
        let end = self.present_ends[shard] as usize;
        let start = if shard == 0 {
            0
        } else {
            self.present_ends[shard - 1] as usize
        };
        if end == start {
            return None;
        }
        let id = start;
        let hash_start = if id == 0 {
            0
        } else {
            self.hash_ends[id - 1] as usize
        };
        Some(FileView {
            basename: self.names.get(id),
            bytes: self.bytes[shard],
            hashes: &self.hashes[hash_start..self.hash_ends[id] as usize],
        })
    }

    /// Whether this column describes exactly `shards` shards, every reference in bounds.
    pub(super) fn is_consistent(&self, shards: usize) -> bool {
        let files = self.names.len();
        self.bytes.len() == shards
            && self.present_ends.len() == shards
            && self.present_ends.last().map_or(0, |&e| e as usize) == files
            && self
                .present_ends
                .windows(2)
                .all(|w| w[0] <= w[1] && w[1] - w[0] <= 1)
            && self.hash_ends.len() == files
            && self.hash_ends.windows(2).all(|w| w[0] <= w[1])
            && self.hash_ends.last().map_or(0, |&e| e as usize) == self.hashes.len()
            && self.names.is_consistent()
    }

    /// Every hash reference of every file.
    pub(super) fn hash_refs(&self) -> &[HashRef] {
        &self.hashes
    }

    /// The basenames of the shards that have this file, in shard order.
    pub fn names(&self) -> &StrArena {
        &self.names
    }

    /// Whether no shard has this file.
    pub fn is_empty(&self) -> bool {
        self.names.is_empty()
    }

    pub(super) fn shrink(&mut self) {
        self.bytes.shrink_to_fit();
        self.names.shrink();
        self.present_ends.shrink_to_fit();
        self.hash_ends.shrink_to_fit();
        self.hashes.shrink_to_fit();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn arena_and_files_round_trip() {
        let mut files = FileColumn::default();
        let h = [HashRef { algo: 0, digest: 7 }];
        files.push(Some(("a.mds", 10, &h)));
        files.push(None);
        files.push(Some(("b.mds", 0, &[])));
        assert_eq!(files.get(0).unwrap().basename, "a.mds");
        assert_eq!(files.get(0).unwrap().hashes, &h);
        assert_eq!(files.get(1), None);
        let b = files.get(2).unwrap();
        assert_eq!((b.basename, b.bytes, b.hashes.len()), ("b.mds", 0, 0));
        let mut interner = Interner::default();
        assert_eq!(interner.intern("x"), 0);
        assert_eq!(interner.intern("y"), 1);
        assert_eq!(interner.intern("x"), 0);
        assert_eq!(interner.values(), ["x", "y"]);
    }
}
