//! Read-only snapshots of a ledger file, for tools such as `streamx cache`.
//!
//! A snapshot maps the file and reads its atomics without taking the lock and without
//! recovering anything, so it shows the work dead processes left behind (which
//! [`Ledger::open`](super::Ledger::open) would undo) and never changes the node's limit.
//! Values read while a job runs may be a moment apart; each field is itself consistent.

use std::fs::OpenOptions;
use std::io::Read;
use std::path::{Path, PathBuf};
use std::sync::atomic::Ordering::{Acquire, Relaxed};

use super::layout::{Header, View, LOCAL, MAGIC, NO_LIMIT, PINNED_FOREVER, PREPARING, VERSION};
use super::ledger::{owner, ShardState};
use super::lock::ProcessId;
use super::owner::Owner;
use crate::error::{Error, Result};

/// One shard's entry as read from the ledger.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ShardSnapshot {
    /// Where the shard stands.
    pub state: ShardState,
    /// Bytes on disk when local; the reservation while preparing.
    pub bytes: u64,
    /// Pins over all processes, dead ones included until recovered.
    pub pins: u32,
    /// Nanoseconds since the Unix epoch; 0 means never.
    pub last_access: u64,
    /// False for the user's only copy (a stream without a remote).
    pub evictable: bool,
    /// The process preparing the shard and whether it still runs.
    pub owner: Option<(ProcessId, bool)>,
}

/// A process's pins on one shard.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct PinHolder {
    /// The process holding the pins.
    pub process: ProcessId,
    /// Whether it still runs (a dead holder's pins are stale until recovered).
    pub alive: bool,
    /// The shard pinned.
    pub shard: usize,
    /// How many nested pins it holds.
    pub count: u32,
}

/// Everything a ledger file records, read at one moment.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct LedgerSnapshot {
    /// The ledger file.
    pub path: PathBuf,
    /// The node's byte limit, if any.
    pub limit: Option<u64>,
    /// Bytes of local shards plus reservations of shards being prepared.
    pub usage: u64,
    /// One entry per shard, by shard id.
    pub shards: Vec<ShardSnapshot>,
    /// The pin table's occupied slots.
    pub pins: Vec<PinHolder>,
}

/// Reads the ledger at `path` without locking, recovering or changing it.
///
/// # Errors
/// [`Error::NotFound`] or [`Error::Io`] if the file cannot be read;
/// [`Error::InvalidArgument`] if it is not a ledger of this version or its length does not match its
/// shard count.
pub fn snapshot(path: impl AsRef<Path>) -> Result<LedgerSnapshot> {
    let path = path.as_ref();
    let not_ledger = |why: &str| {
        Error::InvalidArgument(format!("{} is not a cache ledger: {why}", path.display()))
    };
    let mut file = OpenOptions::new()
        .read(true)
        .write(true)
        .open(path)
        .map_err(|e| Error::io(path, e))?;
    let mut head = [0u8; size_of::<Header>()];
    file.read_exact(&mut head)
        .map_err(|_| not_ledger("shorter than its header"))?;
    let word = |i: usize| u64::from_le_bytes(head[i * 8..i * 8 + 8].try_into().unwrap_or([0; 8]));
    if word(0) != MAGIC || word(1) != VERSION {
        return Err(not_ledger("bad magic or version"));
    }
    let num_shards = usize::try_from(word(2)).map_err(|_| not_ledger("bad shard count"))?;
    let len = file.metadata().map_err(|e| Error::io(path, e))?.len();
    if len != View::file_len(num_shards) {
        return Err(not_ledger("its length does not match its shard count"));
    }
    let view = View::map(&file, num_shards).map_err(|e| Error::io(path, e))?;
    Ok(read_view(path, &view))
}

fn state_of(raw: u32) -> ShardState {
    match raw {
        LOCAL => ShardState::Local,
        PREPARING => ShardState::Preparing,
        _ => ShardState::Remote,
    }
}

fn read_view(path: &Path, view: &View) -> LedgerSnapshot {
    // Liveness is a lock held on an owner file beside the ledger (see `super::owner`).
    let owners = Owner::new(path.parent().unwrap_or(Path::new(".")));
    let is_alive = |process: ProcessId| owners.is_alive(process);
    let header = view.header();
    let limit = Some(header.limit.load(Relaxed)).filter(|&l| l != NO_LIMIT);
    let shards = view
        .entries()
        .iter()
        .map(|e| {
            let state = state_of(e.state.load(Acquire));
            let owner = owner(e);
            ShardSnapshot {
                state,
                bytes: e.bytes.load(Relaxed),
                pins: e.pins.load(Relaxed),
                last_access: e.last_access.load(Relaxed),
                evictable: e.flags.load(Relaxed) & PINNED_FOREVER == 0,
                owner: (state == ShardState::Preparing).then(|| (owner, is_alive(owner))),
            }
        })
        .collect();
    let pins = view
        .pin_slots()
        .iter()
        .filter_map(|s| {
            let pid = s.pid.load(Acquire);
            let process = ProcessId {
                pid,
                start: s.start.load(Relaxed),
            };
            (pid != 0).then(|| PinHolder {
                process,
                alive: is_alive(process),
                shard: usize::try_from(s.shard.load(Relaxed)).unwrap_or(usize::MAX),
                count: s.count.load(Relaxed),
            })
        })
        .collect();
    LedgerSnapshot {
        path: path.to_path_buf(),
        limit,
        usage: header.usage.load(Relaxed),
        shards,
        pins,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::cache::Ledger;

    #[test]
    fn snapshot_reads_states_pins_and_limit_without_changing_them() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("ledger");
        let ledger = Ledger::open(&path, 3, Some(100)).unwrap();
        ledger.sync(0, Some(10)).unwrap();
        ledger.begin_download(1, 20).unwrap();
        ledger.pin(0).unwrap();
        ledger.set_evictable(2..3, false).unwrap();
        let snap = snapshot(&path).unwrap();
        assert_eq!(snap.limit, Some(100));
        assert_eq!(snap.usage, 30);
        assert_eq!(snap.shards[0].state, ShardState::Local);
        assert_eq!(snap.shards[0].pins, 1);
        assert_eq!(snap.shards[1].state, ShardState::Preparing);
        let (owner, alive) = snap.shards[1].owner.unwrap();
        assert_eq!(owner, ledger.me().unwrap());
        assert!(alive);
        assert!(!snap.shards[2].evictable);
        assert_eq!(snap.pins.len(), 1);
        assert_eq!((snap.pins[0].shard, snap.pins[0].count), (0, 1));
        assert_eq!(ledger.limit(), Some(100));
    }

    #[test]
    fn snapshot_rejects_other_files() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("not-a-ledger");
        std::fs::write(&path, vec![7u8; 200]).unwrap();
        assert!(matches!(snapshot(&path), Err(Error::InvalidArgument(_))));
        assert!(matches!(
            snapshot(dir.path().join("missing")),
            Err(Error::NotFound(_))
        ));
    }
}
