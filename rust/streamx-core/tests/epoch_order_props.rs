//! Property tests of the epoch order: shuffles are permutations, partitions cover every sample,
//! global batches do not depend on how the world is split, and one worker's slice is the
//! corresponding block of the whole partition.

use proptest::prelude::*;
use streamx_core::partition::{get_partitions, worker_slice, PartitionAlgo, PartitionSpec};
use streamx_core::plan::{plan_epoch, plan_worker, EpochConfig, StreamSpec, World};
use streamx_core::shuffle::{get_shuffle, get_shuffle_parts, ShuffleAlgo, ShuffleArgs};

const ALGOS: [ShuffleAlgo; 5] = [
    ShuffleAlgo::Naive,
    ShuffleAlgo::Py1s,
    ShuffleAlgo::Py2s,
    ShuffleAlgo::Py1br,
    ShuffleAlgo::Py1e,
];

fn spec(n: u64, ncn: usize, world: [usize; 3], bs: usize, drop: u64) -> PartitionSpec {
    PartitionSpec {
        num_samples: n,
        num_canonical_nodes: ncn,
        num_physical_nodes: world[0],
        ranks_per_node: world[1],
        workers_per_rank: world[2],
        batch_size: bs,
        drop_first: drop,
        initial_physical_nodes: None,
    }
}

/// Global batches in traversal order, each sorted (order within a step is not promised) and
/// without padding; trailing all-padding steps depend on the worker count and are dropped.
fn global_batches(ids: &[i64], global: usize) -> Vec<Vec<i64>> {
    ids.chunks(global)
        .map(|c| {
            let mut c: Vec<i64> = c.iter().copied().filter(|&i| i >= 0).collect();
            c.sort_unstable();
            c
        })
        .filter(|c| !c.is_empty())
        .collect()
}

proptest! {
    #![proptest_config(ProptestConfig {
        cases: 64,
        failure_persistence: None,
        ..ProptestConfig::default()
    })]

    #[test]
    fn every_shuffle_is_a_permutation(
        sizes in prop::collection::vec(0_i64..200, 1..20),
        ncn in 1_usize..9,
        seed in any::<u64>(),
        epoch in 0_u64..4,
        block in 2_usize..600,
    ) {
        let total: i64 = sizes.iter().sum();
        for algo in ALGOS {
            // py1e rejects canonical nodes without samples; that is its documented error.
            let Ok(mut perm) = get_shuffle(algo, &sizes, ncn, seed, epoch, block) else {
                prop_assert!(algo == ShuffleAlgo::Py1e);
                continue;
            };
            perm.sort_unstable();
            prop_assert_eq!(perm, (0..total).collect::<Vec<_>>(), "{}", algo);
        }
    }

    #[test]
    fn partial_shuffles_match_the_whole_at_position_runs(
        sizes in prop::collection::vec(0_i64..300, 1..8), ncn in 1_usize..4, seed in any::<u64>(),
        block in 2_usize..1200, run in (0.0_f64..1.0, 0_usize..400), stride in 1_usize..4,
    ) {
        // Runs anywhere in the epoch, including its two ends, against blocks smaller than,
        // around and larger than the spans (no shift, clamped shifts, wide windows).
        let total: i64 = sizes.iter().sum();
        prop_assume!(total > 0);
        let from = ((total as f64 * run.0) as i64).min(total - 1);
        let to = (from + run.1 as i64 + 1).min(total);
        for (from, to) in [(from, to), (0, to - from), (total - (to - from), total)] {
            let positions: Vec<i64> = (from..to).step_by(stride).collect();
            for algo in ALGOS {
                let args = ShuffleArgs {
                    algo, shard_sizes: &sizes, num_canonical_nodes: ncn, seed, epoch: 1,
                    block_size: block,
                };
                let Ok(whole) = get_shuffle(algo, &sizes, ncn, seed, 1, block) else { continue };
                let part = get_shuffle_parts(&args, Some(&positions), &mut Vec::new()).unwrap();
                for &p in &positions {
                    prop_assert_eq!(part.get(p), Some(whole[p as usize]), "{} {}..{}", algo, from, to);
                }
            }
        }
    }

    #[test]
    fn partition_covers_every_sample_once_when_divisible(
        per in 1_u64..20, ncn_pow in 0_u32..4, pn_pow in 0_u32..4, rpn in 1_usize..4,
        wpr in 1_usize..4, bs in 1_usize..5,
    ) {
        let (ncn, pn) = (1_usize << ncn_pow, 1_usize << pn_pow);
        let n = per * (ncn * pn * rpn) as u64;
        let part = get_partitions(
            PartitionAlgo::Orig, &spec(n, ncn, [pn, rpn, wpr], bs, 0), &mut Vec::new(),
        ).unwrap();
        let mut seen: Vec<i64> = part.ids.into_iter().filter(|&i| i >= 0).collect();
        seen.sort_unstable();
        prop_assert_eq!(seen, (0..n as i64).collect::<Vec<_>>());
    }

    #[test]
    fn partition_covers_every_sample_at_least_once(
        n in 1_u64..500, ncn_pow in 0_u32..4, pn_pow in 0_u32..4, rpn in 1_usize..4,
        wpr in 1_usize..4, bs in 1_usize..5,
    ) {
        let (ncn, pn) = (1_usize << ncn_pow, 1_usize << pn_pow);
        let world = [pn, rpn, wpr];
        // Tiny epochs can hit streaming's own broadcast failure; that is not what is tested here.
        if let Ok(part) = get_partitions(PartitionAlgo::Orig, &spec(n, ncn, world, bs, 0), &mut Vec::new()) {
            let mut counts = vec![0_u32; n as usize];
            for id in part.ids.into_iter().filter(|&i| i >= 0) {
                counts[id as usize] += 1;
            }
            prop_assert!(counts.iter().all(|&c| c >= 1));
        }
    }

    #[test]
    fn global_batches_do_not_depend_on_world_split(
        m in 1_u64..6, ncn_pow in 2_u32..4, split in 0_usize..4, wpr_a in 1_usize..4,
        wpr_b in 1_usize..4, drop_steps in 0_u64..3,
    ) {
        // Global batch 8 split as (nodes, ranks, batch) four ways; every node count divides ncn.
        let splits = [[1, 1, 8], [2, 2, 2], [4, 1, 2], [1, 4, 2]];
        let ncn = 1_usize << ncn_pow;
        let n = m * (ncn * 8 * 12) as u64;
        let drop = drop_steps * 8;
        let reference = {
            let [p, r, b] = splits[0];
            let part = get_partitions(PartitionAlgo::Orig, &spec(n, ncn, [p, r, wpr_a], b, drop), &mut Vec::new()).unwrap();
            global_batches(&part.traversal(), 8)
        };
        let [p, r, b] = splits[split];
        let part = get_partitions(PartitionAlgo::Orig, &spec(n, ncn, [p, r, wpr_b], b, drop), &mut Vec::new()).unwrap();
        prop_assert_eq!(global_batches(&part.traversal(), 8), reference);
    }

    #[test]
    fn worker_slice_is_the_full_partitions_block(
        n in 0_u64..300, ncn in 1_usize..9, pn in 1_usize..9, rpn in 1_usize..4,
        wpr in 1_usize..4, bs in 1_usize..5, drop in 0_u64..64, ipn in prop::option::of(1_usize..5),
        relaxed in any::<bool>(),
    ) {
        let algo = if relaxed { PartitionAlgo::Relaxed } else { PartitionAlgo::Orig };
        let s = PartitionSpec { initial_physical_nodes: ipn, ..spec(n, ncn, [pn, rpn, wpr], bs, drop) };
        if let Ok(part) = get_partitions(algo, &s, &mut Vec::new()) {
            for node in 0..pn {
                for rank in 0..rpn {
                    for worker in 0..wpr {
                        let one = worker_slice(algo, &s, node, rank, worker, &mut Vec::new()).unwrap();
                        prop_assert_eq!(one.as_slice(), part.worker(node, rank, worker).unwrap());
                    }
                }
            }
        }
    }

    #[test]
    fn plan_worker_matches_plan_epoch(
        sizes in prop::collection::vec(1_i64..60, 1..6), ratio in 1_i64..30, seed in 0_u64..1000,
        epoch in 0_u64..3, nodes in 1_usize..3, wpr in 1_usize..3, bs in 1_usize..4,
    ) {
        let total: i64 = sizes.iter().sum();
        let cfg = EpochConfig {
            streams: vec![StreamSpec { samples_per_shard: sizes, choose: total * ratio / 10 + 1, proportion: 1.0 }],
            seed,
            epoch,
            shuffle: true,
            shuffle_algo: ShuffleAlgo::Py1e,
            shuffle_block_size: 64,
            num_canonical_nodes: 2,
            partition_algo: PartitionAlgo::Orig,
            batching_method: "random".parse().unwrap(),
            batch_size: bs,
            world: World { num_nodes: nodes, ranks_per_node: 2, workers_per_rank: wpr },
            sample_in_epoch: 0,
            initial_physical_nodes: None,
            sampling_method: "balanced".parse().unwrap(),
            sampling_granularity: 1,
        };
        if let Ok(plan) = plan_epoch(&cfg) {
            for node in 0..nodes {
                for rank in 0..2 {
                    for worker in 0..wpr {
                        let one = plan_worker(&cfg, node, rank, worker).unwrap();
                        prop_assert_eq!(one.ids.as_slice(), plan.partition.worker(node, rank, worker).unwrap());
                    }
                }
            }
        }
    }
}

/// Large enough for the parallel fill and id mapping; checked against the serial worker path.
#[test]
fn parallel_paths_agree_with_worker_slices() {
    let spec = spec(300_001, 4, [2, 2, 3], 7, 70);
    let part = get_partitions(PartitionAlgo::Orig, &spec, &mut Vec::new()).unwrap();
    for (node, rank, worker) in [(0, 0, 0), (1, 1, 2), (0, 1, 1)] {
        let one = worker_slice(
            PartitionAlgo::Orig,
            &spec,
            node,
            rank,
            worker,
            &mut Vec::new(),
        );
        assert_eq!(
            one.unwrap().as_slice(),
            part.worker(node, rank, worker).unwrap()
        );
    }
    let cfg = EpochConfig {
        streams: vec![StreamSpec {
            samples_per_shard: vec![40_000; 6],
            choose: 170_000,
            proportion: 1.0,
        }],
        seed: 17,
        epoch: 2,
        shuffle: true,
        shuffle_algo: ShuffleAlgo::Py1e,
        shuffle_block_size: 50_000,
        num_canonical_nodes: 4,
        partition_algo: PartitionAlgo::Orig,
        batching_method: "random".parse().unwrap(),
        batch_size: 8,
        world: World {
            num_nodes: 2,
            ranks_per_node: 1,
            workers_per_rank: 2,
        },
        sample_in_epoch: 0,
        initial_physical_nodes: None,
        sampling_method: "balanced".parse().unwrap(),
        sampling_granularity: 1,
    };
    let plan = plan_epoch(&cfg).unwrap();
    let one = plan_worker(&cfg, 1, 0, 1).unwrap();
    assert_eq!(one.ids.as_slice(), plan.partition.worker(1, 0, 1).unwrap());
}
