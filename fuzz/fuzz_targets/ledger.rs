//! The cache ledger, structure-aware. Each input starts from a valid ledger file (made by
//! the ledger itself, kept open by two actors standing for two processes), writes hostile
//! values into its header, entries and pin slots (or cuts and grows the file, then opens it
//! anew), and drives pin, unpin, begin/finish/abort download, sync, evict, evict-coldest,
//! trim-to-limit, touch, set-evictable, recover, crash-and-reopen and snapshot on it.
//!
//! Errors are fine and panics are not. When nothing was corrupted, every call is also
//! checked against an in-memory model (`ledger/model.rs`): states, bytes, pins, usage, the
//! exact LRU victims, evicted files deleted and local ones kept.
//!
//! The files live on tmpfs (`/dev/shm` when there is one) and are reused from input to input:
//! only the bytes an input may have touched are written back.
#![no_main]

#[path = "ledger/apply.rs"]
mod apply;
#[path = "ledger/corrupt.rs"]
mod corrupt;
#[path = "ledger/model.rs"]
mod model;
#[path = "ledger/ops.rs"]
mod ops;
#[path = "ledger/set.rs"]
mod set;

use std::cell::RefCell;

use libfuzzer_sys::fuzz_target;

use model::Model;
use ops::{Bytes, Op};
use set::Sets;

thread_local! {
    static SETS: RefCell<Sets> = RefCell::new(Sets::new());
}

fuzz_target!(|data: &[u8]| {
    SETS.with(|sets| run(&mut sets.borrow_mut(), data));
});

fn run(sets: &mut Sets, data: &[u8]) {
    let mut b = Bytes(data);
    let config = b.u8();
    let n = 1 + usize::from(config & 3);
    let limit = match (config >> 2) & 3 {
        0 => None,
        1 => Some(u64::from(b.u8()) * 64),
        2 => Some(0),
        _ => Some(b.u64()),
    };
    // Opening anew costs two full opens (a map and a recovery scan each): one input in four.
    let reopen = config & 0x30 == 0x30;
    let set = sets.get(n);
    if reopen {
        set.close();
    }
    set.reset(limit);
    let corruptions = b.u8() % 9;
    for _ in 0..corruptions {
        corrupt::decode(&mut b, n, &set.dir).apply(&set.path, reopen);
    }
    if reopen && set.open(limit).is_err() {
        assert!(corruptions > 0, "a valid ledger failed to open");
        set.restore(limit);
        return;
    }
    // A limit of u64::MAX is the ledger's "no limit", and means the same.
    let model_limit = limit.filter(|&l| l != u64::MAX);
    let mut model = (corruptions == 0).then(|| Model::new(n, model_limit));
    while !b.is_empty() {
        let op = Op::decode(&mut b, n);
        set.apply(&op, model.as_mut());
        if let Some(model) = &model {
            model.check(set.actor(0), &set.files);
        }
    }
}
