//! An opened `.mds` shard: `u32 N`, `N+1` absolute `u32` offsets, the writer's config JSON,
//! then the samples back to back. All integers are little-endian.

use std::ops::Range;
use std::path::{Path, PathBuf};

use crate::error::{Error, Result};
use crate::mds::sample::ColumnLayout;
use crate::mmap::MappedFile;

/// A memory-mapped shard whose header has been validated, so every sample range it hands
/// out lies inside the file.
#[derive(Debug)]
pub struct Shard {
    path: PathBuf,
    map: MappedFile,
    len: usize,
}

impl Shard {
    /// Maps and validates the shard at `path`. A missing file gives [`Error::NotFound`]; a
    /// header that contradicts the file gives [`Error::CorruptShard`] saying what is wrong.
    pub fn open(path: &Path) -> Result<Shard> {
        let map = MappedFile::open(path)?;
        let len = validate(map.as_slice()).map_err(|reason| Error::CorruptShard {
            path: path.to_path_buf(),
            reason,
        });
        map.check(path)?;
        let len = len?;
        Ok(Shard {
            path: path.to_path_buf(),
            map,
            len,
        })
    }

    /// The file this shard was opened from.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Number of samples.
    pub fn len(&self) -> usize {
        self.len
    }

    /// Whether the shard holds no samples (valid: see the writer's empty-shard quirk).
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// [`Error::CorruptShard`] if the file was truncated or rewritten in place since it was
    /// mapped. Call it after reading from [`Shard::bytes`]: what was read is only the file's
    /// if this passes.
    pub fn check(&self) -> Result<()> {
        self.map.check(&self.path)
    }

    /// Whether the file changed under the map (see [`Shard::check`]).
    pub fn changed(&self) -> bool {
        self.map.changed()
    }

    /// The whole file.
    pub fn bytes(&self) -> &[u8] {
        self.map.as_slice()
    }

    /// The writer config JSON stored between the offset table and the first sample.
    pub fn config_json(&self) -> &[u8] {
        let data = self.bytes();
        let start = 4 + 4 * (self.len + 1);
        data.get(start..offset(data, 0) as usize).unwrap_or(&[])
    }

    /// The byte range of sample `i` within [`Shard::bytes`].
    pub fn sample_range(&self, i: usize) -> Result<Range<usize>> {
        if i >= self.len {
            return Err(Error::IndexOutOfRange {
                index: i as i64,
                len: self.len as u64,
            });
        }
        let data = self.bytes();
        Ok(offset(data, i) as usize..offset(data, i + 1) as usize)
    }

    /// The bytes of sample `i`.
    pub fn sample(&self, i: usize) -> Result<&[u8]> {
        let range = self.sample_range(i)?;
        Ok(self.bytes().get(range).unwrap_or(&[]))
    }

    /// Splits sample `i` into its column values, naming this shard and the sample on error.
    pub fn sample_columns<'a>(
        &'a self,
        i: usize,
        layout: &ColumnLayout,
        out: &mut Vec<&'a [u8]>,
    ) -> Result<()> {
        let sample = self.sample(i)?;
        layout
            .split(sample, out)
            .map_err(|e| self.corrupt_sample(i, &e))
    }

    /// Like [`Shard::sample_columns`], but gives ranges within [`Shard::bytes`], for callers
    /// that hand out owned views of the map.
    pub fn sample_column_ranges(
        &self,
        i: usize,
        layout: &ColumnLayout,
        out: &mut Vec<Range<usize>>,
    ) -> Result<()> {
        let range = self.sample_range(i)?;
        let sample = self.bytes().get(range.clone()).unwrap_or(&[]);
        layout
            .split_ranges(sample, range.start, out)
            .map_err(|e| self.corrupt_sample(i, &e))
    }

    /// Wraps a per-sample decoding error with this shard's path and the sample index.
    pub fn corrupt_sample(&self, i: usize, err: &Error) -> Error {
        Error::CorruptShard {
            path: self.path.clone(),
            reason: format!("sample {i}: {err}"),
        }
    }
}

impl AsRef<[u8]> for Shard {
    fn as_ref(&self) -> &[u8] {
        self.bytes()
    }
}

/// Reads offset `i` of the table; callers have checked that the table fits.
fn offset(data: &[u8], i: usize) -> u32 {
    read_u32(data, 4 + 4 * i).unwrap_or(0)
}

fn read_u32(data: &[u8], at: usize) -> Option<u32> {
    let bytes = data.get(at..at.checked_add(4)?)?;
    Some(u32::from_le_bytes(bytes.try_into().ok()?))
}

/// Checks a shard's header against its bytes and returns the sample count; what is wrong
/// otherwise. Public for the fuzz targets.
pub fn validate(data: &[u8]) -> std::result::Result<usize, String> {
    let size = data.len() as u64;
    let n = read_u32(data, 0)
        .ok_or_else(|| format!("file is {size} bytes, too short for a sample count"))?;
    let table_end = 4 + 4 * (u64::from(n) + 1);
    if table_end > size {
        return Err(format!(
            "{n} samples need a {table_end}-byte header, file is {size} bytes"
        ));
    }
    let n = n as usize;
    let first = u64::from(offset(data, 0));
    if first < table_end {
        return Err(format!(
            "sample 0 starts at {first}, inside the {table_end}-byte header"
        ));
    }
    let mut prev = first;
    for i in 1..=n {
        let cur = u64::from(offset(data, i));
        if cur < prev {
            return Err(format!(
                "offset {i} ({cur}) is before offset {} ({prev})",
                i - 1
            ));
        }
        prev = cur;
    }
    if prev != size {
        return Err(format!(
            "last offset is {prev}, file is {size} bytes (truncated?)"
        ));
    }
    Ok(n)
}
