//! A ledger file for one shard count, its pristine image, and two actors holding it open.

use std::fs::OpenOptions;
use std::os::unix::fs::{FileExt, MetadataExt};
use std::path::{Path, PathBuf};
use std::sync::OnceLock;

use streamx_core::cache::Ledger;
use streamx_core::Result;

use crate::corrupt::{slot_count, slot_offset, LIMIT};

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
    pub(crate) actors: [Option<Ledger>; 2],
    pub(crate) inode: u64,
    pub(crate) limit: Option<u64>,
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

    pub(crate) fn shard_files(&self) -> Vec<Vec<PathBuf>> {
        self.files.iter().map(|f| vec![f.clone()]).collect()
    }
}
