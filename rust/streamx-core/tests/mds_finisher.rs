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

#[test]
fn shared_values_frame_like_copied_ones() {
    use streamx_core::mds::SharedBytes;
    let mut copied = ShardBuilder::new(b"{}".to_vec(), Some(300));
    let mut held = ShardBuilder::new(b"{}".to_vec(), Some(300));
    let mut shards = (Vec::new(), Vec::new());
    for i in 0..30u8 {
        let (head, big, tail) = (
            sample(i, usize::from(i % 3)),
            sample(!i, 40 + usize::from(i)),
            [i],
        );
        let mark = copied.mark();
        copied.buffer().extend_from_slice(&head);
        copied.buffer().extend_from_slice(&big);
        copied.buffer().extend_from_slice(&tail);
        if let Some(parts) = copied.commit_at(mark).unwrap() {
            shards.0.push(parts.to_vec());
        }
        let mark = held.mark();
        held.buffer().extend_from_slice(&head);
        held.push_shared(SharedBytes::new(big.clone()));
        if i % 5 == 0 {
            // A value framed and then dropped leaves nothing behind.
            held.push_shared(SharedBytes::new(vec![0xEE; 9]));
            held.rollback(mark);
            held.buffer().extend_from_slice(&head);
            held.push_shared(SharedBytes::new(big));
        }
        held.buffer().extend_from_slice(&tail);
        if let Some(parts) = held.commit_at(mark).unwrap() {
            assert_eq!(parts.len(), parts.to_vec().len());
            shards.1.push(parts.to_vec());
        }
    }
    assert_eq!(held.shard_bytes().unwrap(), copied.shard_bytes().unwrap());
    shards.0.push(copied.take_parts().unwrap().to_vec());
    shards.1.push(held.take_parts().unwrap().to_vec());
    assert!(shards.0.len() > 5);
    assert_eq!(shards.0, shards.1);
}

#[test]
fn written_buffers_are_reused() {
    use streamx_core::mds::BufferPool;
    let dir = tempfile::tempdir().unwrap();
    let pool = BufferPool::new();
    let mut builder = ShardBuilder::new(b"{}".to_vec(), Some(10_000)).with_pool(pool.clone());
    let mut finisher =
        Finisher::new(dir.path().to_owned(), None, Vec::new()).with_pool(pool.clone());
    for i in 0..40u8 {
        let start = builder.buffer().len();
        builder.buffer().extend_from_slice(&sample(i, 3000));
        if let Some(parts) = builder.commit(start).unwrap() {
            finisher.submit(format!("shard.{i:05}.mds"), parts).unwrap();
        }
    }
    let mut done = 0;
    while done < 13 {
        done += finisher.drain().unwrap().len();
        std::thread::yield_now();
    }
    // Every written shard's buffer went back; the pool keeps a bounded number of them.
    assert!((1..=2).contains(&pool.len()), "{}", pool.len());
    assert!(pool.take().capacity() >= 9_000);
    assert!(finisher.finish().unwrap().is_empty());
    assert!(pool.is_empty(), "finish frees the spare buffers");
}
