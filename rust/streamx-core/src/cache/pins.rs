//! Pins and crash recovery: the parts of [`Ledger`] that track processes, not bytes.

use std::collections::BTreeMap;
use std::sync::atomic::Ordering::{Acquire, Relaxed, Release};

use super::layout::{PinSlot, PREPARING};
use super::ledger::{owner, Ledger, RecoveryReport};
use super::lock::ProcessId;
use crate::error::{Error, Result};

impl Ledger {
    /// Protects a shard from eviction until the matching [`Ledger::unpin`] or this process's
    /// death. Pins nest.
    ///
    /// Returns whether the shard is pinned. A pin is a protection, not a requirement: should
    /// every pin slot be held by live processes, the shard is left unpinned (`false`, and no
    /// `unpin` is due) rather than failing the run; at worst it is evicted while read, and the
    /// reader keeps its mapped pages or fetches it again.
    pub fn pin(&self, shard: usize) -> Result<bool> {
        let entry = self.entry(shard)?;
        let _lock = self.lock()?;
        let me = self.me()?;
        let slot = match self.find_pin(me, shard) {
            Some(slot) => slot,
            None => match self.claim_pin_slot(me, shard) {
                Some(slot) => slot,
                None => return Ok(false),
            },
        };
        slot.count.fetch_add(1, Relaxed);
        entry.pins.fetch_add(1, Relaxed);
        Ok(true)
    }

    fn find_pin(&self, me: ProcessId, shard: usize) -> Option<&PinSlot> {
        self.view.pin_slots().iter().find(|s| {
            s.pid.load(Relaxed) == me.pid
                && s.start.load(Relaxed) == me.start
                && s.shard.load(Relaxed) == shard as u64
        })
    }

    /// A free pin slot, made out to `me` and `shard` with a zero count. Caller holds the lock.
    fn claim_pin_slot(&self, me: ProcessId, shard: usize) -> Option<&PinSlot> {
        let free = |s: &&PinSlot| s.pid.load(Relaxed) == 0;
        let slots = self.view.pin_slots();
        let slot = if let Some(slot) = slots.iter().find(free) {
            slot
        } else {
            self.recover_locked();
            slots.iter().find(free)?
        };
        slot.shard.store(shard as u64, Relaxed);
        slot.start.store(me.start, Relaxed);
        slot.count.store(0, Relaxed);
        slot.pid.store(me.pid, Release);
        Some(slot)
    }

    /// Releases one pin this process holds on the shard.
    pub fn unpin(&self, shard: usize) -> Result<()> {
        let entry = self.entry(shard)?;
        let _lock = self.lock()?;
        let Some(slot) = self.find_pin(self.me()?, shard) else {
            return Err(Error::InvalidArgument(format!(
                "shard {shard} is not pinned by this process"
            )));
        };
        if slot.count.fetch_sub(1, Relaxed) == 1 {
            slot.pid.store(0, Release);
        }
        entry.pins.fetch_sub(1, Relaxed);
        Ok(())
    }

    /// Undoes downloads and pins left by dead processes, and removes their owner files.
    /// `DataLoader` workers end by `os._exit`, so nothing of theirs drops its owner file: a
    /// process that outlives them calls this once they are gone (at open, or at a pass's end).
    pub fn recover(&self) -> Result<RecoveryReport> {
        let _lock = self.lock()?;
        let report = self.recover_locked();
        self.owner.sweep();
        Ok(report)
    }

    pub(super) fn recover_locked(&self) -> RecoveryReport {
        let mut report = RecoveryReport::default();
        // One liveness check (an open and a flock) per owner, not per slot or entry.
        let mut known: BTreeMap<u64, bool> = BTreeMap::new();
        let mut alive = |p: ProcessId| {
            *known
                .entry(p.start)
                .or_insert_with(|| self.owner.is_alive(p))
        };
        for entry in self.view.entries() {
            if entry.state.load(Acquire) == PREPARING && !alive(owner(entry)) {
                self.release(entry);
                report.downloads += 1;
            }
        }
        let entries = self.view.entries();
        for slot in self.view.pin_slots() {
            let pid = slot.pid.load(Acquire);
            if pid != 0
                && !alive(ProcessId {
                    pid,
                    start: slot.start.load(Relaxed),
                })
            {
                let count = slot.count.swap(0, Relaxed);
                if let Some(entry) = entries.get(slot.shard.load(Relaxed) as usize) {
                    entry
                        .pins
                        .fetch_sub(count.min(entry.pins.load(Relaxed)), Relaxed);
                }
                slot.pid.store(0, Release);
                report.pins += 1;
            }
        }
        report
    }
}
