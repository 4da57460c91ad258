//! The header-by-header scan and the windows it reads.

use super::numbers::{bytes_repr, field_number};
use super::pax::{parse_pax, pax_size, Pax};
use super::source::ReadAt;

const BLOCK: u64 = 512;
/// Long names and pax records come from the input: bounded so they cannot exhaust memory.
const MAX_META: i128 = 1 << 20;
/// The largest window a caller may ask for (a window is allocated whole).
const MAX_WINDOW_LIMIT: u64 = 1 << 30;

/// How much a scan reads at once: from `min` bytes after a jumped body, doubling up to
/// `max` while it reads on; a body of more than `skip` bytes is jumped (never read).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Windowing {
    min: u64,
    max: u64,
    skip: u64,
}

impl Windowing {
    /// The sizes the remote scan has always used: 64 KiB to 8 MiB, bodies over 4 MiB jumped.
    pub const DEFAULT: Windowing = Windowing {
        min: 64 << 10,
        max: 8 << 20,
        skip: 4 << 20,
    };

    /// `None` unless `1 <= min <= max <= 1 GiB` and `skip <= 1 GiB`.
    pub fn new(min: u64, max: u64, skip: u64) -> Option<Windowing> {
        (min >= 1 && min <= max && max <= MAX_WINDOW_LIMIT && skip <= MAX_WINDOW_LIMIT)
            .then_some(Windowing { min, max, skip })
    }
}

/// A regular file of the archive: its path as stored (bytes, not always UTF-8) and where
/// its data lies.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Member {
    pub name: Vec<u8>,
    pub offset: u64,
    pub size: u64,
}

/// Why a scan stopped: the archive is not a well-formed tar (the message names it and the
/// offset), or the source failed.
#[derive(Debug)]
pub enum ScanError<E> {
    Corrupt(String),
    Read(E),
}

struct Windows<R> {
    source: R,
    size: u64,
    start: u64,
    data: Vec<u8>,
    window: u64,
    sizes: Windowing,
}

impl<R: ReadAt> Windows<R> {
    /// Bytes `[start, start + length)` (fewer where the source ends first); `after` is the
    /// size of the body before them, which decides whether the window reads on or jumps.
    fn get(&mut self, start: u64, length: u64, after: u64) -> Result<&[u8], R::Error> {
        let end = start + length;
        let held_to = self.start + self.data.len() as u64;
        if !(self.start <= start && end <= held_to) {
            let begin = if after > self.sizes.skip || self.data.is_empty() {
                self.window = self.sizes.min;
                start
            } else {
                self.window = (2 * self.window).min(self.sizes.max);
                start.min(held_to)
            };
            // Bounded by the window, or by a header or metadata body past a small gap.
            let want = (end - begin).max(self.window).min(self.size - begin);
            let want = usize::try_from(want).unwrap_or(usize::MAX);
            self.data = self.source.read_at(begin, want)?;
            self.start = begin;
        }
        let from = usize::try_from(start - self.start).unwrap_or(usize::MAX);
        let to = usize::try_from(end - self.start).unwrap_or(usize::MAX);
        let len = self.data.len();
        Ok(&self.data[from.min(len)..to.min(len)])
    }
}

/// The archive's regular files in order, each as soon as its header is read (a scan that
/// stops early reads only the headers before the members it wanted).
pub struct TarScanner<R> {
    windows: Windows<R>,
    shown: String,
    at: u64,
    body: u64,
    long_name: Option<Vec<u8>>,
    pax: Pax,
    over: bool,
}

fn corrupt<T, E>(message: String) -> Result<T, ScanError<E>> {
    Err(ScanError::Corrupt(message))
}

fn text(raw: &[u8]) -> &[u8] {
    raw.split(|&b| b == 0).next().unwrap_or(&[])
}

fn padded(offset: u64, length: u64) -> u64 {
    offset + length.div_ceil(BLOCK) * BLOCK
}

impl<R: ReadAt> TarScanner<R> {
    /// A scan of the `size`-byte archive in `source`; `shown` names it in errors.
    pub fn new(source: R, size: u64, shown: impl Into<String>, sizes: Windowing) -> Self {
        TarScanner {
            windows: Windows {
                source,
                size,
                start: 0,
                data: Vec::new(),
                window: sizes.min,
                sizes,
            },
            shown: shown.into(),
            at: 0,
            body: 0,
            long_name: None,
            pax: Pax::default(),
            over: false,
        }
    }

    /// The source being read.
    pub fn source(&self) -> &R {
        &self.windows.source
    }

    /// Every remaining member.
    pub fn collect_all(mut self) -> Result<Vec<Member>, ScanError<R::Error>> {
        let mut out = Vec::new();
        while let Some(member) = self.next_member()? {
            out.push(member);
        }
        Ok(out)
    }

    /// The next member, `None` at the end. A scan that failed is over: it answers `None`.
    pub fn next_member(&mut self) -> Result<Option<Member>, ScanError<R::Error>> {
        if self.over {
            return Ok(None);
        }
        let found = self.step();
        if !matches!(found, Ok(Some(_))) {
            self.over = true;
        }
        found
    }

    fn not_a_tar<T>(&self) -> Result<T, ScanError<R::Error>> {
        corrupt(format!(
            "{} is not a tar file: no tar header at its start",
            self.shown
        ))
    }

    fn number(
        &self,
        header: &[u8],
        range: std::ops::Range<usize>,
        what: &str,
    ) -> Result<i128, ScanError<R::Error>> {
        field_number(&header[range]).or_else(|bad| {
            if self.at == 0 {
                return self.not_a_tar();
            }
            corrupt(format!(
                "{}: the tar header at offset {} has a bad {what} field {}",
                self.shown,
                self.at,
                bytes_repr(&bad)
            ))
        })
    }

    fn check_sum(&self, header: &[u8]) -> Result<(), ScanError<R::Error>> {
        let stored = self.number(header, 148..156, "checksum")?;
        // Summed as u32 (512 bytes of at most 255 fit), which vectorizes; compared as i128.
        let field: u32 = header[148..156].iter().map(|&b| u32::from(b)).sum();
        let all: u32 = header.iter().map(|&b| u32::from(b)).sum();
        let unsigned = i128::from(all) - i128::from(field) + 8 * 0x20; // the field as spaces
        if stored == unsigned {
            return Ok(());
        }
        // Some old writers summed signed bytes.
        let high = header[..148]
            .iter()
            .chain(&header[156..])
            .filter(|&&b| b > 127)
            .count() as i128;
        if stored == unsigned - 256 * high {
            return Ok(());
        }
        if self.at == 0 {
            return self.not_a_tar();
        }
        corrupt(format!(
            "{}: the tar header at offset {} is corrupt (checksum)",
            self.shown, self.at
        ))
    }

    fn cut_short<T>(&self) -> Result<T, ScanError<R::Error>> {
        corrupt(format!(
            "{} is truncated: a header at offset {} is cut short",
            self.shown, self.at
        ))
    }

    fn step(&mut self) -> Result<Option<Member>, ScanError<R::Error>> {
        let size = self.windows.size;
        if size < BLOCK {
            return corrupt(format!(
                "{} is not a tar file: {size} bytes, less than a header",
                self.shown
            ));
        }
        while self.at + BLOCK <= size {
            let at = self.at;
            let header: [u8; 512] = match self.windows.get(at, BLOCK, self.body) {
                Ok(bytes) => match bytes.try_into() {
                    Ok(header) => header,
                    Err(_) => return self.cut_short(),
                },
                Err(err) => return Err(ScanError::Read(err)),
            };
            if header.iter().all(|&b| b == 0) {
                return Ok(None); // the end-of-archive blocks
            }
            self.check_sum(&header)?;
            let kind = header[156];
            let declared = self.number(&header, 124..136, "size")?;
            let data_at = at + BLOCK;
            if declared < 0 || i128::from(data_at) + declared > i128::from(size) {
                return corrupt(format!(
                    "{} is truncated: the member at offset {at} declares {declared} bytes, \
                     past the end of the file ({size} bytes)",
                    self.shown
                ));
            }
            let mut length = declared as u64; // within the file: checked above
            let mut following = padded(data_at, length);
            let mut member = None;
            match kind {
                b'L' | b'x' => {
                    if declared > MAX_META {
                        return corrupt(format!(
                            "{}: the tar header at offset {at} declares {declared} bytes of \
                             metadata, more than a name or pax record can need",
                            self.shown
                        ));
                    }
                    let data = match self.windows.get(data_at, length, 0) {
                        Ok(data) if data.len() as u64 == length => data,
                        Ok(_) => return self.cut_short(),
                        Err(err) => return Err(ScanError::Read(err)),
                    };
                    if kind == b'L' {
                        self.long_name = Some(text(data).to_vec());
                    } else {
                        let parsed = parse_pax(data);
                        self.pax = match parsed {
                            Some(pax) => pax,
                            None => {
                                return corrupt(format!(
                                    "{}: bad pax record in the header at offset {at}",
                                    self.shown
                                ))
                            }
                        };
                    }
                    length = 0; // read, not jumped
                }
                b'0' | 0 | b'7' => {
                    let name = match (self.pax.path.take(), self.long_name.take()) {
                        (Some(path), _) => path,
                        (None, Some(long)) => long,
                        (None, None) => header_name(&header),
                    };
                    if let Some(value) = self.pax.size.take() {
                        let found = pax_size(&value)
                            .filter(|&n| i128::from(data_at) + n <= i128::from(size));
                        let Some(found) = found else {
                            return corrupt(format!(
                                "{}: the pax size of the member at offset {at} is past the end",
                                self.shown
                            ));
                        };
                        length = found as u64; // within the file: filtered above
                        following = padded(data_at, length);
                    }
                    member = Some(Member {
                        name,
                        offset: data_at,
                        size: length,
                    });
                    self.long_name = None;
                    self.pax = Pax::default();
                }
                b'1'..=b'6' | b'g' | b'K' | b'V' | b'D' | b'M' | b'S' => {
                    self.long_name = None;
                    self.pax = Pax::default();
                }
                _ => {
                    return corrupt(format!(
                        "{}: the tar header at offset {at} has an unknown type {}",
                        self.shown,
                        bytes_repr(&[kind])
                    ))
                }
            }
            self.at = following;
            self.body = length;
            if member.is_some() {
                return Ok(member);
            }
        }
        if self.at < size {
            return self.cut_short();
        }
        Ok(None) // no end-of-archive blocks: tolerated, as tar itself does
    }
}

/// A plain or ustar header's own name: the ustar prefix, if any, joined by `/`.
fn header_name(header: &[u8; 512]) -> Vec<u8> {
    let name = text(&header[0..100]);
    if &header[257..262] == b"ustar" && header[345..500].iter().any(|&b| b != 0) {
        let mut joined = text(&header[345..500]).to_vec();
        joined.push(b'/');
        joined.extend_from_slice(name);
        return joined;
    }
    name.to_vec()
}
