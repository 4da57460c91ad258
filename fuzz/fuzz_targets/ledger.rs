//! The cache ledger file format, read only: arbitrary bytes as an existing ledger file,
//! opened and every shard's state read. Opening may fail; it must never crash.
#![no_main]

use libfuzzer_sys::fuzz_target;
use streamx_core::cache::Ledger;

fuzz_target!(|data: &[u8]| {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("ledger");
    std::fs::write(&path, data).unwrap();
    let Ok(ledger) = Ledger::open(&path, 4, Some(1 << 20)) else {
        return;
    };
    for shard in 0..ledger.num_shards() {
        let _ = ledger.state(shard);
        let _ = ledger.bytes(shard);
        let _ = ledger.pins(shard);
    }
    let _ = ledger.usage();
});
