//! Regressions found by the structure-aware `ledger` fuzz target (`fuzz/fuzz_targets/ledger.rs`).

use streamx_core::cache::{Decision, Ledger, ShardState};
use streamx_core::Error;

#[test]
fn a_reversed_evictable_range_is_an_error_not_a_panic() {
    let dir = tempfile::tempdir().unwrap();
    let ledger = Ledger::open(dir.path().join("ledger"), 3, None).unwrap();
    let reversed = std::ops::Range { start: 2, end: 0 };
    assert!(matches!(
        ledger.set_evictable(reversed, false),
        Err(Error::InvalidArgument(_))
    ));
    assert!(ledger.is_evictable(0).unwrap() && ledger.is_evictable(1).unwrap());
    ledger.set_evictable(1..1, false).unwrap();
    assert!(ledger.is_evictable(1).unwrap());
}

#[test]
fn a_size_that_would_wrap_the_byte_count_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    let ledger = Ledger::open(dir.path().join("ledger"), 3, None).unwrap();
    ledger.sync(0, Some(10)).unwrap();
    assert!(matches!(
        ledger.begin_download(1, u64::MAX),
        Err(Error::InvalidArgument(_))
    ));
    assert_eq!(ledger.state(1).unwrap(), ShardState::Remote);
    assert!(ledger.sync(2, Some(u64::MAX - 9)).is_err());
    assert_eq!(ledger.state(2).unwrap(), ShardState::Remote);
    let decision = ledger.begin_download(1, u64::MAX - 10).unwrap();
    assert!(matches!(decision, Decision::Download { .. }));
    assert_eq!(ledger.usage(), u64::MAX);
    assert!(ledger.finish_download(1, u64::MAX - 9).is_err());
    ledger.finish_download(1, 5).unwrap();
    assert_eq!(ledger.usage(), 15);
}
