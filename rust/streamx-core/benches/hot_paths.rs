//! Criterion tier of the core's hot paths: decoding MDS samples, the epoch shuffle, the
//! partition over nodes, ranks and workers, and the cache ledger's claims with eviction.
//!
//! `cargo bench -p streamx-core --bench hot_paths` runs it; CI only builds it (clippy's
//! `--all-targets`). Figures go into `benches/README.md` as ratios, never into tests.

use std::hint::black_box;

use criterion::{criterion_group, criterion_main, BatchSize, Criterion, Throughput};
use streamx_core::cache::{Decision, Ledger};
use streamx_core::mds::{ColumnLayout, Shard, ShardBuilder};
use streamx_core::partition::{get_partitions, PartitionAlgo, PartitionSpec};
use streamx_core::shuffle::{get_shuffle, ShuffleAlgo};

const SAMPLES: usize = 10_000;

/// A shard of `SAMPLES` samples: an 8-byte `int` column and a 64-byte `bytes` column.
fn shard_file(dir: &std::path::Path) -> (std::path::PathBuf, ColumnLayout) {
    let config = r#"{"column_encodings": ["int", "bytes"], "column_names": ["id", "blob"], "column_sizes": [8, null], "compression": null, "format": "mds", "hashes": [], "size_limit": null, "version": 2}"#;
    let layout = ColumnLayout::new(vec![Some(8), None]);
    let mut builder = ShardBuilder::new(config.as_bytes().to_vec(), None);
    let blob = [7u8; 64];
    let mut sample = Vec::new();
    for id in 0..SAMPLES as i64 {
        sample.clear();
        let id_bytes = id.to_le_bytes();
        layout.frame(&[&id_bytes, &blob], &mut sample).unwrap();
        builder.push(&sample);
    }
    let path = dir.join("shard.00000.mds");
    std::fs::write(&path, builder.take_shard_bytes().unwrap()).unwrap();
    (path, layout)
}

fn decode(c: &mut Criterion) {
    let dir = tempfile::tempdir().unwrap();
    let (path, layout) = shard_file(dir.path());
    let shard = Shard::open(&path).unwrap();
    let mut group = c.benchmark_group("decode");
    group.throughput(Throughput::Elements(SAMPLES as u64));
    group.bench_function("mds_sample_columns", |b| {
        let mut cols = Vec::new();
        b.iter(|| {
            for i in 0..shard.len() {
                shard.sample_columns(i, &layout, &mut cols).unwrap();
                black_box(&cols);
            }
        });
    });
    group.finish();
}

fn shuffle(c: &mut Criterion) {
    let sizes = vec![1_000i64; 1_000]; // a million samples in a thousand shards
    let mut group = c.benchmark_group("shuffle");
    group.throughput(Throughput::Elements(1_000_000));
    for algo in [ShuffleAlgo::Py1e, ShuffleAlgo::Py1s, ShuffleAlgo::Py1br] {
        group.bench_function(format!("{algo:?}"), |b| {
            b.iter(|| get_shuffle(algo, black_box(&sizes), 8, 9176, 1, 1 << 18).unwrap());
        });
    }
    group.finish();
}

fn partition(c: &mut Criterion) {
    let spec = PartitionSpec {
        num_samples: 1_000_000,
        num_canonical_nodes: 8,
        num_physical_nodes: 2,
        ranks_per_node: 8,
        workers_per_rank: 8,
        batch_size: 32,
        drop_first: 0,
        initial_physical_nodes: None,
    };
    let mut group = c.benchmark_group("partition");
    group.throughput(Throughput::Elements(spec.num_samples));
    for algo in [PartitionAlgo::Orig, PartitionAlgo::Relaxed] {
        group.bench_function(format!("{algo:?}"), |b| {
            b.iter(|| get_partitions(algo, black_box(&spec), &mut Vec::new()).unwrap());
        });
    }
    group.finish();
}

fn ledger(c: &mut Criterion) {
    const SHARDS: usize = 4_096;
    let mut group = c.benchmark_group("ledger");
    group.throughput(Throughput::Elements(SHARDS as u64));
    // Every shard claimed and finished once under a limit of half of them: each claim past
    // the first half evicts the least recently used shard.
    group.bench_function("claim_finish_evict", |b| {
        b.iter_batched(
            || {
                let dir = tempfile::tempdir().unwrap();
                let ledger = Ledger::open(dir.path().join("ledger"), SHARDS, Some(100 * 2_048));
                (dir, ledger.unwrap())
            },
            |(_dir, ledger)| {
                for shard in 0..SHARDS {
                    match ledger.begin_download_with(shard, 100, |_| Ok(())).unwrap() {
                        Decision::Download { .. } => ledger.finish_download(shard, 100).unwrap(),
                        other => panic!("shard {shard}: {other:?}"),
                    }
                }
            },
            BatchSize::PerIteration,
        );
    });
    group.finish();
}

criterion_group!(benches, decode, shuffle, partition, ledger);
criterion_main!(benches);
