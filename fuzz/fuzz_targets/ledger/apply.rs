//! One operation on a [`Set`], checked against the model when there is one.

use std::os::unix::fs::MetadataExt;

use streamx_core::cache::{snapshot, Decision, Ledger, RecoveryReport};

use crate::model::{Model, State};
use crate::ops::Op;
use crate::set::Set;

impl Set {
    fn make_file(&self, s: usize) {
        std::fs::write(&self.files[s], b"").unwrap();
    }

    fn assert_deleted(&self, victims: &[usize]) {
        for &v in victims {
            assert!(!self.files[v].exists(), "evicted shard {v} kept its file");
        }
    }

    pub fn apply(&mut self, op: &Op, model: Option<&mut Model>) {
        let n = self.files.len();
        match *op {
            Op::Pin { actor, shard } => {
                let pinned = self.actor(actor).pin(shard);
                let Some(m) = model else { return };
                if shard >= n {
                    assert!(pinned.is_err(), "pin out of range");
                } else {
                    assert!(pinned.unwrap(), "pin slots ran out");
                    m.pins[actor][shard] += 1;
                }
            }
            Op::Unpin { actor, shard } => {
                let unpinned = self.actor(actor).unpin(shard);
                let Some(m) = model else { return };
                let held = shard < n && m.pins[actor][shard] > 0;
                assert_eq!(unpinned.is_ok(), held, "unpin");
                if held {
                    m.pins[actor][shard] -= 1;
                }
            }
            Op::Begin {
                actor,
                shard,
                bytes,
                must_fit,
            } => self.begin(actor, shard, bytes, must_fit, model),
            Op::Finish {
                actor,
                shard,
                bytes,
            } => {
                let done = self.actor(actor).finish_download(shard, bytes);
                if done.is_ok() {
                    self.make_file(shard);
                }
                let Some(m) = model else { return };
                let mine = shard < n && m.state[shard] == State::Preparing(actor);
                let mine = mine && !m.overflows(shard, bytes);
                assert_eq!(done.is_ok(), mine, "finish_download({shard}, {bytes})");
                if mine {
                    m.set(shard, State::Local, bytes);
                }
            }
            Op::Abort { actor, shard } => {
                let done = self.actor(actor).abort_download(shard);
                let Some(m) = model else { return };
                let mine = shard < n && m.state[shard] == State::Preparing(actor);
                assert_eq!(done.is_ok(), mine, "abort_download");
                if mine {
                    m.set(shard, State::Remote, 0);
                }
            }
            Op::Sync {
                actor,
                shard,
                on_disk,
            } => self.sync(actor, shard, on_disk, model),
            Op::Evict { shard } => self.evict(shard, model),
            Op::EvictColdest => {
                let expect = model.as_ref().map(|m| m.coldest(self.actor(0)));
                let victim = self.actor(0).evict_coldest();
                if let Ok(Some(v)) = victim {
                    self.assert_deleted(&[v]);
                }
                let Some(m) = model else { return };
                let victim = victim.unwrap();
                assert_eq!(victim, expect.unwrap(), "evict_coldest");
                if let Some(v) = victim {
                    m.set(v, State::Remote, 0);
                }
            }
            Op::TrimToLimit => {
                let expect = model
                    .as_ref()
                    .map(|m| m.victims(self.actor(0), usize::MAX, 0).0);
                let trimmed = self.actor(1).trim_to_limit();
                if let Ok(victims) = &trimmed {
                    self.assert_deleted(victims);
                }
                let Some(m) = model else { return };
                let victims = trimmed.unwrap();
                assert_eq!(victims, expect.unwrap(), "trim_to_limit");
                for v in victims {
                    m.set(v, State::Remote, 0);
                }
            }
            Op::Touch { shard } => {
                let before = self.actor(0).last_access(shard);
                let touched = self.actor(1).touch(shard);
                if model.is_some() {
                    assert_eq!(touched.is_ok(), shard < n, "touch");
                    if let Ok(before) = before {
                        assert!(self.actor(0).last_access(shard).unwrap() >= before);
                    }
                }
            }
            Op::SetEvictable {
                start,
                end,
                evictable,
            } => {
                let set = self.actor(0).set_evictable(start..end, evictable);
                let Some(m) = model else { return };
                let valid = start <= end && end <= n;
                assert_eq!(set.is_ok(), valid, "set_evictable({start}..{end})");
                if valid {
                    m.evictable[start..end].fill(evictable);
                }
            }
            Op::Recover => {
                let report = self.actor(1).recover();
                if model.is_some() {
                    assert_eq!(
                        report.unwrap(),
                        RecoveryReport::default(),
                        "recover with every owner alive"
                    );
                }
            }
            Op::Crash { actor } => self.crash(actor, model),
            Op::Snapshot => {
                let snap = snapshot(&self.path);
                if let Some(m) = model {
                    m.check_snapshot(&snap.unwrap());
                }
            }
        }
    }

    fn begin(
        &mut self,
        actor: usize,
        shard: usize,
        bytes: u64,
        must_fit: bool,
        model: Option<&mut Model>,
    ) {
        let n = self.files.len();
        let ledger = self.actor(actor);
        let expect = model
            .as_ref()
            .filter(|_| shard < n)
            .map(|m| m.expect_begin(ledger, shard, bytes, must_fit));
        let decision = if must_fit {
            ledger.try_begin_download(shard, bytes)
        } else {
            ledger.begin_download(shard, bytes).map(Some)
        };
        if let Ok(Some(Decision::Download { evicted })) = &decision {
            self.assert_deleted(evicted);
        }
        let Some(m) = model else { return };
        if shard >= n {
            assert!(decision.is_err(), "begin_download out of range");
            return;
        }
        let Ok(expect) = expect.unwrap() else {
            assert!(
                decision.is_err(),
                "begin_download({shard}, {bytes}) wraps the byte count"
            );
            return;
        };
        let decision = decision.unwrap();
        assert_eq!(
            decision, expect,
            "begin_download({shard}, {bytes}, must_fit={must_fit})"
        );
        if let Some(Decision::Download { evicted }) = decision {
            for v in evicted {
                m.set(v, State::Remote, 0);
            }
            m.set(shard, State::Preparing(actor), bytes);
            if let (true, Some(limit)) = (must_fit, m.limit) {
                assert!(
                    m.usage() <= u128::from(limit),
                    "a download that must fit passed the limit"
                );
            }
        }
    }

    fn sync(
        &mut self,
        actor: usize,
        shard: usize,
        on_disk: Option<u64>,
        model: Option<&mut Model>,
    ) {
        let synced = self.actor(actor).sync(shard, on_disk);
        if matches!(synced, Ok(true)) && on_disk.is_some() {
            self.make_file(shard);
        }
        let Some(m) = model else { return };
        if shard >= self.files.len() {
            assert!(synced.is_err(), "sync out of range");
            return;
        }
        let preparing = matches!(m.state[shard], State::Preparing(_));
        if !preparing && on_disk.is_some_and(|b| m.overflows(shard, b)) {
            assert!(
                synced.is_err(),
                "sync({shard}, {on_disk:?}) wraps the byte count"
            );
            return;
        }
        assert_eq!(
            synced.unwrap(),
            !preparing,
            "sync leaves a live download alone"
        );
        if !preparing {
            match on_disk {
                Some(bytes) => m.set(shard, State::Local, bytes),
                None => m.set(shard, State::Remote, 0),
            }
        }
    }

    fn evict(&mut self, shard: usize, model: Option<&mut Model>) {
        let freed = self.actor(0).evict(shard);
        if let Ok(Some(_)) = freed {
            self.assert_deleted(&[shard]);
        }
        let Some(m) = model else { return };
        if shard >= self.files.len() || !m.evictable[shard] {
            assert!(
                freed.is_err(),
                "evict of an out-of-range or unevictable shard"
            );
            return;
        }
        let expect = (m.state[shard] == State::Local).then_some(m.bytes[shard]);
        assert_eq!(freed.unwrap(), expect, "evict({shard})");
        if expect.is_some() {
            m.set(shard, State::Remote, 0);
        }
    }

    fn crash(&mut self, actor: usize, model: Option<&mut Model>) {
        self.actors[actor] = None; // drops its owner lock: the process is dead
        let reopened = Ledger::open(&self.path, self.files.len(), self.limit)
            .and_then(|l| l.with_shard_files(self.shard_files()));
        match reopened {
            Ok(ledger) => self.actors[actor] = Some(ledger),
            Err(err) => {
                assert!(model.is_none(), "a valid ledger failed to reopen: {err}");
                return self.restore(self.limit);
            }
        }
        if std::fs::metadata(&self.path).unwrap().ino() != self.inode {
            assert!(model.is_none(), "a valid ledger was replaced on reopen");
            self.close();
            return self.open(self.limit).expect("a rebuilt ledger opens");
        }
        let Some(m) = model else { return };
        m.pins[actor].fill(0);
        for s in 0..m.n() {
            if m.state[s] == State::Preparing(actor) {
                m.set(s, State::Remote, 0);
            }
        }
    }
}
