//! The ledger file's layout: a header, one entry per shard, then a table of pin slots, all
//! made of atomics so that every process can read them through a shared mapping.

use std::fs::File;
use std::mem::size_of;
use std::sync::atomic::{AtomicU32, AtomicU64};

use memmap2::{MmapOptions, MmapRaw};

use crate::mmap_guard::Guard;

pub(crate) const MAGIC: u64 = u64::from_le_bytes(*b"STMXLDG1");
/// 2: owners are identified by owner-file tokens, and pin slots scale with the shards.
pub(crate) const VERSION: u64 = 2;
/// Pin slots beyond the per-shard ones: room for many processes pinning the same shards.
const EXTRA_PIN_SLOTS: usize = 4096;

/// Concurrent (process, shard) pins a ledger for `num_shards` can hold. A process pins at most
/// its share of what the cache holds, so a few slots per shard leave the table far from full;
/// should it fill anyway, a pin is skipped rather than failing the run (see `Ledger::pin`).
pub(crate) fn pin_slot_count(num_shards: usize) -> usize {
    num_shards.saturating_mul(4).saturating_add(EXTRA_PIN_SLOTS)
}
/// `Header::limit` value meaning "no limit".
pub(crate) const NO_LIMIT: u64 = u64::MAX;

pub(crate) const REMOTE: u32 = 0;
pub(crate) const PREPARING: u32 = 1;
pub(crate) const LOCAL: u32 = 2;
/// `Entry::flags` bit: the shard's files are the only copy and must never be evicted.
pub(crate) const PINNED_FOREVER: u32 = 1;

#[repr(C)]
pub(crate) struct Header {
    pub magic: AtomicU64,
    pub version: AtomicU64,
    pub num_shards: AtomicU64,
    pub limit: AtomicU64,
    /// Bytes of local shards plus the reservations of shards being prepared.
    pub usage: AtomicU64,
    pub pin_slots: AtomicU64,
    _reserved: [AtomicU64; 2],
}

#[repr(C)]
pub(crate) struct Entry {
    pub state: AtomicU32,
    pub flags: AtomicU32,
    /// Pid of the process preparing the shard (0 when none).
    pub owner_pid: AtomicU32,
    /// Sum of the pin slots' counts for this shard.
    pub pins: AtomicU32,
    pub owner_start: AtomicU64,
    /// Bytes on disk when local; the reservation while preparing.
    pub bytes: AtomicU64,
    /// Nanoseconds since the Unix epoch; 0 means never.
    pub last_access: AtomicU64,
}

#[repr(C)]
pub(crate) struct PinSlot {
    /// 0 marks a free slot.
    pub pid: AtomicU32,
    pub count: AtomicU32,
    pub start: AtomicU64,
    pub shard: AtomicU64,
}

/// A shared mapping of a ledger file, checked to be large enough for `num_shards`.
pub(crate) struct View {
    // Declared before `map`: the guard is released before the range is unmapped.
    guard: Option<Guard>,
    map: MmapRaw,
    num_shards: usize,
}

impl View {
    pub(crate) fn file_len(num_shards: usize) -> u64 {
        (size_of::<Header>()
            + num_shards * size_of::<Entry>()
            + pin_slot_count(num_shards) * size_of::<PinSlot>()) as u64
    }

    pub(crate) fn map(file: &File, num_shards: usize) -> std::io::Result<Self> {
        let map = MmapOptions::new().map_raw(file)?;
        if (map.len() as u64) < Self::file_len(num_shards) {
            return Err(std::io::Error::new(
                std::io::ErrorKind::InvalidData,
                "ledger file too short",
            ));
        }
        // Someone truncating the file under us must not kill the process with SIGBUS.
        let guard = Guard::register_writable(map.as_ptr(), map.len());
        Ok(Self {
            guard,
            map,
            num_shards,
        })
    }

    /// Whether the file shrank under the mapping (its contents now read as zeros).
    pub(crate) fn poisoned(&self) -> bool {
        self.guard.as_ref().is_some_and(Guard::poisoned)
    }

    // Alignment: mappings start on a page boundary and every struct is a multiple of 8 bytes.
    pub(crate) fn header(&self) -> &Header {
        // SAFETY: the mapping is page-aligned, at least `file_len` long (checked in `map`), and
        // lives as long as `self`. Every field is an atomic, for which any bit pattern (including
        // the zeroes of a fresh file) is valid, and which is sound to share across processes.
        #[allow(unsafe_code, clippy::cast_ptr_alignment)]
        unsafe {
            &*self.map.as_ptr().cast::<Header>()
        }
    }

    pub(crate) fn entries(&self) -> &[Entry] {
        // SAFETY: as in `header`; entries start right after the 64-byte header (8-aligned) and
        // `num_shards` of them fit in the checked length.
        #[allow(unsafe_code, clippy::cast_ptr_alignment)]
        unsafe {
            let ptr = self.map.as_ptr().add(size_of::<Header>()).cast::<Entry>();
            std::slice::from_raw_parts(ptr, self.num_shards)
        }
    }

    pub(crate) fn pin_slots(&self) -> &[PinSlot] {
        // SAFETY: as in `entries`; the pin table follows the entries and fits the checked length.
        #[allow(unsafe_code, clippy::cast_ptr_alignment)]
        unsafe {
            let offset = size_of::<Header>() + self.num_shards * size_of::<Entry>();
            let ptr = self.map.as_ptr().add(offset).cast::<PinSlot>();
            std::slice::from_raw_parts(ptr, pin_slot_count(self.num_shards))
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sizes_keep_every_field_aligned() {
        assert_eq!(size_of::<Header>(), 64);
        assert_eq!(size_of::<Entry>() % 8, 0);
        assert_eq!(size_of::<PinSlot>() % 8, 0);
    }
}
