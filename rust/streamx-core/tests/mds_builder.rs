//! Writer side: the shard-splitting rule and the files written per shard reproduce
//! mosaicml-streaming's datasets exactly (`fixtures/mds/ds_*`).

mod mds_common;

use std::path::Path;

use mds_common::{example_sample, fixture};
use streamx_core::compression::Compression;
use streamx_core::hashing::HashAlgo;
use streamx_core::mds::{write_shard_files, FileInfo, Shard, ShardBuilder};

fn index(dir: &Path) -> Vec<serde_json::Value> {
    let json: serde_json::Value =
        serde_json::from_slice(&std::fs::read(dir.join("index.json")).unwrap()).unwrap();
    json["shards"].as_array().unwrap().clone()
}

fn assert_info(info: &FileInfo, expected: &serde_json::Value) {
    assert_eq!(info.basename, expected["basename"].as_str().unwrap());
    assert_eq!(info.bytes, expected["bytes"].as_u64().unwrap());
    let hashes = expected["hashes"].as_object().unwrap();
    assert_eq!(info.hashes.len(), hashes.len());
    for (algo, digest) in &info.hashes {
        assert_eq!(
            hashes[algo].as_str().unwrap(),
            digest,
            "{algo} of {}",
            info.basename
        );
    }
}

/// Replays the fixture's writes (10 samples) through the builder, writing each flushed shard,
/// and checks shard count, sample counts, bytes and hashes against the Python output.
fn replay(name: &str, size_limit: u64, hashes: &[HashAlgo]) {
    let src = fixture(name);
    let config = Shard::open(&src.join("shard.00000.mds"))
        .unwrap()
        .config_json()
        .to_vec();
    let out = tempfile::tempdir().unwrap();
    let mut builder = ShardBuilder::new(config, Some(size_limit));
    let mut written = Vec::new();
    let mut flush = |builder: &mut ShardBuilder| {
        let samples = builder.num_samples();
        let bytes = builder.take_shard_bytes().unwrap();
        let basename = format!("shard.{:05}.mds", written.len());
        let (raw, zip) = write_shard_files(out.path(), &basename, &bytes, None, hashes).unwrap();
        assert!(zip.is_none());
        assert_eq!(std::fs::read(out.path().join(&basename)).unwrap(), bytes);
        written.push((samples, raw));
    };
    for i in 0..5 {
        for second in [false, true] {
            let sample = example_sample(i, second);
            if builder.needs_flush_before(sample.len()) {
                flush(&mut builder);
            }
            builder.push(&sample);
        }
    }
    if !builder.is_empty() {
        flush(&mut builder);
    }
    let expected = index(&src);
    assert_eq!(written.len(), expected.len());
    for ((samples, raw), entry) in written.iter().zip(&expected) {
        assert_eq!(*samples as u64, entry["samples"].as_u64().unwrap());
        assert_info(raw, &entry["raw_data"]);
        let python = std::fs::read(src.join(&raw.basename)).unwrap();
        assert_eq!(
            std::fs::read(out.path().join(&raw.basename)).unwrap(),
            python
        );
    }
}

#[test]
fn tiny_size_limit_gives_empty_shard_zero() {
    replay("ds_split", 100, &[]);
    assert_eq!(index(&fixture("ds_split"))[0]["samples"], 0);
}

#[test]
fn size_limit_splits_like_python() {
    replay("ds_split400", 400, &[HashAlgo::Md5]);
}

#[test]
fn compressed_files_match_python() {
    let src = fixture("ds_zstd");
    let entry = &index(&src)[0];
    let raw_bytes = {
        let c = Compression::parse("zstd:7").unwrap();
        let zip = std::fs::read(src.join("shard.00000.mds.zstd")).unwrap();
        c.decompress(&zip, &src).unwrap()
    };
    let out = tempfile::tempdir().unwrap();
    let hashes = [HashAlgo::Sha1, HashAlgo::Xxh3_64];
    let c = Compression::parse("zstd:7").unwrap();
    let (raw, zip) =
        write_shard_files(out.path(), "shard.00000.mds", &raw_bytes, Some(&c), &hashes).unwrap();
    assert_info(&raw, &entry["raw_data"]);
    assert_info(&zip.unwrap(), &entry["zip_data"]);
    let names: Vec<_> = std::fs::read_dir(out.path())
        .unwrap()
        .map(|e| e.unwrap().file_name())
        .collect();
    assert_eq!(
        names,
        ["shard.00000.mds.zstd"],
        "only the compressed file, no temp files"
    );
}

#[test]
fn big_shards_hash_in_parallel_consistently() {
    let data: Vec<u8> = (0..3_000_000u32).map(|i| (i % 253) as u8).collect();
    let out = tempfile::tempdir().unwrap();
    let hashes = [HashAlgo::Sha256, HashAlgo::Xxh64, HashAlgo::Blake2b];
    let c = Compression::parse("snappy").unwrap();
    let (raw, zip) =
        write_shard_files(out.path(), "sub/shard.00007.mds", &data, Some(&c), &hashes).unwrap();
    let zip = zip.unwrap();
    let stored = std::fs::read(out.path().join("sub/shard.00007.mds.snappy")).unwrap();
    assert_eq!(zip.bytes, stored.len() as u64);
    for (i, algo) in hashes.iter().enumerate() {
        assert_eq!(
            raw.hashes[i],
            (algo.name().to_owned(), algo.hexdigest(&data))
        );
        assert_eq!(
            zip.hashes[i],
            (algo.name().to_owned(), algo.hexdigest(&stored))
        );
    }
    assert_eq!(c.decompress(&stored, Path::new("x")).unwrap(), data);
}

#[test]
fn splitting_arithmetic() {
    // Header charge: 4 + 4 + len(config) = 10; each sample costs len + 4.
    let mut b = ShardBuilder::new(b"{}".to_vec(), Some(30));
    assert_eq!(b.current_size(), 10);
    assert!(!b.needs_flush_before(16)); // 10 + 20 == 30: fits exactly
    b.push(&[0; 16]);
    assert!(b.needs_flush_before(0)); // 30 + 4 > 30
    let bytes = b.take_shard_bytes().unwrap();
    assert_eq!(bytes.len(), 30);
    assert_eq!(b.current_size(), 10);
    assert_eq!(b.num_samples(), 0);
    // A header bigger than the limit: flush is requested even for an empty shard.
    let b = ShardBuilder::new(vec![b' '; 50], Some(40));
    assert!(b.is_empty() && b.needs_flush_before(0));
    // No limit (None or 0): never flush.
    for limit in [None, Some(0)] {
        assert!(!ShardBuilder::new(Vec::new(), limit).needs_flush_before(usize::MAX));
    }
}

#[test]
fn shard_offsets_are_absolute() {
    let mut b = ShardBuilder::new(b"cfg".to_vec(), None);
    b.push(b"aa");
    b.push(b"");
    b.push(b"bbb");
    let bytes = b.take_shard_bytes().unwrap();
    let words: Vec<u32> = bytes[..20]
        .chunks(4)
        .map(|c| u32::from_le_bytes(c.try_into().unwrap()))
        .collect();
    assert_eq!(words, [3, 23, 25, 25, 28]);
    assert_eq!(&bytes[20..], b"cfgaabbb");
}
