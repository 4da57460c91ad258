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

use super::check::check;
use super::document::Place;
use super::entry::{RawEntry, RawObject, COLUMN_KEYS, FILE_KEYS};
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

/// Reads `bytes` as an index of the usual shape; `shown` names it in the checks' places.
pub(super) fn scan(bytes: &[u8], shown: &str) -> Scanned<TableBuilder> {
    let mut s = Scanner { b: bytes, i: 0 };
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
    b: &'de [u8],
    i: usize,
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

    /// A string without escapes, borrowed from the bytes (checked as UTF-8: the bytes are
    /// only ever checked string by string).
    fn str(&mut self) -> Scanned<&'de str> {
        self.eat(b'"')?;
        let start = self.i;
        let rest = self.b.get(start..)?;
        let len = rest.iter().position(|&b| STOPS[b as usize])?;
        (rest[len] == b'"').then_some(())?;
        self.i = start + len + 1;
        std::str::from_utf8(&rest[..len]).ok()
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
        let mut items = Vec::new();
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
        let mut items = Vec::new();
        if self.open(b'[', b']')? {
            loop {
                items.push(if self.is_null()? { None } else { Some(self.u64()?) });
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
                table.push(&check(RawEntry::Object, &mut slot, &place).ok()?);
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
            let key = self.key()?;
            let bit = slot_of(key)?;
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

/// The slot of an entry key: 0-5 the scalars and `hashes`, 6-9 [`FILE_KEYS`], 10-12
/// [`COLUMN_KEYS`]; `None` for any other key. By length first: a dozen keys are matched
/// for each of 650k entries, and most lengths leave one candidate.
fn slot_of(key: &[u8]) -> Option<usize> {
    let (slot, name): (usize, &str) = match key.len() {
        6 if key[0] == b'f' => (0, "format"),
        6 => (4, "hashes"),
        7 if key[0] == b'v' => (1, "version"),
        7 => (3, "samples"),
        8 => match (key[0], key[4]) {
            (b'r', b'd') => (6, FILE_KEYS[0]),
            (b'z', b'd') => (7, FILE_KEYS[1]),
            (b'r', _) => (8, FILE_KEYS[2]),
            _ => (9, FILE_KEYS[3]),
        },
        10 => (5, "size_limit"),
        11 => (2, "compression"),
        12 if key.get(7) == Some(&b'n') => (10, COLUMN_KEYS[0]),
        16 => (11, COLUMN_KEYS[1]),
        12 => (12, COLUMN_KEYS[2]),
        _ => return None,
    };
    (key == name.as_bytes()).then_some(slot)
}

#[cfg(test)]
mod tests {
    use super::{scan, slot_of, COLUMN_KEYS, FILE_KEYS};

    #[test]
    fn every_key_has_its_slot() {
        let scalars = ["format", "version", "compression", "samples", "hashes", "size_limit"];
        let keys = scalars.iter().chain(&FILE_KEYS).chain(&COLUMN_KEYS);
        for (slot, key) in keys.enumerate() {
            assert_eq!(slot_of(key.as_bytes()), Some(slot), "{key}");
        }
        for odd in ["formax", "hashez", "raw_dat_", "zip_metx", "column_namez", "", "x"] {
            assert_eq!(slot_of(odd.as_bytes()), None, "{odd}");
        }
    }

    const ENTRY: &str = r#"{"column_encodings": ["str", "int"], "column_names": ["text", "id"], "column_sizes": [null, 8], "compression": "zstd", "format": "mds", "hashes": [], "raw_data": {"basename": "shard.00000.mds", "bytes": 4000, "hashes": {"sha1": "ab"}}, "samples": 9, "size_limit": 67108864, "version": 2, "zip_data": null}"#;

    fn doc(entry: &str) -> String {
        format!(r#"{{"shards": [{entry}], "version": 2}}"#)
    }

    #[test]
    fn reads_the_usual_layout() {
        assert!(scan(doc(ENTRY).as_bytes(), "i").is_some());
        assert!(scan(br#"{"version": 2, "shards": []}"#, "i").is_some());
        assert!(scan(br#" {"version":2,"shards":[ ]} "#, "i").is_some());
        assert_eq!(scan(doc(ENTRY).as_bytes(), "i").map(|t| t.finish().len()), Some(1));
    }

    #[test]
    fn leaves_everything_else_to_the_general_parser() {
        let odd = [
            ENTRY.replace("shard.00000", "shard.\\u0030"),
            ENTRY.replace(r#""samples": 9"#, r#""samples": 9.0"#),
            ENTRY.replace(r#""samples": 9"#, r#""samples": 09"#),
            ENTRY.replace(r#""samples": 9"#, r#""samples": 18446744073709551616"#),
            ENTRY.replace(r#""samples": 9"#, r#""samples": 9, "samples": 9"#),
            ENTRY.replace(r#""samples": 9"#, r#""samples": 9, "other": 9"#),
            ENTRY.replace(r#""sha1": "ab""#, r#""sha1": "ab", "sha1": "ab""#),
            ENTRY.replace(r#""bytes": 4000"#, r#""bytes": 4000, "bytes": 4000"#),
            ENTRY.replace(r#""size_limit": 67108864"#, r#""size_limit": 9223372036854775808"#),
            // Fails its checks: the general parser makes the message.
            ENTRY.replace(r#""samples": 9"#, r#""samples": 999"#),
            ENTRY.replace("\"mds\"", "\"mdz\""),
        ];
        for entry in &odd {
            assert!(scan(doc(entry).as_bytes(), "i").is_none(), "{entry}");
        }
        for whole in [
            String::new(),
            format!("{} ", doc(ENTRY)).replace("], ", "] "),
            doc(ENTRY).replace(r#""version": 2"#, r#""version": 2, "x": 1"#),
            doc(ENTRY).replace(r#""version": 2"#, r#""version": 1"#),
            doc(ENTRY).replace(r#", "version": 2"#, ""),
            format!("{}x", doc(ENTRY)),
            doc(&ENTRY.replace("shard", "sh\u{e4}rd")).replace('\u{e4}', "\u{1}"),
        ] {
            assert!(scan(whole.as_bytes(), "i").is_none(), "{whole}");
        }
        // Not UTF-8 in a string.
        let mut bytes = doc(ENTRY).into_bytes();
        let at = bytes.iter().position(|&b| b == b'.').unwrap();
        bytes[at] = 0xff;
        assert!(scan(&bytes, "i").is_none());
    }
}
