//! A worker's pieces read with py1e's counted draws from a file equal those counted, and the
//! whole `plan_worker`, over many configurations: worlds, canonical nodes, block sizes,
//! resampled streams, resumes and epochs.

use std::os::unix::fs::PermissionsExt;

use streamx_core::plan::{
    plan_worker, plan_worker_pieces_cached, EpochConfig, StreamSpec, WorkerCursor, World,
};
use streamx_core::shuffle::{CountCache, ShuffleAlgo};

fn config(streams: &[(&[i64], i64)], ncn: usize, block: usize, world: [usize; 3]) -> EpochConfig {
    EpochConfig {
        streams: streams
            .iter()
            .map(|&(sizes, choose)| StreamSpec {
                samples_per_shard: sizes.to_vec(),
                choose,
                proportion: 1.0,
            })
            .collect(),
        seed: 1234,
        epoch: 0,
        shuffle: true,
        shuffle_algo: ShuffleAlgo::Py1e,
        shuffle_block_size: block,
        num_canonical_nodes: ncn,
        partition_algo: "relaxed".parse().unwrap(),
        batching_method: "random".parse().unwrap(),
        batch_size: 4,
        world: World {
            num_nodes: world[0],
            ranks_per_node: world[1],
            workers_per_rank: world[2],
        },
        sample_in_epoch: 0,
        initial_physical_nodes: None,
        sampling_method: "balanced".parse().unwrap(),
        sampling_granularity: 1,
    }
}

fn drain(mut cursor: WorkerCursor, piece: usize) -> Vec<i64> {
    let mut got = Vec::new();
    loop {
        let ids = cursor.next_piece(piece).unwrap();
        if ids.is_empty() {
            return got;
        }
        got.extend(ids);
    }
}

/// `(loaded, saved)` canonical nodes of a plan of `cfg`'s worker over `cache`, whose pieces
/// must equal `want`.
fn pieces(
    cfg: &EpochConfig,
    index: [usize; 3],
    cache: &CountCache,
    want: &[i64],
) -> (usize, usize) {
    let cursor = plan_worker_pieces_cached(cfg, index, Some(cache)).unwrap();
    let stats = cursor.count_cache_stats().unwrap().clone();
    let got = drain(cursor, 13);
    assert_eq!(got, want, "{index:?} {cfg:?}");
    assert_eq!(stats.problem, None);
    // Saving happens as pieces count: read the stats again at the end.
    let cursor = plan_worker_pieces_cached(cfg, index, Some(cache)).unwrap();
    let loaded_after = cursor.count_cache_stats().unwrap().loaded_nodes;
    assert_eq!(drain(cursor, 1000), want);
    (stats.loaded_nodes, loaded_after)
}

#[test]
fn pieces_with_counted_draws_from_a_file_equal_the_whole_plan() {
    let small: &[i64] = &[30, 70, 55, 12, 90, 41, 66, 8, 100, 37];
    let big: &[i64] = &[400, 250, 900, 120, 333];
    let streams: [&[(&[i64], i64)]; 3] = [
        &[(small, 509)],
        &[(big, 2003)],
        &[(small, 300), (big, 2500)], // one stream down-, one upsampled
    ];
    let mut checked = 0;
    for (s, streams) in streams.iter().enumerate() {
        for (ncn, world) in [
            (1, [1, 2, 2]),
            (2, [2, 1, 2]),
            (4, [2, 2, 1]),
            (8, [4, 1, 1]),
        ] {
            for block in [16, 200, 1 << 18] {
                for (epoch, resume) in [(0, 0), (1, 0), (2, 37)] {
                    let mut cfg = config(streams, ncn, block, world);
                    cfg.epoch = epoch;
                    cfg.sample_in_epoch = resume;
                    let dir = tempfile::tempdir().unwrap();
                    std::fs::set_permissions(dir.path(), PermissionsExt::from_mode(0o700)).unwrap();
                    let cache = CountCache::new(dir.path().to_path_buf(), 0);
                    let [p, r, w] = world;
                    // The last worker first: it counts every node before its own.
                    for index in [[p - 1, r - 1, w - 1], [0, 0, 0]] {
                        let want = plan_worker(&cfg, index[0], index[1], index[2]).unwrap().ids;
                        let (loaded, loaded_after) = pieces(&cfg, index, &cache, &want);
                        assert!(loaded_after > 0, "stream set {s} {index:?}");
                        if index == [0, 0, 0] {
                            assert_eq!(loaded, ncn, "a later worker reads every node counted");
                        }
                        checked += 1;
                    }
                }
            }
        }
    }
    assert_eq!(checked, 3 * 4 * 3 * 3 * 2);
}
