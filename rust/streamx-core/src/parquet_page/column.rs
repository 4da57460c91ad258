//! One flat column chunk decoded into its values' places: each page decompressed once into
//! one buffer, each value's start (and a byte array's length) recorded, and each row mapped
//! to its value (a dictionary entry or a plain value) or to null. No value is copied or
//! converted until a row is asked for.

use super::codec::{decompress_into, Codec};
use super::hybrid;

mod dense;
use super::thrift::{page_header, PageHeader, DATA_PAGE, DATA_PAGE_V2, DICTIONARY_PAGE};
use dense::{all_present, every_row};

/// A row with no value.
pub const NULL: u32 = u32::MAX;
/// Column chunks larger than this once decompressed are left to the general reader.
pub const MAX_PAGE_BYTES: usize = 1 << 30;
/// The most a compressed page may declare per compressed byte before the core leaves it to
/// pyarrow (real pages of values stay far below it; dictionary and RLE encodings take the
/// long runs), and the size any page may declare whatever its compressed bytes.
const MAX_EXPANSION: usize = 256;
const MIN_EXPANDED: usize = 1 << 20;

/// A column's physical type, as `parquet.thrift` numbers them.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Physical {
    Int32,
    Int64,
    Float,
    Double,
    ByteArray,
}

impl Physical {
    /// From `parquet.thrift`'s `Type`; `None` for the types this reader leaves alone.
    pub fn from_code(code: i32) -> Option<Self> {
        Some(match code {
            1 => Physical::Int32,
            2 => Physical::Int64,
            4 => Physical::Float,
            5 => Physical::Double,
            6 => Physical::ByteArray,
            _ => return None,
        })
    }

    fn width(self) -> usize {
        match self {
            Physical::Int32 | Physical::Float => 4,
            Physical::Int64 | Physical::Double => 8,
            Physical::ByteArray => 0,
        }
    }
}

/// How to decode one column chunk.
#[derive(Debug, Clone, Copy)]
pub struct ColumnSpec {
    pub physical: Physical,
    pub codec: Codec,
    /// 0 (required) or 1 (optional, flat).
    pub max_def: u8,
    /// The row group's rows, as its footer says.
    pub rows: usize,
}

/// Why a chunk was not decoded: a feature this reader leaves to the general one, or bytes
/// that contradict the format.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Refusal {
    Unsupported(String),
    Corrupt(String),
}

fn corrupt<T>(message: impl Into<String>) -> Result<T, Refusal> {
    Err(Refusal::Corrupt(message.into()))
}

/// A decoded column chunk.
#[derive(Debug)]
pub struct Column {
    pub physical: Physical,
    data: Vec<u8>,
    /// A byte array's value: where its bytes start in `data` (its length the 4 before).
    starts: Vec<u32>,
    /// Fixed-width values: each page's first value and where it lies in `data`.
    runs: Vec<(u32, usize)>,
    /// Values (dictionary entries and plain values) so far.
    count: usize,
    /// Rows `0..direct` are entries `0..direct`: a column of distinct values, dictionary-
    /// encoded in order or plain, needs no map (and its memory, a page fault per 1,024 rows
    /// in a fresh row group, is not spent).
    direct: usize,
    /// The entries of rows `direct..`, or `NULL`.
    rows: Vec<u32>,
}

/// One value of a column.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Value<'a> {
    Int32(i32),
    Int64(i64),
    Float(f32),
    Double(f64),
    Bytes(&'a [u8]),
}

impl Column {
    /// Row `row`'s value, `None` for a null (or a row past the end).
    pub fn value(&self, row: usize) -> Option<Value<'_>> {
        let entry = match row.checked_sub(self.direct) {
            None => row as u32,
            Some(mapped) => *self.rows.get(mapped)?,
        };
        if entry == NULL {
            return None;
        }
        let entry = entry as usize;
        let width = self.physical.width();
        let start = if width == 0 {
            self.starts[entry] as usize
        } else {
            // Pages are few (one or two in most chunks): the run holding `entry`.
            let run = self
                .runs
                .partition_point(|(first, _)| *first as usize <= entry)
                - 1;
            let (first, at) = self.runs[run];
            at + (entry - first as usize) * width
        };
        let fixed = |n: usize| -> [u8; 8] {
            let mut out = [0u8; 8];
            out[..n].copy_from_slice(&self.data[start..start + n]);
            out
        };
        Some(match self.physical {
            Physical::Int32 => Value::Int32(i32::from_le_bytes(first4(fixed(4)))),
            Physical::Int64 => Value::Int64(i64::from_le_bytes(fixed(8))),
            Physical::Float => Value::Float(f32::from_le_bytes(first4(fixed(4)))),
            Physical::Double => Value::Double(f64::from_le_bytes(fixed(8))),
            Physical::ByteArray => {
                let n = u32::from_le_bytes(first4(fixed_at(&self.data, start - 4)));
                Value::Bytes(&self.data[start..start + n as usize])
            }
        })
    }

    /// The rows decoded.
    pub fn len(&self) -> usize {
        self.direct + self.rows.len()
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// The bytes this column keeps.
    pub fn nbytes(&self) -> usize {
        self.data.capacity()
            + self.starts.capacity() * 4
            + self.runs.capacity() * 16
            + self.rows.capacity() * 4
    }
}

fn fixed_at(data: &[u8], at: usize) -> [u8; 8] {
    let mut out = [0u8; 8];
    out[..4].copy_from_slice(&data[at..at + 4]);
    out
}

fn first4(b: [u8; 8]) -> [u8; 4] {
    [b[0], b[1], b[2], b[3]]
}

/// Decodes the column chunk in `chunk` (its pages, from the first).
pub fn decode(chunk: &[u8], spec: &ColumnSpec) -> Result<Column, Refusal> {
    let mut column = Column {
        physical: spec.physical,
        data: Vec::new(),
        starts: Vec::new(),
        runs: Vec::new(),
        count: 0,
        direct: 0,
        rows: Vec::new(),
    };
    let pages = pages(chunk)?;
    // One buffer for every page's values, sized once: no copy as it fills.
    let mut total = 0usize;
    for (header, _) in &pages {
        let size = usize::try_from(header.uncompressed_size)
            .or_else(|_| corrupt(format!("a page of {} bytes", header.uncompressed_size)))?;
        total = total.saturating_add(size);
    }
    if total > MAX_PAGE_BYTES {
        return unsupported(format!("a column chunk of {total} bytes"));
    }
    column
        .data
        .try_reserve_exact(total)
        .or_else(|_| unsupported(format!("{total} bytes do not fit in memory")))?;
    // No more than `load` lets the pages fill (a header may declare far more than its bytes).
    let fillable = chunk.len().saturating_mul(MAX_EXPANSION).max(MIN_EXPANDED);
    super::fresh::populate(&mut column.data, fillable);
    let mut dictionary: Option<u32> = None; // its entries: the first ones
    for (header, body) in pages {
        if column.len() >= spec.rows {
            break;
        }
        match header.kind {
            DICTIONARY_PAGE => {
                if dictionary.is_some() || column.count > 0 {
                    return corrupt("a dictionary page after the first page");
                }
                if header.encoding != 0 && header.encoding != 2 {
                    return unsupported(format!("dictionary encoding {}", header.encoding));
                }
                let from = load(&mut column.data, body, &header, spec, 0)?;
                let count = count_of(header.num_values)?;
                plain(&mut column, from, count)?;
                dictionary = Some(column.count as u32);
            }
            DATA_PAGE | DATA_PAGE_V2 => data_page(&mut column, body, &header, spec, dictionary)?,
            _ => {} // index pages and others carry no values
        }
    }
    if column.len() != spec.rows {
        return corrupt(format!(
            "{} rows in its pages, the footer says {}",
            column.len(),
            spec.rows
        ));
    }
    Ok(column)
}

/// Each page's header and body, every body inside `chunk`.
fn pages(chunk: &[u8]) -> Result<Vec<(PageHeader, &[u8])>, Refusal> {
    let mut out = Vec::new();
    let mut at = 0usize;
    while at < chunk.len() {
        let (header, length) =
            page_header(&chunk[at..]).map_err(|e| Refusal::Corrupt(format!("page header: {e}")))?;
        at += length;
        let size = usize::try_from(header.compressed_size)
            .map_err(|_| Refusal::Corrupt(format!("a page of {} bytes", header.compressed_size)))?;
        let Some(body) = chunk.get(at..at.saturating_add(size)) else {
            return corrupt(format!(
                "a page of {size} bytes at {at} runs past its chunk ({} bytes)",
                chunk.len()
            ));
        };
        at += size;
        out.push((header, body));
    }
    Ok(out)
}

fn unsupported<T>(what: String) -> Result<T, Refusal> {
    Err(Refusal::Unsupported(what))
}

fn count_of(n: i32) -> Result<usize, Refusal> {
    usize::try_from(n).or_else(|_| corrupt(format!("a page of {n} values")))
}

fn reserve<T>(v: &mut Vec<T>, more: usize) -> Result<(), Refusal> {
    v.try_reserve(more)
        .or_else(|_| unsupported(format!("{more} more items do not fit in memory")))
}

/// Decompresses `body`'s part after its first `levels` bytes (a v2 page's levels are not
/// compressed) onto the end of `data`; returns where it starts there.
fn load(
    data: &mut Vec<u8>,
    body: &[u8],
    header: &PageHeader,
    spec: &ColumnSpec,
    levels: usize,
) -> Result<usize, Refusal> {
    let declared = usize::try_from(header.uncompressed_size)
        .or_else(|_| corrupt(format!("a page of {} bytes", header.uncompressed_size)))?;
    let raw = declared
        .checked_sub(levels)
        .ok_or_else(|| Refusal::Corrupt("levels longer than their page".to_owned()))?;
    if raw > MAX_PAGE_BYTES {
        return unsupported(format!("a page of {raw} bytes"));
    }
    let from = data.len();
    // Sized by `decode` from every header; a page larger than its header said is corrupt.
    if data.capacity() - from < levels + raw {
        return corrupt("pages larger than their headers say");
    }
    data.extend_from_slice(&body[..levels]);
    let values = &body[levels..];
    if header.kind == DATA_PAGE_V2 && !header.compressed {
        if values.len() != raw {
            return corrupt(format!(
                "{} bytes of values, the header says {raw}",
                values.len()
            ));
        }
        data.extend_from_slice(values);
    } else {
        // The buffer is zeroed to the size the header declares before the codec checks it:
        // a header claiming far more than its bytes could expand to is left to pyarrow, so a
        // hostile page cannot make this touch up to MAX_PAGE_BYTES of memory.
        if raw > values.len().saturating_mul(MAX_EXPANSION).max(MIN_EXPANDED) {
            return unsupported(format!(
                "a page of {} compressed bytes declaring {raw}",
                values.len()
            ));
        }
        data.resize(from + levels + raw, 0);
        decompress_into(spec.codec, values, &mut data[from + levels..])
            .map_err(Refusal::Corrupt)?;
    }
    Ok(from)
}

/// Records `count` plain values starting at `data[from..]`.
fn plain(column: &mut Column, from: usize, count: usize) -> Result<(), Refusal> {
    let width = column.physical.width();
    let end = column.data.len();
    if column.count.saturating_add(count) >= NULL as usize {
        return unsupported("more than 4 billion values".to_owned());
    }
    if width > 0 {
        if count.checked_mul(width).is_none_or(|n| n > end - from) {
            return corrupt("plain values past the end of their page");
        }
        column.runs.push((column.count as u32, from));
        column.count += count;
        return Ok(());
    }
    reserve(&mut column.starts, count.min((end - from) / 4 + 1))?;
    let mut at = from;
    for _ in 0..count {
        let Some(prefix) = column.data.get(at..at + 4) else {
            return corrupt("a byte array's length past the end of its page");
        };
        let n = u32::from_le_bytes([prefix[0], prefix[1], prefix[2], prefix[3]]);
        at += 4;
        if (end - at) < n as usize {
            return corrupt(format!(
                "a byte array of {n} bytes past the end of its page"
            ));
        }
        // `data` is at most MAX_PAGE_BYTES (1 GiB): every offset fits in 32 bits.
        column.starts.push(at as u32);
        at += n as usize;
    }
    column.count += count;
    Ok(())
}

fn data_page(
    column: &mut Column,
    body: &[u8],
    header: &PageHeader,
    spec: &ColumnSpec,
    dictionary: Option<u32>,
) -> Result<(), Refusal> {
    let count = count_of(header.num_values)?;
    if count > spec.rows - column.len() {
        return corrupt(format!(
            "a page of {count} values past the row group's rows"
        ));
    }
    let v2 = header.kind == DATA_PAGE_V2;
    let (levels, from) = if v2 {
        if header.rep_bytes != 0 {
            return unsupported("repetition levels".to_owned());
        }
        let levels = usize::try_from(header.def_bytes)
            .ok()
            .filter(|n| *n <= body.len())
            .ok_or_else(|| Refusal::Corrupt(format!("{} bytes of levels", header.def_bytes)))?;
        let from = load(&mut column.data, body, header, spec, levels)?;
        (levels, from)
    } else {
        let from = load(&mut column.data, body, header, spec, 0)?;
        if spec.max_def == 0 {
            (0, from)
        } else {
            if header.def_encoding != 3 {
                return unsupported(format!(
                    "definition levels encoded as {}",
                    header.def_encoding
                ));
            }
            let prefix = column.data.get(from..from + 4).ok_or_else(|| {
                Refusal::Corrupt("definition levels past the end of their page".to_owned())
            })?;
            let n = u32::from_le_bytes([prefix[0], prefix[1], prefix[2], prefix[3]]) as usize;
            if n > column.data.len() - from - 4 {
                return corrupt(format!("{n} bytes of definition levels past their page"));
            }
            (n, from + 4)
        }
    };
    let values_at = from + levels;
    if spec.max_def == 0 || all_present(&column.data[from..from + levels], count)? {
        return every_row(column, values_at, header.encoding, count, dictionary);
    }
    // Which of the page's rows hold a value.
    let mut present: Vec<bool> = Vec::new();
    reserve(&mut present, count)?;
    if spec.max_def == 0 {
        present.resize(count, true);
    } else {
        hybrid::decode(&column.data[from..from + levels], 1, count, &mut |level| {
            present.push(level == 1);
            Ok(())
        })
        .map_err(|e| Refusal::Corrupt(format!("definition levels: {e}")))?;
    }
    let non_null = present.iter().filter(|p| **p).count();
    let mut entries: Vec<u32> = Vec::new();
    reserve(&mut entries, non_null)?;
    match header.encoding {
        0 => {
            let first = column.count;
            plain(column, values_at, non_null)?;
            entries.extend((first..column.count).map(|e| e as u32));
        }
        2 | 8 => {
            let Some(size) = dictionary else {
                return corrupt("dictionary indices without a dictionary page");
            };
            let indices = &column.data[values_at..];
            let Some((&width, runs)) = indices.split_first() else {
                return corrupt("dictionary indices without their bit width");
            };
            hybrid::decode(runs, u32::from(width), non_null, &mut |index| {
                if index >= size {
                    return Err(format!("index {index} in a dictionary of {size}"));
                }
                entries.push(index);
                Ok(())
            })
            .map_err(|e| Refusal::Corrupt(format!("dictionary indices: {e}")))?;
        }
        other => return unsupported(format!("value encoding {other}")),
    }
    reserve(&mut column.rows, count)?;
    let mut next = entries.into_iter();
    for is in present {
        column.rows.push(if is {
            next.next().unwrap_or(NULL)
        } else {
            NULL
        });
    }
    Ok(())
}
