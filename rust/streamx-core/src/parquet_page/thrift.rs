//! A Parquet page header, read from the Thrift compact protocol: the few fields a page's
//! decoding needs, every other field skipped. The reader also serves the footer's other
//! structs (`offset_index`). Each length and count is checked against the
//! bytes left, and nesting is bounded, so a malformed header is an error, never a panic.

/// Structs nested deeper than this are refused (a page header nests three deep).
const MAX_DEPTH: u32 = 16;

/// The page kinds of `parquet.thrift`'s `PageType`.
pub const DATA_PAGE: i32 = 0;
pub const DICTIONARY_PAGE: i32 = 2;
pub const DATA_PAGE_V2: i32 = 3;

/// What a page's decoding needs from its header.
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub struct PageHeader {
    pub kind: i32,
    pub uncompressed_size: i32,
    pub compressed_size: i32,
    /// Values (nulls included) of a data page, entries of a dictionary page.
    pub num_values: i32,
    pub encoding: i32,
    /// v1 only: how its definition levels are encoded (3: RLE).
    pub def_encoding: i32,
    /// v2 only: the bytes of its levels, stored before its (maybe compressed) values.
    pub def_bytes: i32,
    pub rep_bytes: i32,
    /// v2 only: whether its values are compressed (Thrift default: true).
    pub compressed: bool,
}

/// Why a page header did not read.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Fault {
    /// Its bytes end before it does: more of them may hold it whole.
    Short(&'static str),
    /// It contradicts the format, however many bytes follow.
    Bad(String),
}

impl From<Fault> for String {
    fn from(fault: Fault) -> String {
        match fault {
            Fault::Short(why) => why.to_owned(),
            Fault::Bad(why) => why,
        }
    }
}

/// Reads a page header from the start of `bytes`; returns it and its length in bytes.
pub fn page_header(bytes: &[u8]) -> Result<(PageHeader, usize), String> {
    read_header(bytes).map_err(String::from)
}

/// [`page_header`], telling a header cut short by the end of `bytes` from a bad one.
pub fn read_header(bytes: &[u8]) -> Result<(PageHeader, usize), Fault> {
    let mut reader = Reader::new(bytes, "a page header");
    let mut header = PageHeader {
        kind: -1,
        compressed: true,
        ..PageHeader::default()
    };
    reader.fields(0, &mut |r, id, kind| match (id, kind) {
        (1, I32) => r.int().map(|v| header.kind = v),
        (2, I32) => r.int().map(|v| header.uncompressed_size = v),
        (3, I32) => r.int().map(|v| header.compressed_size = v),
        (5 | 7, STRUCT) => r.fields(1, &mut |r, id, kind| match (id, kind) {
            (1, I32) => r.int().map(|v| header.num_values = v),
            (2, I32) => r.int().map(|v| header.encoding = v),
            (3, I32) => r.int().map(|v| header.def_encoding = v),
            _ => r.skip(kind, 2),
        }),
        (8, STRUCT) => r.fields(1, &mut |r, id, kind| match (id, kind) {
            (1, I32) => r.int().map(|v| header.num_values = v),
            (4, I32) => r.int().map(|v| header.encoding = v),
            (5, I32) => r.int().map(|v| header.def_bytes = v),
            (6, I32) => r.int().map(|v| header.rep_bytes = v),
            (7, TRUE) => {
                header.compressed = true;
                Ok(())
            }
            (7, FALSE) => {
                header.compressed = false;
                Ok(())
            }
            _ => r.skip(kind, 2),
        }),
        _ => r.skip(kind, 1),
    })?;
    if header.kind < 0 {
        return Err(Fault::Bad("a page header without its type".to_owned()));
    }
    Ok((header, reader.at()))
}

const TRUE: u8 = 1;
const FALSE: u8 = 2;
const BYTE: u8 = 3;
const I16: u8 = 4;
pub(super) const I32: u8 = 5;
pub(super) const I64: u8 = 6;
const DOUBLE: u8 = 7;
const BINARY: u8 = 8;
pub(super) const LIST: u8 = 9;
const SET: u8 = 10;
const MAP: u8 = 11;
pub(super) const STRUCT: u8 = 12;

/// A struct's field, by id and type; it must consume the field's value.
pub(super) type Field<'f, 'a> = dyn FnMut(&mut Reader<'a>, i16, u8) -> Result<(), Fault> + 'f;
/// A list's item, by its element type and place; it must consume the item.
pub(super) type Item<'f, 'a> = dyn FnMut(&mut Reader<'a>, u8, u64) -> Result<(), Fault> + 'f;

/// Compact-protocol values read in order from `bytes`; `what` (such as "a page header")
/// names what they are in errors.
pub(super) struct Reader<'a> {
    bytes: &'a [u8],
    at: usize,
    what: &'static str,
}

impl<'a> Reader<'a> {
    pub(super) fn new(bytes: &'a [u8], what: &'static str) -> Self {
        Reader { bytes, at: 0, what }
    }

    /// The bytes read so far.
    pub(super) fn at(&self) -> usize {
        self.at
    }

    /// The items of a list (or set), each handed to `item`. Every item takes a byte or
    /// more, so a size past the bytes left is refused before any is read.
    pub(super) fn list(&mut self, item: &mut Item<'_, 'a>) -> Result<(), Fault> {
        let head = self.byte()?;
        let size = match head >> 4 {
            15 => self.varint()?,
            n => u64::from(n),
        };
        if size > (self.bytes.len() - self.at) as u64 {
            return Err(Fault::Short("a list longer than its bytes"));
        }
        (0..size).try_for_each(|k| item(self, head & 0x0f, k))
    }

    /// An `i64` field's value.
    pub(super) fn long(&mut self) -> Result<i64, Fault> {
        self.zigzag()
    }

    fn byte(&mut self) -> Result<u8, Fault> {
        let b = *self
            .bytes
            .get(self.at)
            .ok_or(Fault::Short("the page header ends early"))?;
        self.at += 1;
        Ok(b)
    }

    fn varint(&mut self) -> Result<u64, Fault> {
        let mut value = 0u64;
        for shift in (0..70).step_by(7) {
            let b = self.byte()?;
            value |= u64::from(b & 0x7f) << shift.min(63);
            if b & 0x80 == 0 {
                return Ok(value);
            }
        }
        Err(Fault::Bad(format!(
            "{} varint longer than ten bytes",
            self.what
        )))
    }

    fn zigzag(&mut self) -> Result<i64, Fault> {
        let v = self.varint()?;
        Ok((v >> 1) as i64 ^ -((v & 1) as i64))
    }

    pub(super) fn int(&mut self) -> Result<i32, Fault> {
        i32::try_from(self.zigzag()?)
            .map_err(|_| Fault::Bad(format!("{} i32 out of range", self.what)))
    }

    fn advance(&mut self, n: u64) -> Result<(), Fault> {
        let left = (self.bytes.len() - self.at) as u64;
        if n > left {
            return Err(Fault::Short("the page header ends early"));
        }
        self.at += n as usize;
        Ok(())
    }

    /// The fields of a struct, each handed to `field` (which must consume its value).
    pub(super) fn fields(&mut self, depth: u32, field: &mut Field<'_, 'a>) -> Result<(), Fault> {
        if depth > MAX_DEPTH {
            return Err(Fault::Bad(format!("{} nested too deep", self.what)));
        }
        let mut last = 0i16;
        loop {
            let head = self.byte()?;
            if head == 0 {
                return Ok(());
            }
            let kind = head & 0x0f;
            let delta = i16::from(head >> 4);
            let id = if delta == 0 {
                i16::try_from(self.zigzag()?)
                    .map_err(|_| Fault::Bad("a field id out of range".to_owned()))?
            } else {
                last.wrapping_add(delta)
            };
            last = id;
            field(self, id, kind)?;
        }
    }

    pub(super) fn skip(&mut self, kind: u8, depth: u32) -> Result<(), Fault> {
        if depth > MAX_DEPTH {
            return Err(Fault::Bad(format!("{} nested too deep", self.what)));
        }
        match kind {
            TRUE | FALSE => Ok(()),
            BYTE => self.advance(1),
            I16 | I32 | I64 => self.varint().map(|_| ()),
            DOUBLE => self.advance(8),
            BINARY => {
                let n = self.varint()?;
                self.advance(n)
            }
            LIST | SET => {
                let head = self.byte()?;
                let size = match head >> 4 {
                    15 => self.varint()?,
                    n => u64::from(n),
                };
                self.items(size, &[head & 0x0f], depth)
            }
            MAP => {
                let size = self.varint()?;
                if size == 0 {
                    return Ok(());
                }
                let kinds = self.byte()?;
                self.items(size, &[kinds >> 4, kinds & 0x0f], depth)
            }
            STRUCT => self.fields(depth + 1, &mut |r, _, kind| r.skip(kind, depth + 1)),
            other => Err(Fault::Bad(format!(
                "{} field of unknown type {other}",
                self.what
            ))),
        }
    }

    fn items(&mut self, size: u64, kinds: &[u8], depth: u32) -> Result<(), Fault> {
        // Every item takes a byte or more (a bool in a list does): a size past the bytes
        // left is cut short (or malformed), and bounds the loop.
        if size > (self.bytes.len() - self.at) as u64 {
            return Err(Fault::Short("a page header list longer than its bytes"));
        }
        for _ in 0..size {
            for &kind in kinds {
                match kind {
                    TRUE | FALSE => self.advance(1)?,
                    _ => self.skip(kind, depth + 1)?,
                }
            }
        }
        Ok(())
    }
}
