//! py1e's resume marks: per canonical node, the draws at one span a little before where a
//! resume at `sample_in_epoch` starts reading it ([`super::seeded::Mark`]), so that a process
//! resuming the epoch on a node that never counted it lays the node out from there instead of
//! counting every draw before (about 0.5 s at 10^9 samples).
//!
//! A state dict carries them. The process that makes the state dict takes them from the count
//! cache its node's workers left ([`super::draws_store`]): only the canonical nodes counted
//! there (the workers' own, and every node once the node's first worker has counted them
//! ahead, [`super::count_ahead`]); nothing is counted for them. Layout, little-endian: `magic (8) | version u32 |
//! key digest u128 | shards u64 | nodes u64 | inc u128 | marks u32 | per mark its node u32,
//! span u64, shuffle generator, shift low f64, shift high f64, shift generator, reach low f64,
//! reach high f64 | xxh3-128 of everything before` (a generator as in [`super::draws_file`]).
//! [`decode`] returns `None` unless every field checks out against the epoch's key.

use std::path::Path;

use crate::epoch_config::BatchingMethod;
use crate::epoch_config::EpochConfig;
use crate::resample::resample_units;
use crate::shuffle::ShuffleAlgo;
use crate::Result;

use xxhash_rust::xxh3::xxh3_128;

use super::draws_file::{decode as decode_draws, keyed_body, max_len, put_rng, Key};
use super::draws_store;
use super::node_draws::NodeDraws;
use super::pick::slack;
use super::seeded::Mark;
use super::window::Shifts;
use crate::shuffle::spans::{NodeSpans, Span};

const MAGIC: [u8; 8] = *b"SXPY1EMK";
const VERSION: u32 = 1;
const HEADER: usize = 8 + 4 + 16 + 8 + 8 + 16 + 4;
const MARK: usize = 4 + 8 + 2 * (16 + 1 + 4) + 4 * 8;
const CHECK: usize = 16;
/// At most this many nodes get a mark: 2.5 KiB of base64, so that the whole state dict stays
/// within the 4 KiB mosaicml-streaming's `load_state_dict` accepts.
const MAX_MARKS: usize = 24;

/// py1e's resume marks for a state dict at `cfg`'s `sample_in_epoch`, from the count cache
/// in `dir`: `None` for another shuffle or batching method, or where `dir` holds no count of
/// this epoch. Reads one file and never counts: cheap enough for every checkpoint.
pub fn resume_marks(cfg: &EpochConfig, dir: &Path) -> Result<Option<Vec<u8>>> {
    let Some(epoch) = MarkedEpoch::of(cfg)? else {
        return Ok(None);
    };
    Ok(from_count_cache(
        &epoch.sizes,
        epoch.num_nodes,
        epoch.seeds,
        epoch.block_size,
        dir,
        cfg.sample_in_epoch,
    ))
}

/// The py1e shuffle of an epoch whose state dicts carry marks: what keys its counted draws.
pub(super) struct MarkedEpoch {
    /// Every shuffle unit's size.
    pub(super) sizes: Vec<i64>,
    pub(super) num_nodes: usize,
    /// The run's and the epoch's seeds.
    pub(super) seeds: (u128, u128),
    pub(super) block_size: usize,
}

impl MarkedEpoch {
    /// `cfg`'s py1e shuffle; `None` for another shuffle or batching method, and for sizes the
    /// plan refuses itself.
    pub(super) fn of(cfg: &EpochConfig) -> Result<Option<Self>> {
        let py1e = cfg.shuffle_algo == ShuffleAlgo::Py1e;
        if !cfg.shuffle || !py1e || cfg.batching_method != BatchingMethod::Random {
            return Ok(None);
        }
        let units = resample_units(&cfg.stream_shards(), &cfg.resample_params())?;
        let sizes = units.shuffle_units;
        if sizes.iter().any(|&s| s < 0) || cfg.num_canonical_nodes == 0 {
            return Ok(None);
        }
        let seed = u128::from(cfg.seed);
        Ok(Some(MarkedEpoch {
            sizes,
            num_nodes: cfg.num_canonical_nodes,
            seeds: (seed, seed + u128::from(cfg.epoch)),
            block_size: cfg.shuffle_block_size,
        }))
    }
}

/// The marks of the canonical nodes counted in `dir`'s file for this epoch, for a resume at
/// `sample_in_epoch`; `None` where the file is missing, unreadable or not this epoch's.
pub(super) fn from_count_cache(
    sizes: &[i64],
    num_nodes: usize,
    (seed, epoch_seed): (u128, u128),
    block_size: usize,
    dir: &Path,
    sample_in_epoch: u64,
) -> Option<Vec<u8>> {
    let NodeSpans {
        spans,
        groups,
        epoch_rng,
        ..
    } = NodeSpans::new(sizes, num_nodes, seed, epoch_seed);
    let key = Key::new(sizes, num_nodes, seed, epoch_seed, block_size);
    draws_store::check_private(dir).ok()?;
    let name = draws_store::file_name(key.digest);
    let bytes = draws_store::read(dir, &name, max_len(&groups)).ok()??;
    let inc = epoch_rng.words().1;
    let (nodes, _) = decode_draws(&bytes, &key, inc, &spans, &groups)?;
    let rank = usize::try_from(sample_in_epoch / num_nodes as u64).unwrap_or(usize::MAX);
    let marks: Vec<(usize, Mark)> = (0..)
        .zip(&nodes)
        .filter(|(_, draws)| rank < draws.total)
        .filter_map(|(k, draws)| Some((k, draws.mark_at(mark_span(draws, rank))?)))
        .take(MAX_MARKS)
        .collect();
    (!marks.is_empty()).then(|| encode(&key, inc, &marks))
}

/// The span whose draws a resume's first pieces start from, reading the node from `rank` on:
/// a shift margin and twice a pick's first slack before it, past every index the first pieces
/// look at (their bounds start one slack before their ranks, and the indices one reach
/// before that).
fn mark_span(draws: &NodeDraws, rank: usize) -> usize {
    let at = rank.saturating_sub(draws.margin + 2 * slack(draws));
    draws.starts.partition_point(|&s| s <= at).saturating_sub(1)
}

pub(super) fn encode(key: &Key, inc: u128, marks: &[(usize, Mark)]) -> Vec<u8> {
    let mut out = Vec::with_capacity(HEADER + marks.len() * MARK + CHECK);
    out.extend_from_slice(&MAGIC);
    out.extend_from_slice(&VERSION.to_le_bytes());
    out.extend_from_slice(&key.digest.to_le_bytes());
    out.extend_from_slice(&key.shards.to_le_bytes());
    out.extend_from_slice(&key.nodes.to_le_bytes());
    out.extend_from_slice(&inc.to_le_bytes());
    out.extend_from_slice(&(marks.len() as u32).to_le_bytes());
    for (node, mark) in marks {
        out.extend_from_slice(&(*node as u32).to_le_bytes());
        out.extend_from_slice(&(mark.first as u64).to_le_bytes());
        put_rng(&mut out, &mark.shuffle);
        out.extend_from_slice(&mark.shifts.low.to_le_bytes());
        out.extend_from_slice(&mark.shifts.high.to_le_bytes());
        put_rng(&mut out, mark.shifts.draws());
        out.extend_from_slice(&mark.reach.0.to_le_bytes());
        out.extend_from_slice(&mark.reach.1.to_le_bytes());
    }
    let check = xxh3_128(&out);
    out.extend_from_slice(&check.to_le_bytes());
    out
}

/// Per canonical node, its draws seeded from the marks `bytes` hold for this epoch (`None`
/// for a node without one); `None` if `bytes` are not marks of this epoch, in full.
pub(super) fn decode(
    bytes: &[u8],
    key: &Key,
    inc: u128,
    spans: &[Span],
    groups: &[(usize, usize)],
) -> Option<Vec<Option<NodeDraws>>> {
    let mut r = keyed_body(bytes, HEADER, MAGIC, VERSION, key)?;
    let same_inc = r.u128()? == inc;
    let count = r.u32()? as usize;
    if !same_inc || count > groups.len() || bytes.len() != HEADER + count * MARK + CHECK {
        return None;
    }
    let mut seeded: Vec<Option<NodeDraws>> = groups.iter().map(|_| None).collect();
    for _ in 0..count {
        let node = r.u32()? as usize;
        let first = usize::try_from(r.u64()?).ok()?;
        let shuffle = r.rng(inc)?;
        let (low, high) = (r.f64()?, r.f64()?);
        let shifts = Shifts::new(low, high, r.rng(inc)?);
        let reach = (r.f64()?, r.f64()?);
        let &(a, b) = groups.get(node)?;
        let mark = Mark {
            first,
            shuffle,
            shifts,
            reach,
        };
        let slot = seeded.get_mut(node)?;
        if slot.is_some() {
            return None;
        }
        *slot = Some(NodeDraws::seeded(&spans[a..b], mark)?);
    }
    Some(seeded)
}
