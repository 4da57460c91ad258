//! A py1e epoch's counted draws as bytes, so that a later start of the same epoch reads them
//! instead of counting them again (see [`super::lazy`]).
//!
//! Layout, little-endian: `magic (8) | version u32 | key digest u128 | shards u64 | nodes u64
//! | counted nodes u64 | counted spans u64 | inc u128 | the generator after them | per counted
//! node its small-block flag u8 | per counted span its shuffle generator, shift low f64, shift
//! high f64 and shift generator | xxh3-128 of everything before`. A generator is
//! `state u128 | has-buffer u8 | buffer u32`; every generator of an epoch shares its `inc`.
//!
//! Nothing read is trusted: the checksum, magic, version and key (a digest of every input the
//! draws depend on, and the inputs' lengths), the exact length the counted spans imply (checked
//! before anything is allocated) and every shift range are checked; [`decode`] returns `None`
//! on any mismatch.

use xxhash_rust::xxh3::{xxh3_128, Xxh3};

use super::node_draws::NodeDraws;
use super::window::Shifts;
use crate::shuffle::rng::Pcg64;
use crate::shuffle::spans::Span;

const MAGIC: [u8; 8] = *b"SXPY1EDR";
/// Bumped whenever what a count keeps, or how it draws, changes: older files are then ignored.
const VERSION: u32 = 1;
const RNG: usize = 16 + 1 + 4;
const SPAN: usize = 2 * RNG + 16;
const HEADER: usize = 8 + 4 + 16 + 4 * 8 + 16 + RNG;
const CHECK: usize = 16;

/// What an epoch's draws depend on: a digest of every input and the inputs' lengths.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) struct Key {
    pub(super) digest: u128,
    pub(super) shards: u64,
    pub(super) nodes: u64,
}

impl Key {
    /// The key of py1e over shuffle units of `sizes` (see [`super::LazyPy1e::new`]).
    pub(super) fn new(
        sizes: &[i64],
        num_nodes: usize,
        seed: u128,
        epoch_seed: u128,
        block_size: usize,
    ) -> Self {
        let mut hash = Xxh3::new();
        hash.update(b"streamx py1e counted draws\0");
        for word in [sizes.len() as u64, num_nodes as u64, block_size as u64] {
            hash.update(&word.to_le_bytes());
        }
        hash.update(&seed.to_le_bytes());
        hash.update(&epoch_seed.to_le_bytes());
        let mut buf = Vec::with_capacity(8 * 4096);
        for chunk in sizes.chunks(4096) {
            buf.clear();
            buf.extend(chunk.iter().flat_map(|s| s.to_le_bytes()));
            hash.update(&buf);
        }
        Key {
            digest: hash.digest128(),
            shards: sizes.len() as u64,
            nodes: num_nodes as u64,
        }
    }
}

/// The file's length with `nodes` counted nodes holding `spans` spans.
fn file_len(nodes: usize, spans: usize) -> u64 {
    let body = (spans as u64).saturating_mul(SPAN as u64);
    body.saturating_add((HEADER + CHECK) as u64 + nodes as u64)
}

/// The longest file an epoch with these node `groups` has: every node counted.
pub(super) fn max_len(groups: &[(usize, usize)]) -> u64 {
    file_len(groups.len(), groups.last().map_or(0, |g| g.1))
}

/// The counted `nodes` (the first of the epoch, in order) and the generator `after` them.
pub(super) fn encode(key: &Key, inc: u128, nodes: &[NodeDraws], after: &Pcg64) -> Vec<u8> {
    let spans: usize = nodes.iter().map(|n| n.sizes.len()).sum();
    let mut out = Vec::with_capacity(file_len(nodes.len(), spans) as usize);
    out.extend_from_slice(&MAGIC);
    out.extend_from_slice(&VERSION.to_le_bytes());
    out.extend_from_slice(&key.digest.to_le_bytes());
    for word in [key.shards, key.nodes, nodes.len() as u64, spans as u64] {
        out.extend_from_slice(&word.to_le_bytes());
    }
    out.extend_from_slice(&inc.to_le_bytes());
    put_rng(&mut out, after);
    out.extend(nodes.iter().map(|n| u8::from(n.small_block)));
    for node in nodes {
        for (shuffle, shifts) in node.shuffles.iter().zip(&node.shifts) {
            put_rng(&mut out, shuffle);
            out.extend_from_slice(&shifts.low.to_le_bytes());
            out.extend_from_slice(&shifts.high.to_le_bytes());
            put_rng(&mut out, shifts.draws());
        }
    }
    let check = xxh3_128(&out);
    out.extend_from_slice(&check.to_le_bytes());
    out
}

pub(super) fn put_rng(out: &mut Vec<u8>, rng: &Pcg64) {
    let (state, _, buf) = rng.words();
    out.extend_from_slice(&state.to_le_bytes());
    out.push(u8::from(buf.is_some()));
    out.extend_from_slice(&buf.unwrap_or(0).to_le_bytes());
}

/// The counted nodes and the generator after them, if `bytes` hold exactly what [`encode`]
/// wrote for this `key` over these `spans` grouped by node, with the epoch generator's `inc`.
pub(super) fn decode(
    bytes: &[u8],
    key: &Key,
    inc: u128,
    spans: &[Span],
    groups: &[(usize, usize)],
) -> Option<(Vec<NodeDraws>, Pcg64)> {
    let mut r = keyed_body(bytes, HEADER, MAGIC, VERSION, key)?;
    let counted = usize::try_from(r.u64()?).ok()?;
    if counted == 0 || counted > groups.len() {
        return None;
    }
    let span_count = groups[counted - 1].1;
    let exact =
        r.u64()? == span_count as u64 && bytes.len() as u64 == file_len(counted, span_count);
    if !exact || r.u128()? != inc {
        return None;
    }
    let after = r.rng(inc)?;
    let flags = r.take(counted)?.to_vec();
    let mut nodes = Vec::with_capacity(counted);
    for (&(a, b), flag) in groups[..counted].iter().zip(flags) {
        let small_block = match flag {
            0 => false,
            1 => true,
            _ => return None,
        };
        nodes.push(read_node(&mut r, inc, &spans[a..b], small_block)?);
    }
    Some((nodes, after))
}

/// The fields of `bytes` after its magic, version and key: `None` unless `bytes` end with the
/// xxh3-128 of what comes before (at least `header` bytes), which opens with `magic`,
/// `version` and `key`'s fields as [`encode`] writes them.
pub(super) fn keyed_body<'a>(
    bytes: &'a [u8],
    header: usize,
    magic: [u8; 8],
    version: u32,
    key: &Key,
) -> Option<Reader<'a>> {
    let (body, check) = bytes.split_at(bytes.len().checked_sub(CHECK)?);
    if body.len() < header || xxh3_128(body).to_le_bytes() != check {
        return None;
    }
    let mut r = Reader(body);
    let same = r.take(8)? == magic
        && r.u32()? == version
        && r.u128()? == key.digest
        && r.u64()? == key.shards
        && r.u64()? == key.nodes;
    same.then_some(r)
}

/// One node's kept draws; `None` if a generator or shift range is not one a count makes.
fn read_node(r: &mut Reader<'_>, inc: u128, node: &[Span], small_block: bool) -> Option<NodeDraws> {
    let sizes: Vec<usize> = node.iter().map(|&(b, e)| (e - b) as usize).collect();
    let total: usize = sizes.iter().sum();
    let mut shuffles = Vec::with_capacity(sizes.len());
    let mut shifts = Vec::with_capacity(sizes.len());
    let mut offset = 0;
    for &size in &sizes {
        shuffles.push(r.rng(inc)?);
        let (low, high) = (r.f64()?, r.f64()?);
        // A count gives `-offset <= low <= 0 <= high <= total - offset - size`.
        let room = (total - offset - size) as f64;
        if !(low >= -(offset as f64) && low <= 0.0 && high >= 0.0 && high <= room) {
            return None;
        }
        shifts.push(Shifts::new(low, high, r.rng(inc)?));
        offset += size;
    }
    Some(NodeDraws::new(sizes, shuffles, shifts, small_block))
}

/// Reads the little-endian fields of a checked body in order.
pub(super) struct Reader<'a>(pub(super) &'a [u8]);

impl<'a> Reader<'a> {
    pub(super) fn take(&mut self, n: usize) -> Option<&'a [u8]> {
        if n > self.0.len() {
            return None;
        }
        let (head, rest) = self.0.split_at(n);
        self.0 = rest;
        Some(head)
    }

    fn array<const N: usize>(&mut self) -> Option<[u8; N]> {
        self.take(N)?.try_into().ok()
    }

    pub(super) fn u32(&mut self) -> Option<u32> {
        self.array().map(u32::from_le_bytes)
    }

    pub(super) fn u64(&mut self) -> Option<u64> {
        self.array().map(u64::from_le_bytes)
    }

    pub(super) fn u128(&mut self) -> Option<u128> {
        self.array().map(u128::from_le_bytes)
    }

    pub(super) fn f64(&mut self) -> Option<f64> {
        self.array().map(f64::from_le_bytes)
    }

    pub(super) fn rng(&mut self, inc: u128) -> Option<Pcg64> {
        let state = self.u128()?;
        let (flag, buf) = (self.take(1)?[0], self.u32()?);
        let buf = match (flag, buf) {
            (0, 0) => None,
            (1, buf) => Some(buf),
            _ => return None,
        };
        Some(Pcg64::from_words(state, inc, buf))
    }
}
