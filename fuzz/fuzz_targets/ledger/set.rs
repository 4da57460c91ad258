//! A ledger file for one shard count, its pristine image, and two actors holding it open;
//! plus the execution of one operation, checked against the model when there is one.

use std::fs::OpenOptions;
use std::os::unix::fs::{FileExt, MetadataExt};
use std::path::{Path, PathBuf};
use std::sync::OnceLock;

use streamx_core::cache::{snapshot, Decision, Ledger, RecoveryReport};
use streamx_core::Result;

use crate::corrupt::{slot_count, slot_offset, LIMIT};
use crate::model::{Model, State};
use crate::ops::Op;

/// The fixtures of this process, by shard count, under a private tmpfs directory.
pub struct Sets {
    base: PathBuf,
    sets: Vec<Option<Set>>,
}

impl Sets {
    pub fn new() -> Self {
        let root = Path::new("/dev/shm");
        let root = if root.is_dir() {
            root.to_path_buf()
        } else {
            std::env::temp_dir()
        };
        remove_stale(&root);
        let base = root.join(format!("streamx-fuzz-ledger-{}", std::process::id()));
        std::fs::create_dir_all(&base).unwrap();
        let base = std::fs::canonicalize(base).unwrap();
        if BASE.set(base.clone()).is_ok() {
            // SAFETY: registers a plain function; libFuzzer ends the process with `exit`.
            unsafe { atexit(remove_base) };
        }
        Self {
            base,
            sets: Vec::new(),
        }
    }

    pub fn get(&mut self, n: usize) -> &mut Set {
        if self.sets.len() < n {
            self.sets.resize_with(n, || None);
        }
        self.sets[n - 1].get_or_insert_with(|| Set::new(&self.base, n))
    }
}

static BASE: OnceLock<PathBuf> = OnceLock::new();

extern "C" {
    fn atexit(f: extern "C" fn()) -> i32;
}

/// Removes this process's directory when it exits (thread-locals are not dropped then).
extern "C" fn remove_base() {
    if let Some(base) = BASE.get() {
        let _ = std::fs::remove_dir_all(base);
    }
}

/// Directories left by fuzzing processes that are gone (killed, or crashed).
fn remove_stale(root: &Path) {
    let Ok(names) = std::fs::read_dir(root) else {
        return;
    };
    for entry in names.flatten() {
        let name = entry.file_name();
        let Some(pid) = name
            .to_str()
            .and_then(|n| n.strip_prefix("streamx-fuzz-ledger-"))
        else {
            continue;
        };
        if !Path::new("/proc").join(pid).exists() {
            let _ = std::fs::remove_dir_all(entry.path());
        }
    }
}

pub struct Set {
    pub dir: PathBuf,
    pub path: PathBuf,
    pub files: Vec<PathBuf>,
    pristine: Vec<u8>,
    actors: [Option<Ledger>; 2],
    inode: u64,
    limit: Option<u64>,
}

impl Set {
    fn new(base: &Path, n: usize) -> Self {
        let dir = base.join(format!("n{n}"));
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join("ledger");
        let files = (0..n).map(|s| dir.join(format!("shard.{s}"))).collect();
        let mut set = Set {
            dir,
            path,
            files,
            pristine: Vec::new(),
            actors: [None, None],
            inode: 0,
            limit: None,
        };
        set.open(None).unwrap();
        set.pristine = std::fs::read(&set.path).unwrap();
        crate::corrupt::check_layout(set.actor(0), &set.path, n);
        set
    }

    pub fn actor(&self, a: usize) -> &Ledger {
        self.actors[a]
            .as_ref()
            .expect("both actors are open between calls")
    }

    pub fn close(&mut self) {
        self.actors = [None, None];
    }

    pub fn open(&mut self, limit: Option<u64>) -> Result<()> {
        self.limit = limit;
        for a in 0..2 {
            self.actors[a] = None;
            let ledger = Ledger::open(&self.path, self.files.len(), limit)?;
            self.actors[a] = Some(ledger.with_shard_files(self.shard_files())?);
        }
        self.inode = std::fs::metadata(&self.path).unwrap().ino();
        Ok(())
    }

    /// Brings the file back to the pristine image with `limit`. With the actors open, only
    /// what an input may have touched is written: the header, the entries, the first pin
    /// slots (claimed first-free) and the last two (which corruptions may pick).
    pub fn reset(&mut self, limit: Option<u64>) {
        self.limit = limit;
        let file = OpenOptions::new()
            .write(true)
            .create(true)
            .truncate(false)
            .open(&self.path)
            .unwrap();
        let meta = file.metadata().unwrap();
        let stale = self.actors[0].is_some() && meta.ino() != self.inode;
        if stale {
            self.close(); // an actor's reopen replaced the file: everyone maps the new one
        }
        let n = self.files.len();
        if self.actors[0].is_none() || meta.len() != self.pristine.len() as u64 {
            file.set_len(self.pristine.len() as u64).unwrap();
            file.write_all_at(&self.pristine, 0).unwrap();
        } else {
            let head = slot_offset(n, 64) as usize;
            let tail = slot_offset(n, slot_count(n) - 2) as usize;
            file.write_all_at(&self.pristine[..head], 0).unwrap();
            file.write_all_at(&self.pristine[tail..], tail as u64)
                .unwrap();
        }
        file.write_all_at(&limit.unwrap_or(u64::MAX).to_le_bytes(), LIMIT)
            .unwrap();
        if stale {
            self.open(limit).expect("a pristine ledger opens");
        }
    }

    /// After a corrupted file failed to open: the pristine file, opened by both actors.
    pub fn restore(&mut self, limit: Option<u64>) {
        self.close();
        self.reset(limit);
        self.open(limit).expect("a pristine ledger opens");
    }

    fn shard_files(&self) -> Vec<Vec<PathBuf>> {
        self.files.iter().map(|f| vec![f.clone()]).collect()
    }

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
        if shard >= n_of(&self.files) {
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
        if shard >= n_of(&self.files) || !m.evictable[shard] {
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

fn n_of(files: &[PathBuf]) -> usize {
    files.len()
}
