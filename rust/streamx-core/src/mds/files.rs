//! Writing finished shards to disk: hash the raw bytes, optionally compress and hash again,
//! and write the one file that is kept, atomically.

use std::fs;
use std::io::{BufWriter, Write};
use std::path::Path;

use crate::compression::{temp_path, Compression};
use crate::error::{Error, Result};
use crate::hashing::HashAlgo;
use crate::mds::parts::ShardParts;

/// Buffer that gathers small parts of a file into one write.
const GATHER_BYTES: usize = 64 << 10;

/// Below this many bytes, threads cost more than they save.
const PARALLEL_MIN_BYTES: usize = 1 << 20;

/// One `raw_data`/`zip_data` entry of `index.json`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FileInfo {
    /// File name relative to the dataset directory.
    pub basename: String,
    /// File size in bytes.
    pub bytes: u64,
    /// `(algorithm name, hexdigest)` in the order the algorithms were requested.
    pub hashes: Vec<(String, String)>,
}

/// Writes one shard into `dir` and describes it. Without compression the raw file
/// `basename_raw` is written; with it, only `<basename_raw>.<ext>` is (never the raw file),
/// and the second `FileInfo` describes it with hashes over the compressed bytes.
pub fn write_shard_files(
    dir: &Path,
    basename_raw: &str,
    shard_bytes: &[u8],
    compression: Option<&Compression>,
    hashes: &[HashAlgo],
) -> Result<(FileInfo, Option<FileInfo>)> {
    let Some(compression) = compression else {
        let raw = file_info(basename_raw, shard_bytes, hashes);
        write_atomic(&dir.join(basename_raw), shard_bytes)?;
        return Ok((raw, None));
    };
    // Raw hashes and compression are independent; overlap them on big shards. Scoped threads,
    // not a pool, so nothing persists across fork().
    let (raw, zipped) = if shard_bytes.len() >= PARALLEL_MIN_BYTES && !hashes.is_empty() {
        std::thread::scope(|s| {
            let zip = s.spawn(|| compression.compress(shard_bytes));
            let raw = file_info(basename_raw, shard_bytes, hashes);
            (
                raw,
                zip.join().unwrap_or_else(|_| {
                    Err(Error::InvalidValue("compression thread panicked".into()))
                }),
            )
        })
    } else {
        (
            file_info(basename_raw, shard_bytes, hashes),
            compression.compress(shard_bytes),
        )
    };
    let zipped = zipped?;
    let zip_name = format!("{basename_raw}.{}", compression.extension());
    let zip = file_info(&zip_name, &zipped, hashes);
    write_atomic(&dir.join(&zip_name), &zipped)?;
    Ok((raw, Some(zip)))
}

/// [`write_shard_files`] for a shard kept as header and samples. Raw and unhashed, the two
/// parts go to the file as they are; hashing or compressing needs the whole file in one
/// buffer, and that one copy costs far less than the hash or codec itself.
pub fn write_shard_parts(
    dir: &Path,
    basename_raw: &str,
    parts: &ShardParts,
    compression: Option<&Compression>,
    hashes: &[HashAlgo],
) -> Result<(FileInfo, Option<FileInfo>)> {
    if compression.is_some() || !hashes.is_empty() {
        return write_shard_files(dir, basename_raw, &parts.to_vec(), compression, hashes);
    }
    write_atomic_parts(&dir.join(basename_raw), &parts.segments())?;
    let raw = FileInfo {
        basename: basename_raw.to_owned(),
        bytes: parts.len() as u64,
        hashes: Vec::new(),
    };
    Ok((raw, None))
}

/// Describes `data` as the file `basename`, hashing with each algorithm (in parallel when
/// there are several and the data is big).
pub fn file_info(basename: &str, data: &[u8], hashes: &[HashAlgo]) -> FileInfo {
    let digests: Vec<String> = if hashes.len() > 1 && data.len() >= PARALLEL_MIN_BYTES {
        std::thread::scope(|s| {
            let handles: Vec<_> = hashes
                .iter()
                .map(|&a| s.spawn(move || a.hexdigest(data)))
                .collect();
            handles
                .into_iter()
                .zip(hashes)
                .map(|(h, &a)| h.join().unwrap_or_else(|_| a.hexdigest(data)))
                .collect()
        })
    } else {
        hashes.iter().map(|a| a.hexdigest(data)).collect()
    };
    FileInfo {
        basename: basename.to_owned(),
        bytes: data.len() as u64,
        hashes: hashes
            .iter()
            .map(|a| a.name().to_owned())
            .zip(digests)
            .collect(),
    }
}

/// Writes `data` to `path` via a temp file in the same directory and a rename, so a reader
/// (or a crashed writer) never leaves a partial file under the final name.
pub fn write_atomic(path: &Path, data: &[u8]) -> Result<()> {
    write_atomic_parts(path, &[data])
}

/// [`write_atomic`] for a file made of consecutive `parts`. Small parts are gathered in a
/// buffer; parts as big as the buffer go to the file straight from where they are.
pub fn write_atomic_parts(path: &Path, parts: &[&[u8]]) -> Result<()> {
    if let Some(parent) = path.parent().filter(|p| !p.as_os_str().is_empty()) {
        fs::create_dir_all(parent).map_err(|e| Error::io(parent, e))?;
    }
    let tmp = temp_path(path);
    let written = fs::File::create(&tmp).and_then(|f| {
        let mut out = BufWriter::with_capacity(GATHER_BYTES, f);
        parts.iter().try_for_each(|part| out.write_all(part))?;
        out.flush()
    });
    if let Err(e) = written {
        let _ = fs::remove_file(&tmp);
        return Err(Error::io(&tmp, e));
    }
    fs::rename(&tmp, path).map_err(|e| {
        let _ = fs::remove_file(&tmp);
        Error::io(path, e)
    })
}
