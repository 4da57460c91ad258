//! Hostile values written into the fields of a valid ledger file. The offsets mirror
//! `rust/streamx-core/src/cache/layout.rs`; `check_layout` proves them against the ledger's
//! own getters when a fixture is made, so a layout change fails loudly instead of fuzzing
//! the wrong bytes.

use std::fs::OpenOptions;
use std::os::unix::fs::FileExt;
use std::path::Path;

use streamx_core::cache::{Ledger, ShardState};

use crate::ops::Bytes;

pub const HEADER: u64 = 64;
pub const ENTRY: u64 = 40;
pub const SLOT: u64 = 24;
/// Header field offsets.
pub const LIMIT: u64 = 24;
const USAGE: u64 = 32;
/// Entry field offsets.
const STATE: u64 = 0;
const BYTES: u64 = 24;

pub fn slot_count(n: usize) -> u64 {
    4 * n as u64 + 4096
}

pub fn slot_offset(n: usize, slot: u64) -> u64 {
    HEADER + ENTRY * n as u64 + SLOT * slot
}

/// One change to the file: a field overwritten, or (only where the ledger is opened anew)
/// the file cut or grown.
#[derive(Debug)]
pub enum Corruption {
    Field { offset: u64, width: u8, value: u64 },
    Length(i64),
}

/// (offset, width) of a header, entry or pin-slot field.
fn field(b: &mut Bytes, n: usize) -> (u64, u8) {
    let pick = b.u8();
    let which = b.u8();
    let entry = HEADER + ENTRY * (u64::from(which) % n as u64);
    let slots = slot_count(n);
    let slot = slot_offset(
        n,
        match which % 10 {
            8 => slots - 1,
            9 => slots - 2,
            i => u64::from(i),
        },
    );
    match pick % 16 {
        // magic, version, num_shards, limit, usage, pin_slots
        f @ 0..=5 => (u64::from(f) * 8, 8),
        // state, flags, owner_pid, pins; owner_start, bytes, last_access
        f @ 6..=9 => (entry + u64::from(f - 6) * 4, 4),
        f @ 10..=12 => (entry + 16 + u64::from(f - 10) * 8, 8),
        // pid, count; start, shard
        f @ 13..=14 => (slot + u64::from(f - 13) * 4, 4),
        _ => (slot + 8 + u64::from(pick >> 7) * 8, 8),
    }
}

/// A value that means something to the ledger: states, flags, the edges of the integer
/// types, the shard count, a live owner's token, our pid, or a planted dead owner's token.
fn value(b: &mut Bytes, n: usize, dir: &Path) -> u64 {
    match b.u8() % 12 {
        k @ 0..=3 => u64::from(k),
        4 => u64::from(u32::MAX),
        5 => u64::MAX,
        6 => n as u64,
        7 => live_tokens(dir)
            .get(usize::from(b.u8() % 2))
            .copied()
            .unwrap_or(0),
        8 => u64::from(std::process::id()),
        9 => plant_dead_owner(dir, b.u8()),
        10 => b.u64(),
        _ => u64::from(b.u8()) * 16,
    }
}

pub fn decode(b: &mut Bytes, n: usize, dir: &Path) -> Corruption {
    if b.u8() % 8 == 0 {
        return Corruption::Length(i64::from(b.u8() as i8) * 8);
    }
    let (offset, width) = field(b, n);
    Corruption::Field {
        offset,
        width,
        value: value(b, n, dir),
    }
}

impl Corruption {
    /// Writes the change into `path`; a length change only where `may_resize`.
    pub fn apply(&self, path: &Path, may_resize: bool) {
        let file = OpenOptions::new().write(true).open(path).unwrap();
        match *self {
            Corruption::Field {
                offset,
                width: 4,
                value,
            } => {
                file.write_all_at(&(value as u32).to_le_bytes(), offset)
                    .unwrap();
            }
            Corruption::Field { offset, value, .. } => {
                file.write_all_at(&value.to_le_bytes(), offset).unwrap();
            }
            Corruption::Length(delta) if may_resize => {
                let len = file.metadata().unwrap().len();
                file.set_len(len.saturating_add_signed(delta)).unwrap();
            }
            Corruption::Length(_) => {}
        }
    }
}

/// Tokens of the owner files held by live openers (file names are 16 hex digits).
fn live_tokens(dir: &Path) -> Vec<u64> {
    let Ok(names) = std::fs::read_dir(dir.join("owners")) else {
        return Vec::new();
    };
    let mut tokens: Vec<u64> = names
        .flatten()
        .filter_map(|e| u64::from_str_radix(e.file_name().to_str()?, 16).ok())
        .collect();
    tokens.sort_unstable();
    tokens
}

/// An owner file nobody holds locked: its owner is dead, but the file says otherwise.
fn plant_dead_owner(dir: &Path, tag: u8) -> u64 {
    let token = 0xdead_0000 + u64::from(tag);
    let owners = dir.join("owners");
    let _ = std::fs::create_dir_all(&owners);
    let _ = std::fs::write(owners.join(format!("{token:016x}")), b"");
    token
}

/// Panics unless the offsets above are where `ledger` (open on `path`) keeps its fields.
pub fn check_layout(ledger: &Ledger, path: &Path, n: usize) {
    let file = OpenOptions::new()
        .read(true)
        .write(true)
        .open(path)
        .unwrap();
    assert_eq!(
        file.metadata().unwrap().len(),
        slot_offset(n, slot_count(n)),
        "ledger length"
    );
    let last = HEADER + ENTRY * (n as u64 - 1);
    file.write_all_at(&12345u64.to_le_bytes(), last + BYTES)
        .unwrap();
    file.write_all_at(&2u32.to_le_bytes(), last + STATE)
        .unwrap();
    file.write_all_at(&777u64.to_le_bytes(), USAGE).unwrap();
    file.write_all_at(&99u64.to_le_bytes(), LIMIT).unwrap();
    assert_eq!(ledger.bytes(n - 1).unwrap(), 12345, "entry offsets");
    assert_eq!(
        ledger.state(n - 1).unwrap(),
        ShardState::Local,
        "entry offsets"
    );
    assert_eq!(
        (ledger.usage(), ledger.limit()),
        (777, Some(99)),
        "header offsets"
    );
    file.write_all_at(&[0; 8], last + BYTES).unwrap();
    file.write_all_at(&[0; 4], last + STATE).unwrap();
    file.write_all_at(&[0; 8], USAGE).unwrap();
    assert!(ledger.pin(0).unwrap());
    let mut slot = [0u8; 24];
    file.read_exact_at(&mut slot, slot_offset(n, 0)).unwrap();
    assert_eq!(
        slot[..4],
        std::process::id().to_le_bytes(),
        "pin slot offsets"
    );
    assert_eq!(slot[4..8], 1u32.to_le_bytes(), "pin slot offsets");
    ledger.unpin(0).unwrap();
}
