//! A scanner for the index as writers lay it out, tried before the general parser.
//!
//! Most of a 650k-shard index's parse went to `serde_json`'s general machinery (a visitor
//! call per value, a key matched as text). This reads the one shape writers produce: an
//! object of `version` and `shards`, entries of the known keys, strings without escapes,
//! integers >= 0 and `null`. Each entry fills the same [`RawObject`] the general parser fills
//! and passes the same [`check`], so a table it returns is the one that parser returns.
//!
//! It never reports an error: at anything outside that shape (an escape, a float, another
//! key, a repeated key, a bad value, bytes that are not JSON) it gives up, and the general
//! parser reads the whole file again and makes the error (every message unchanged). A valid
//! index of another shape costs the scan up to the point where it gave up.

use std::borrow::Cow;

use super::check::{check, Entry};
use super::document::Place;
use super::entry::{RawEntry, RawObject};
use super::file_value::FileValue;
use super::lean::{Lean, Pairs};
use super::table::TableBuilder;

/// `None`: the scan gave up (not an error: the general parser decides).
type Scanned<T> = Option<T>;

/// Bytes that end the plain run of a string: `"`, `\` and the control characters.
const STOPS: [bool; 256] = {
    let mut stops = [false; 256];
    let mut b = 0;
    while b < 0x20 {
        stops[b] = true;
        b += 1;
    }
    stops[b'"' as usize] = true;
    stops[b'\\' as usize] = true;
    stops
};

/// The length of the run of string bytes that `bytes` starts with, up to the first of
/// [`STOPS`] (`None`: none). Eight bytes a step: the names and digests are 10-40 bytes.
fn plain_run(bytes: &[u8]) -> Option<usize> {
    const ONES: u64 = u64::from_ne_bytes([0x01; 8]);
    const HIGHS: u64 = u64::from_ne_bytes([0x80; 8]);
    // High bit of each byte below `n`, exact up to the first such byte.
    let below = |x: u64, n: u8| x.wrapping_sub(ONES * u64::from(n)) & !x & HIGHS;
    let mut at = 0;
    while let Some(chunk) = bytes.get(at..at + 8) {
        let x = u64::from_le_bytes(chunk.try_into().ok()?);
        let stops = below(x ^ (ONES * u64::from(b'"')), 1)
            | below(x ^ (ONES * u64::from(b'\\')), 1)
            | below(x, 0x20);
        if stops != 0 {
            return Some(at + (stops.trailing_zeros() / 8) as usize);
        }
        at += 8;
    }
    let tail = bytes[at..].iter().position(|&b| STOPS[b as usize])?;
    Some(at + tail)
}

/// Reads `bytes` as an index of the usual shape; `shown` names it in the checks' places.
pub(super) fn scan(bytes: &[u8], shown: &str) -> Scanned<TableBuilder> {
    // Checked as UTF-8 in one pass (a tenth of the time of a check of each string), strings
    // are then slices of the text.
    let text = std::str::from_utf8(bytes).ok()?;
    let mut s = Scanner {
        text,
        b: bytes,
        i: 0,
        spare: Spare::default(),
    };
    s.eat(b'{')?;
    let (mut version, mut shards) = (false, None);
    loop {
        match s.key()? {
            b"version" if !version => {
                // Only the integer 2: any other spelling is the general parser's to judge.
                (s.u64()? == 2).then_some(())?;
                version = true;
            }
            b"shards" if shards.is_none() => shards = Some(s.shards(shown)?),
            _ => return None,
        }
        if !s.more(b'}')? {
            break;
        }
    }
    s.ws();
    (version && s.i == bytes.len()).then_some(())?;
    shards
}

struct Scanner<'de> {
    text: &'de str,
    b: &'de [u8],
    i: usize,
    spare: Spare<'de>,
}

/// The lists of the entry before, emptied for the next: each entry has three or four, and
/// reusing them saves an allocation and a free each.
#[derive(Default)]
struct Spare<'de> {
    texts: Vec<Vec<Cow<'de, str>>>,
    sizes: Vec<Option<u64>>,
}

impl<'de> Spare<'de> {
    fn keep(&mut self, entry: Entry<'de>) {
        let mut texts = [entry.hashes, Vec::new(), Vec::new()];
        if let Some(schema) = entry.schema {
            (texts[1], texts[2], self.sizes) = (schema.names, schema.encodings, schema.sizes);
        }
        for mut list in texts.into_iter().filter(|l| l.capacity() > 0) {
            list.clear();
            self.texts.push(list);
        }
        self.sizes.clear();
    }
}

impl<'de> Scanner<'de> {
    fn ws(&mut self) {
        while let Some(b' ' | b'\n' | b'\r' | b'\t') = self.b.get(self.i) {
            self.i += 1;
        }
    }

    /// The next byte after whitespace, not consumed.
    fn peek(&mut self) -> Scanned<u8> {
        self.ws();
        self.b.get(self.i).copied()
    }

    fn eat(&mut self, byte: u8) -> Scanned<()> {
        (self.peek()? == byte).then(|| self.i += 1)
    }

    /// After a member or element: `true` at `,`, `false` at `close` (both consumed).
    fn more(&mut self, close: u8) -> Scanned<bool> {
        let next = self.peek()?;
        self.i += 1;
        match next {
            b',' => Some(true),
            b if b == close => Some(false),
            _ => None,
        }
    }

    /// Opens a list or object: `true` if it holds something, `false` if it closed at once.
    fn open(&mut self, open: u8, close: u8) -> Scanned<bool> {
        self.eat(open)?;
        if self.peek()? == close {
            self.i += 1;
            return Some(false);
        }
        Some(true)
    }

    /// A string without escapes, borrowed from the text.
    fn str(&mut self) -> Scanned<&'de str> {
        self.eat(b'"')?;
        let start = self.i;
        let end = start + plain_run(self.b.get(start..)?)?;
        (*self.b.get(end)? == b'"').then_some(())?;
        self.i = end + 1;
        self.text.get(start..end)
    }

    /// An object key and its `:`.
    fn key(&mut self) -> Scanned<&'de [u8]> {
        let key = self.str()?;
        self.eat(b':')?;
        Some(key.as_bytes())
    }

    fn is_null(&mut self) -> Scanned<bool> {
        if self.peek()? != b'n' {
            return Some(false);
        }
        (self.b.get(self.i..self.i + 4)? == b"null").then_some(())?;
        self.i += 4;
        Some(true)
    }

    /// An integer >= 0 that fits a `u64`, written plainly (no sign, fraction, exponent or
    /// leading zero).
    fn u64(&mut self) -> Scanned<u64> {
        self.ws();
        let start = self.i;
        let mut n: u64 = 0;
        while let Some(&d @ b'0'..=b'9') = self.b.get(self.i) {
            n = n.checked_mul(10)?.checked_add(u64::from(d - b'0'))?;
            self.i += 1;
        }
        let len = self.i - start;
        let plain = len == 1 || (len > 1 && self.b[start] != b'0');
        let fraction = matches!(self.b.get(self.i), Some(b'.' | b'e' | b'E'));
        (plain && !fraction).then_some(n)
    }

    fn opt_str(&mut self) -> Scanned<Option<Cow<'de, str>>> {
        if self.is_null()? {
            return Some(None);
        }
        Some(Some(Cow::Borrowed(self.str()?)))
    }

    fn strs(&mut self) -> Scanned<Vec<Cow<'de, str>>> {
        let mut items = self.spare.texts.pop().unwrap_or_default();
        if self.open(b'[', b']')? {
            loop {
                items.push(Cow::Borrowed(self.str()?));
                if !self.more(b']')? {
                    break;
                }
            }
        }
        Some(items)
    }

    fn sizes(&mut self) -> Scanned<Vec<Option<u64>>> {
        let mut items = std::mem::take(&mut self.spare.sizes);
        if self.open(b'[', b']')? {
            loop {
                items.push(if self.is_null()? {
                    None
                } else {
                    Some(self.u64()?)
                });
                if !self.more(b']')? {
                    break;
                }
            }
        }
        Some(items)
    }

    /// A file object of `basename`, `bytes` and `hashes`, each at most once; `None` for
    /// `null` (as the checks read a `null` file: no such file).
    fn file(&mut self) -> Scanned<Option<FileValue<'de>>> {
        if self.is_null()? {
            return Some(None);
        }
        let (mut basename, mut bytes, mut hashes) = (None, None, None);
        if self.open(b'{', b'}')? {
            loop {
                match self.key()? {
                    b"basename" if basename.is_none() => {
                        basename = Some(Lean::Typed(Cow::Borrowed(self.str()?)));
                    }
                    b"bytes" if bytes.is_none() => bytes = Some(Lean::Typed(self.u64()?)),
                    b"hashes" if hashes.is_none() => hashes = Some(Lean::Typed(self.pairs()?)),
                    _ => return None,
                }
                if !self.more(b'}')? {
                    break;
                }
            }
        }
        Some(Some(FileValue::Object {
            basename,
            bytes,
            hashes,
        }))
    }

    /// An object of strings with distinct keys.
    fn pairs(&mut self) -> Scanned<Pairs<'de>> {
        let mut pairs = Pairs::default();
        if self.open(b'{', b'}')? {
            loop {
                let key = self.str()?;
                self.eat(b':')?;
                let value = self.str()?;
                pairs.0.iter().all(|(k, _)| k != key).then_some(())?;
                pairs.0.push((Cow::Borrowed(key), Cow::Borrowed(value)));
                if !self.more(b'}')? {
                    break;
                }
            }
        }
        Some(pairs)
    }

    /// The `shards` list, each entry checked and folded into the table.
    fn shards(&mut self, shown: &str) -> Scanned<TableBuilder> {
        let mut table = TableBuilder::default();
        let mut slot = RawObject::default();
        if self.open(b'[', b']')? {
            for shard in 0usize.. {
                self.entry(&mut slot)?;
                let place = Place { path: shown, shard };
                let entry = check(RawEntry::Object, &mut slot, &place).ok()?;
                table.push(&entry);
                self.spare.keep(entry);
                if !self.more(b']')? {
                    break;
                }
            }
        }
        Some(table)
    }

    /// One entry object into `o`, each known key at most once, no other key.
    fn entry(&mut self, o: &mut RawObject<'de>) -> Scanned<()> {
        *o = RawObject::default();
        if !self.open(b'{', b'}')? {
            return Some(());
        }
        let (mut seen, mut columns_seen) = (0u32, 0);
        loop {
            self.eat(b'"')?;
            let (bit, len) = slot_of(self.b.get(self.i..)?)?;
            self.i += len;
            self.eat(b':')?;
            (seen & (1 << bit) == 0).then_some(())?;
            seen |= 1 << bit;
            match bit {
                0 => o.format = Some(Lean::Typed(Cow::Borrowed(self.str()?))),
                1 => o.version = Some(Lean::Typed(self.u64()?)),
                2 => o.compression = Some(Lean::Typed(self.opt_str()?)),
                3 => o.samples = Some(Lean::Typed(self.u64()?)),
                4 => o.hashes = Some(Lean::Typed(self.strs()?)),
                5 => {
                    let limit = if self.is_null()? {
                        None
                    } else {
                        Some(i64::try_from(self.u64()?).ok()?)
                    };
                    o.size_limit = Some(Lean::Typed(limit));
                }
                6..=9 => o.files[bit - 6] = self.file()?,
                _ => {
                    // Where the general parser records a column key: after 0 other keys.
                    o.column_places[bit - 10] = Some((0, columns_seen));
                    columns_seen += 1;
                    match bit {
                        10 => o.names = Some(Lean::Typed(self.strs()?)),
                        11 => o.encodings = Some(Lean::Typed(self.strs()?)),
                        _ => o.sizes = Some(Lean::Typed(self.sizes()?)),
                    }
                }
            }
            if !self.more(b'}')? {
                return Some(());
            }
        }
    }
}

/// The slot of the entry key that `after_quote` starts with (its name and closing quote),
/// and the bytes that took: 0-5 the scalars and `hashes`, 6-9 the file keys, 10-12 the
/// column keys (`entry::FILE_KEYS`, `entry::COLUMN_KEYS`); `None` for any other key. Matched
/// in place, by its first bytes and then one comparison with a constant: a dozen keys are
/// read for each of 650k entries.
fn slot_of(after_quote: &[u8]) -> Option<(usize, usize)> {
    let at = |i: usize| after_quote.get(i).copied().unwrap_or(0);
    let is = |name: &[u8], slot: usize| {
        (after_quote.get(..name.len()) == Some(name)).then_some((slot, name.len()))
    };
    match at(0) {
        b'f' => is(b"format\"", 0),
        b'v' => is(b"version\"", 1),
        b'h' => is(b"hashes\"", 4),
        b's' if at(1) == b'a' => is(b"samples\"", 3),
        b's' => is(b"size_limit\"", 5),
        b'r' if at(4) == b'd' => is(b"raw_data\"", 6),
        b'r' => is(b"raw_meta\"", 8),
        b'z' if at(4) == b'd' => is(b"zip_data\"", 7),
        b'z' => is(b"zip_meta\"", 9),
        b'c' if at(2) == b'm' => is(b"compression\"", 2),
        b'c' => match at(7) {
            b'n' => is(b"column_names\"", 10),
            b'e' => is(b"column_encodings\"", 11),
            _ => is(b"column_sizes\"", 12),
        },
        _ => None,
    }
}

#[cfg(test)]
mod tests;
