//! Whole-shard compression, one codec per file, named like mosaicml-streaming
//! (`"zstd"`, `"zstd:7"`, `"br:11"`, ...). The extension of a compressed shard is the codec name.
//!
//! ```
//! use std::path::Path;
//! use streamx_core::compression::Compression;
//!
//! let zstd = Compression::parse("zstd:7").unwrap();
//! assert_eq!((zstd.extension(), zstd.to_string()), ("zstd", "zstd:7".to_owned()));
//! let packed = zstd.compress(b"shard bytes").unwrap();
//! assert_eq!(zstd.decompress(&packed, Path::new("x.zstd")).unwrap(), b"shard bytes");
//! assert!(Compression::parse("zstd:0").is_err());
//! ```

use std::fmt;
use std::fs::File;
use std::io::{self, BufWriter, Read, Write};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};

use crate::error::{Error, Result};
use crate::mmap::MappedFile;

/// A compression family.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Codec {
    /// Brotli, levels 0..=11, default 11.
    Br,
    /// bzip2, levels 1..=9, default 9.
    Bz2,
    /// gzip (one member), levels 0..=9, default 9.
    Gz,
    /// Snappy raw block format, no levels.
    Snappy,
    /// Zstandard frame, levels 1..=22, default 3.
    Zstd,
}

const CODECS: [Codec; 5] = [Codec::Br, Codec::Bz2, Codec::Gz, Codec::Snappy, Codec::Zstd];

impl Codec {
    /// The family name, which is also the file extension.
    pub fn name(self) -> &'static str {
        match self {
            Codec::Br => "br",
            Codec::Bz2 => "bz2",
            Codec::Gz => "gz",
            Codec::Snappy => "snappy",
            Codec::Zstd => "zstd",
        }
    }

    /// The explicit levels this family accepts (`None` for snappy, which has none).
    pub fn levels(self) -> Option<std::ops::RangeInclusive<u32>> {
        match self {
            Codec::Br => Some(0..=11),
            Codec::Bz2 => Some(1..=9),
            Codec::Gz => Some(0..=9),
            Codec::Snappy => None,
            Codec::Zstd => Some(1..=22),
        }
    }

    /// The level used when none is given.
    pub fn default_level(self) -> u32 {
        match self {
            Codec::Br => 11,
            Codec::Bz2 | Codec::Gz => 9,
            Codec::Snappy => 0,
            Codec::Zstd => 3,
        }
    }

    fn from_name(name: &str) -> Option<Codec> {
        CODECS.into_iter().find(|c| c.name() == name)
    }
}

/// A parsed compression spec: a codec and an optional explicit level.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct Compression {
    /// The codec family.
    pub codec: Codec,
    /// The level as written in the spec; `None` means the family default.
    pub level: Option<u32>,
}

impl Compression {
    /// Parses one of the 58 spec strings mosaicml-streaming accepts, exactly as written
    /// (`"zstd:07"` and `"snappy:1"` are rejected, as they are upstream).
    pub fn parse(spec: &str) -> Result<Compression> {
        let invalid = || Error::InvalidArgument(format!("Invalid compression: {spec}"));
        // A byte search: the spec of each of 650k index entries is parsed, and `split_once`
        // sets up a searcher for each.
        let (name, level) = match spec.bytes().position(|b| b == b':') {
            None => (spec, None),
            Some(at) => {
                let (name, text) = (&spec[..at], &spec[at + 1..]);
                let level: u32 = text.parse().map_err(|_| invalid())?;
                if level.to_string() != text {
                    return Err(invalid());
                }
                (name, Some(level))
            }
        };
        let codec = Codec::from_name(name).ok_or_else(invalid)?;
        if level.is_some_and(|l| !codec.levels().is_some_and(|r| r.contains(&l))) {
            return Err(invalid());
        }
        Ok(Compression { codec, level })
    }

    /// The file extension of compressed shards (the family name).
    pub fn extension(&self) -> &'static str {
        self.codec.name()
    }

    /// The level actually used.
    pub fn effective_level(&self) -> u32 {
        self.level.unwrap_or(self.codec.default_level())
    }

    /// Compresses `data` in one go.
    pub fn compress(&self, data: &[u8]) -> Result<Vec<u8>> {
        let mut out = Vec::with_capacity(data.len() / 2 + 64);
        self.compress_to(data, &mut out)
            .map_err(|e| Error::InvalidValue(format!("{self} compression failed: {e}")))?;
        Ok(out)
    }

    fn compress_to(&self, data: &[u8], out: &mut Vec<u8>) -> io::Result<()> {
        let level = self.effective_level();
        match self.codec {
            Codec::Br => brotli_compress(data, level, out)?,
            Codec::Bz2 => {
                let mut enc = bzip2::write::BzEncoder::new(out, bzip2::Compression::new(level));
                enc.write_all(data)?;
                enc.finish()?;
            }
            Codec::Gz => {
                let mut enc = flate2::write::GzEncoder::new(out, flate2::Compression::new(level));
                enc.write_all(data)?;
                enc.finish()?;
            }
            Codec::Snappy => {
                *out = snap::raw::Encoder::new()
                    .compress_vec(data)
                    .map_err(io::Error::other)?;
            }
            Codec::Zstd => *out = zstd_compress(data, level as i32)?,
        }
        Ok(())
    }

    /// Decompresses `data`; undecodable input is [`Error::CorruptShard`] naming `path_for_errors`.
    pub fn decompress(&self, data: &[u8], path_for_errors: &Path) -> Result<Vec<u8>> {
        self.decompress_limited(data, u64::MAX, path_for_errors)
    }

    /// Like [`Compression::decompress`], but stops with [`Error::CorruptShard`] as soon as the
    /// output passes `limit` bytes (the index's `raw_data.bytes`), so a bomb never gets
    /// further than that.
    pub fn decompress_limited(
        &self,
        data: &[u8],
        limit: u64,
        path_for_errors: &Path,
    ) -> Result<Vec<u8>> {
        let reserve = data.len().saturating_mul(3).min(limit_usize(limit));
        let mut out = Bounded::new(Vec::with_capacity(reserve), limit);
        self.decompress_to(data, &mut out)
            .map_err(|e| self.corrupt(path_for_errors, &e))?;
        Ok(out.inner)
    }

    /// Streams the decompression of `data` into `out`, which enforces the size bound.
    fn decompress_to<W: Write>(&self, data: &[u8], out: &mut Bounded<W>) -> io::Result<()> {
        match self.codec {
            Codec::Br => brotli::BrotliDecompress(&mut &data[..], out),
            Codec::Bz2 => copy_all(bzip2::read::MultiBzDecoder::new(data), out),
            Codec::Gz => copy_all(flate2::read::MultiGzDecoder::new(data), out),
            Codec::Snappy => out.write_all(&snappy_decompress(data, out.limit)?),
            Codec::Zstd => copy_all(zstd::stream::read::Decoder::with_buffer(data)?, out),
        }
    }

    /// Whether the codec decodes a stream as it arrives (all but raw snappy, whose block
    /// format needs the whole input).
    pub fn streams(&self) -> bool {
        self.codec != Codec::Snappy
    }

    /// Streams the decompression of `input`, read as it comes, into `out`.
    pub(crate) fn decompress_from<R: Read, W: Write>(
        &self,
        mut input: R,
        out: &mut Bounded<W>,
    ) -> io::Result<()> {
        match self.codec {
            Codec::Br => brotli::BrotliDecompress(&mut input, out),
            Codec::Bz2 => copy_all(bzip2::read::MultiBzDecoder::new(input), out),
            Codec::Gz => copy_all(flate2::read::MultiGzDecoder::new(input), out),
            Codec::Zstd => copy_all(zstd::stream::read::Decoder::new(input)?, out),
            Codec::Snappy => Err(io::Error::other("raw snappy cannot be decoded as a stream")),
        }
    }

    fn corrupt(&self, path: &Path, err: &io::Error) -> Error {
        Error::CorruptShard {
            path: path.to_path_buf(),
            reason: format!("cannot decompress as {self}: {err}"),
        }
    }
}

impl fmt::Display for Compression {
    /// The canonical spec string (`"zstd"` or `"zstd:7"`).
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.level {
            None => f.write_str(self.codec.name()),
            Some(level) => write!(f, "{}:{level}", self.codec.name()),
        }
    }
}

/// Brotli exactly as Python's `brotli.compress` drives it: all input in one PROCESS call,
/// then FINISH. The fast qualities emit one meta-block per call, so feeding the input in
/// chunks (as `brotli::BrotliCompress` does) would produce different, though valid, bytes.
/// zstd in its multithreaded mode, as mosaicml-streaming's `zstd.compress` runs it: with
/// one worker or more, libzstd's output no longer depends on the worker count, but it differs
/// from the single-threaded mode on inputs beyond one job (a few MiB).
fn zstd_compress(data: &[u8], level: i32) -> io::Result<Vec<u8>> {
    let workers = std::thread::available_parallelism().map_or(1, |n| n.get().min(8));
    let mut compressor = zstd::bulk::Compressor::new(level)?;
    compressor.set_parameter(zstd::stream::raw::CParameter::NbWorkers(workers as u32))?;
    compressor.compress(data)
}

fn brotli_compress(data: &[u8], level: u32, out: &mut Vec<u8>) -> io::Result<()> {
    use brotli::enc::encode::{BrotliEncoderOperation, BrotliEncoderStateStruct};
    let mut state = BrotliEncoderStateStruct::new(brotli::enc::StandardAlloc::default());
    state.params.quality = level as i32;
    state.params.lgwin = 22; // Python brotli's default window
    let mut buf = vec![0u8; 1 << 16];
    let mut in_offset = 0;
    let mut available_in = data.len();
    let mut ops = [
        BrotliEncoderOperation::BROTLI_OPERATION_PROCESS,
        BrotliEncoderOperation::BROTLI_OPERATION_FINISH,
    ];
    for op in &mut ops {
        loop {
            let (mut out_offset, mut available_out) = (0, buf.len());
            let ok = state.compress_stream(
                *op,
                &mut available_in,
                data,
                &mut in_offset,
                &mut available_out,
                &mut buf,
                &mut out_offset,
                &mut None,
                &mut |_, _, _, _| (),
            );
            if !ok {
                return Err(io::Error::other("brotli encoder failed"));
            }
            out.extend_from_slice(&buf[..out_offset]);
            let done = match op {
                BrotliEncoderOperation::BROTLI_OPERATION_FINISH => state.is_finished(),
                _ => available_in == 0 && !state.has_more_output(),
            };
            if done {
                break;
            }
        }
    }
    Ok(())
}

/// Raw snappy declares its output length up front; a corrupt header could ask for 4 GiB.
/// No snappy op expands more than 64 bytes out of 2 bytes in, so cap the claim at that ratio.
/// A claim above `limit` fails before anything is allocated.
fn snappy_decompress(data: &[u8], limit: u64) -> io::Result<Vec<u8>> {
    let claimed = snap::raw::decompress_len(data).map_err(io::Error::other)?;
    if claimed as u64 > limit {
        return Err(over_limit(limit));
    }
    if claimed > data.len().saturating_mul(32).saturating_add(64) {
        return Err(io::Error::other(format!(
            "snappy header claims {claimed} bytes"
        )));
    }
    snap::raw::Decoder::new()
        .decompress_vec(data)
        .map_err(io::Error::other)
}

fn copy_all<R: Read, W: Write>(mut reader: R, out: &mut W) -> io::Result<()> {
    io::copy(&mut reader, out).map(|_| ())
}

/// Every valid spec string: each family's bare name, then one per level (58 in all).
pub fn all_compression_names() -> Vec<String> {
    CODECS
        .into_iter()
        .flat_map(|c| {
            std::iter::once(c.name().to_owned()).chain(
                c.levels()
                    .into_iter()
                    .flatten()
                    .map(move |l| format!("{}:{l}", c.name())),
            )
        })
        .collect()
}

/// Decompresses the file `zip` into `raw`, atomically: the output is written to a temp file
/// beside `raw` and renamed into place, so readers never see a partial shard. Returns the
/// number of bytes written.
/// Decompression stops with [`Error::CorruptShard`] once the output passes `limit` bytes
/// (the index's `raw_data.bytes`; `None` for no bound), so a bomb costs at most that.
pub fn decompress_file(
    zip: &Path,
    raw: &Path,
    compression: &Compression,
    limit: Option<u64>,
) -> Result<u64> {
    let data = MappedFile::open(zip)?;
    let tmp = temp_path(raw);
    let limit = limit.unwrap_or(u64::MAX);
    let result = write_decoded(zip, &tmp, compression, limit, |out| {
        compression.decompress_to(data.as_slice(), out)
    })
    .and_then(|len| data.check(zip).map(|()| len));
    match result {
        Ok(len) => {
            std::fs::rename(&tmp, raw).map_err(|e| Error::io(raw, e))?;
            Ok(len)
        }
        Err(e) => {
            // Best effort: a leftover temp file is harmless but wastes disk.
            let _ = std::fs::remove_file(&tmp);
            Err(e)
        }
    }
}

/// Runs `decode` into a bounded, buffered `tmp` and tells its failures apart: the disk's
/// (I/O on `tmp`), the input's own stop (I/O on `zip`) and bad input (a corrupt shard).
pub(crate) fn write_decoded(
    zip: &Path,
    tmp: &Path,
    compression: &Compression,
    limit: u64,
    decode: impl FnOnce(&mut Bounded<BufWriter<File>>) -> io::Result<()>,
) -> Result<u64> {
    let file = File::create(tmp).map_err(|e| Error::io(tmp, e))?;
    let mut out = Bounded::new(BufWriter::with_capacity(1 << 20, file), limit);
    if let Err(e) = decode(&mut out) {
        return Err(match out.error.take() {
            Some(io_err) => Error::io(tmp, io_err),
            None if e.kind() == io::ErrorKind::Interrupted => Error::io(zip, e),
            None => compression.corrupt(zip, &e),
        });
    }
    out.inner.flush().map_err(|e| Error::io(tmp, e))?;
    Ok(out.written)
}

fn limit_usize(limit: u64) -> usize {
    usize::try_from(limit).unwrap_or(usize::MAX)
}

fn over_limit(limit: u64) -> io::Error {
    io::Error::other(format!(
        "decompresses to more than the {limit} bytes the index declares"
    ))
}

/// A temp name unique per process and per call, so concurrent decompressions of the same
/// shard (threads or processes) never write the same file.
pub(crate) fn temp_path(target: &Path) -> PathBuf {
    static COUNTER: AtomicU64 = AtomicU64::new(0);
    let n = COUNTER.fetch_add(1, Ordering::Relaxed);
    let mut name = target.file_name().unwrap_or_default().to_os_string();
    name.push(format!(".tmp.{}.{n}", std::process::id()));
    target.with_file_name(name)
}

/// Counts what passes through and refuses any write past `limit`; keeps the sink's own
/// error apart, so a full disk is not reported as a corrupt shard.
pub(crate) struct Bounded<W> {
    inner: W,
    written: u64,
    limit: u64,
    error: Option<io::Error>,
}

impl<W> Bounded<W> {
    fn new(inner: W, limit: u64) -> Self {
        Self {
            inner,
            written: 0,
            limit,
            error: None,
        }
    }
}

impl<W: Write> Write for Bounded<W> {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        if self.written.saturating_add(buf.len() as u64) > self.limit {
            return Err(over_limit(self.limit));
        }
        match self.inner.write(buf) {
            Ok(n) => {
                self.written += n as u64;
                Ok(n)
            }
            Err(e) => {
                let kind = e.kind();
                self.error = Some(e);
                Err(kind.into())
            }
        }
    }

    fn flush(&mut self) -> io::Result<()> {
        self.inner.flush()
    }
}
