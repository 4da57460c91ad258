//! The background shard writer: in-place framing, rollover, ordering and failures.

use streamx_core::mds::{Finisher, ShardBuilder};

fn sample(byte: u8, len: usize) -> Vec<u8> {
    vec![byte; len]
}

#[test]
fn commit_matches_push_and_rolls_over() {
    let mut pushed = ShardBuilder::new(b"{}".to_vec(), Some(64));
    let mut framed = ShardBuilder::new(b"{}".to_vec(), Some(64));
    let mut shards = (Vec::new(), Vec::new());
    for i in 0..20u8 {
        let s = sample(i, usize::from(i % 7) * 5);
        if pushed.needs_flush_before(s.len()) {
            shards.0.push(pushed.take_shard_bytes().unwrap());
        }
        pushed.push(&s);
        let start = framed.buffer().len();
        framed.buffer().extend_from_slice(&s);
        if let Some(parts) = framed.commit(start).unwrap() {
            shards.1.push(parts.to_vec());
        }
    }
    shards.0.push(pushed.take_shard_bytes().unwrap());
    shards.1.push(framed.take_parts().unwrap().to_vec());
    assert!(shards.0.len() > 3);
    assert_eq!(shards.0, shards.1);
}

#[test]
fn writes_in_order_and_reports_the_first_failure() {
    let dir = tempfile::tempdir().unwrap();
    let mut builder = ShardBuilder::new(b"{}".to_vec(), None);
    let mut finisher = Finisher::new(dir.path().to_owned(), None, Vec::new());
    let mut expected = Vec::new();
    for i in 0..4u8 {
        builder.push(&sample(i, 1000));
        let parts = builder.take_parts().unwrap();
        expected.push(parts.to_vec());
        finisher.submit(format!("shard.{i:05}.mds"), parts).unwrap();
    }
    let done = finisher.finish().unwrap();
    assert_eq!(done.len(), 4);
    for (i, bytes) in expected.iter().enumerate() {
        let path = dir.path().join(format!("shard.{i:05}.mds"));
        assert_eq!(&std::fs::read(path).unwrap(), bytes);
        assert_eq!(done[i].raw.bytes, bytes.len() as u64);
    }
    // A directory in the way of shard 5: that shard fails, and the error comes back.
    std::fs::create_dir_all(dir.path().join("shard.00005.mds/x")).unwrap();
    builder.push(b"abc");
    finisher
        .submit("shard.00005.mds".into(), builder.take_parts().unwrap())
        .unwrap();
    let err = finisher.finish().unwrap_err().to_string();
    assert!(err.contains("shard.00005.mds"), "{err}");
}
