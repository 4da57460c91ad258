//! One MDS sample: a `u32` length for each variable-size column, in column order, then every
//! column's payload in column order. Fixed-size columns take their size from `column_sizes`.

use std::ops::Range;

use crate::error::{Error, Result};

/// The per-column sizes of a shard (`column_sizes` in `index.json`): `Some(n)` for a fixed
/// size, `None` for a length-prefixed column.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct ColumnLayout {
    sizes: Vec<Option<u32>>,
    num_variable: usize,
    encodings: Vec<String>,
}

impl ColumnLayout {
    /// A layout from the sizes, in column (sorted name) order.
    pub fn new(sizes: Vec<Option<u32>>) -> Self {
        let num_variable = sizes.iter().filter(|s| s.is_none()).count();
        Self {
            sizes,
            num_variable,
            encodings: Vec::new(),
        }
    }

    /// A layout from `index.json` sizes, which are not bounded by the format; a fixed size
    /// above `u32::MAX` cannot fit in a shard.
    pub fn from_sizes(sizes: &[Option<u64>]) -> Result<Self> {
        let sizes = sizes
            .iter()
            .map(|s| match s {
                None => Ok(None),
                Some(n) => u32::try_from(*n).map(Some).map_err(|_| {
                    Error::InvalidValue(format!("column size {n} does not fit in a shard"))
                }),
            })
            .collect::<Result<Vec<_>>>()?;
        Ok(Self::new(sizes))
    }

    /// Attaches the column encoding names, used only to word error messages.
    #[must_use]
    pub fn with_encodings(mut self, encodings: Vec<String>) -> Self {
        self.encodings = encodings;
        self
    }

    /// The column sizes.
    pub fn sizes(&self) -> &[Option<u32>] {
        &self.sizes
    }

    /// Number of columns.
    pub fn num_columns(&self) -> usize {
        self.sizes.len()
    }

    /// Splits `sample` into one slice per column, reusing `out` (cleared first).
    pub fn split<'a>(&self, sample: &'a [u8], out: &mut Vec<&'a [u8]>) -> Result<()> {
        out.clear();
        self.walk(sample, |r| out.push(&sample[r]))
    }

    /// Like [`ColumnLayout::split`], but gives byte ranges shifted by `base` (the sample's
    /// position in its shard), reusing `out` (cleared first).
    pub fn split_ranges(
        &self,
        sample: &[u8],
        base: usize,
        out: &mut Vec<Range<usize>>,
    ) -> Result<()> {
        out.clear();
        self.walk(sample, |r| out.push(r.start + base..r.end + base))
    }

    /// Calls `emit` with each column's in-bounds range, checking the prefixes and payloads
    /// exactly cover the sample.
    fn walk(&self, sample: &[u8], mut emit: impl FnMut(Range<usize>)) -> Result<()> {
        let head = 4 * self.num_variable;
        if sample.len() < head {
            return Err(bad(format!(
                "sample is {} bytes, too short for {} column lengths",
                sample.len(),
                self.num_variable
            )));
        }
        let mut lengths = sample[..head].chunks_exact(4);
        let mut pos = head;
        for (col, size) in self.sizes.iter().enumerate() {
            let len = match size {
                Some(n) => *n as usize,
                // The length prefixes were checked to exist above.
                None => lengths
                    .next()
                    .map_or(0, |b| u32::from_le_bytes([b[0], b[1], b[2], b[3]]) as usize),
            };
            let end = pos
                .checked_add(len)
                .filter(|&e| e <= sample.len())
                .ok_or_else(|| {
                    bad(format!(
                        "column {col} needs bytes {pos}..{}, sample is {} bytes",
                        pos as u64 + len as u64,
                        sample.len()
                    ))
                })?;
            emit(pos..end);
            pos = end;
        }
        if pos != sample.len() {
            return Err(bad(format!(
                "columns end at byte {pos}, sample is {} bytes",
                sample.len()
            )));
        }
        Ok(())
    }

    /// Frames encoded column values into one sample, appending to `out`: the lengths of the
    /// variable-size columns, then all payloads. A fixed-size column whose value has another
    /// size is an error, as in the upstream writer.
    pub fn frame(&self, columns: &[&[u8]], out: &mut Vec<u8>) -> Result<()> {
        if columns.len() != self.sizes.len() {
            return Err(bad(format!(
                "expected {} columns, got {}",
                self.sizes.len(),
                columns.len()
            )));
        }
        let start = out.len();
        for (col, (value, size)) in columns.iter().zip(&self.sizes).enumerate() {
            let checked = match size {
                Some(n) if *n as usize != value.len() => Err(self.size_mismatch(col)),
                Some(_) => Ok(()),
                None => u32::try_from(value.len())
                    .map(|len| out.extend_from_slice(&len.to_le_bytes()))
                    .map_err(|_| {
                        bad(format!(
                            "column {col} value of {} bytes exceeds 4 GiB",
                            value.len()
                        ))
                    }),
            };
            if let Err(e) = checked {
                out.truncate(start);
                return Err(e);
            }
        }
        for value in columns {
            out.extend_from_slice(value);
        }
        Ok(())
    }

    fn size_mismatch(&self, col: usize) -> Error {
        let encoding = self.encodings.get(col).map_or("?", String::as_str);
        bad(format!(
            "Unexpected data size; was this data typed with the correct encoding ({encoding})?"
        ))
    }
}

fn bad(msg: String) -> Error {
    Error::InvalidValue(msg)
}
