//! Golden vectors for the epoch order, produced by numpy and mosaicml-streaming 0.13.0 through
//! `tests/fixtures/make_golden.py`, plus the verified vectors quoted in COMPAT-SPEC §4.6.

use std::sync::OnceLock;

use serde_json::Value;
use streamx_core::batching::BatchingMethod;
use streamx_core::partition::{get_partitions, worker_slice, PartitionAlgo, PartitionSpec};
use streamx_core::plan::{
    plan_epoch, plan_epoch_with, plan_worker, plan_worker_pieces, EpochConfig, StreamSpec, World,
};
use streamx_core::resample::{resample_streams, ResampleParams, StreamShards};
use streamx_core::sampling::get_sampling;
use streamx_core::shuffle::rng::Pcg64;
use streamx_core::shuffle::{get_shuffle, get_shuffle_warn, ShuffleAlgo};
use streamx_core::warning::{Warning, WarningKind};
use streamx_core::Result;

fn golden() -> &'static Value {
    static GOLDEN: OnceLock<Value> = OnceLock::new();
    GOLDEN.get_or_init(|| {
        let path = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/fixtures/golden.json");
        serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap()
    })
}

fn int(v: &Value) -> i64 {
    v.as_i64().unwrap()
}

fn ints(v: &Value) -> Vec<i64> {
    v.as_array().unwrap().iter().map(int).collect()
}

fn size(v: &Value) -> usize {
    v.as_u64().unwrap() as usize
}

/// Compares against `make_golden.digest`: the whole vector, or length + head + hash.
fn assert_digest(got: &[i64], want: &Value, ctx: &str) {
    if let Some(all) = want.get("all") {
        assert_eq!(got, ints(all), "{ctx}");
        return;
    }
    assert_eq!(got.len(), size(&want["len"]), "{ctx}");
    assert_eq!(got[..16], ints(&want["head"]), "{ctx}");
    let hash = got.iter().fold(0_u128, |h, &v| {
        (h * 1_000_003 + (v + 2) as u128) % ((1_u128 << 61) - 1)
    });
    assert_eq!(hash as u64, want["hash"].as_u64().unwrap(), "{ctx}");
}

fn norm(s: &str) -> String {
    s.split_whitespace().collect::<Vec<_>>().join(" ")
}

/// Same kinds in the same order, and each message starting like streaming's.
fn assert_warnings(got: &[Warning], want: &Value, ctx: &str) {
    let want = want.as_array().unwrap();
    let kinds: Vec<&str> = got
        .iter()
        .map(|w| match w.kind {
            WarningKind::User => "user",
            WarningKind::Log => "log",
        })
        .collect();
    let want_kinds: Vec<&str> = want.iter().map(|w| w[0].as_str().unwrap()).collect();
    assert_eq!(kinds, want_kinds, "{ctx}: {got:?}");
    for (g, w) in got.iter().zip(want) {
        let prefix: String = w[1].as_str().unwrap().chars().take(40).collect();
        assert!(
            norm(&g.message).starts_with(&prefix),
            "{ctx}: {} vs {prefix}",
            g.message
        );
    }
}

/// Checks an outcome: streaming's value (via `check`) or its error, and its warnings.
fn assert_outcome<T>(
    got: Result<T>,
    warnings: Option<&[Warning]>,
    case: &Value,
    check: impl Fn(T),
) {
    let ctx = case.to_string();
    let ctx = &ctx[..ctx.len().min(300)];
    match (got, case.get("error")) {
        (Ok(v), None) => check(v),
        (Err(e), Some(_)) => {
            let want: String = case["message"].as_str().unwrap().chars().take(25).collect();
            assert!(norm(&e.to_string()).starts_with(&want), "{ctx}: {e}");
        }
        (Ok(_), Some(e)) => panic!("{ctx}: streaming raised {e}, we did not"),
        (Err(e), None) => panic!("{ctx}: we raised {e}, streaming did not"),
    }
    if let Some(w) = warnings {
        assert_warnings(w, &case["warnings"], ctx);
    }
}

#[test]
fn rng_call_sequences_match_numpy() {
    for script in golden()["rng"].as_array().unwrap() {
        let seed: u128 = script["seed"].as_str().unwrap().parse().unwrap();
        let mut g = Pcg64::new(seed);
        let ops = script["ops"].as_array().unwrap();
        for (op, want) in ops.iter().zip(script["results"].as_array().unwrap()) {
            let ctx = format!("seed {seed} op {op}");
            let arg = |i: usize| op[i].as_i64().unwrap();
            match op[0].as_str().unwrap() {
                "integers" => assert_digest(&[g.integers(arg(1), arg(2)).unwrap()], want, &ctx),
                "permutation" => assert_digest(&g.permutation(arg(1) as usize), want, &ctx),
                "choice" => {
                    let got = g.choice_noreplace(arg(1) as u64, arg(2) as u64).unwrap();
                    assert_digest(&got, want, &ctx);
                }
                "shuffle" => {
                    let mut x: Vec<i64> = (0..arg(1)).collect();
                    g.shuffle(&mut x);
                    assert_digest(&x, want, &ctx);
                }
                "uniform" => {
                    let (lo, hi) = (op[1].as_f64().unwrap(), op[2].as_f64().unwrap());
                    let got: Vec<i64> = g
                        .uniform(lo, hi, arg(3) as usize)
                        .into_iter()
                        .map(|x| x.to_bits() as i64)
                        .collect();
                    assert_digest(&got, want, &ctx);
                }
                other => panic!("unknown op {other}"),
            }
        }
    }
}

#[test]
fn shuffles_match_streaming() {
    for case in golden()["shuffle"].as_array().unwrap() {
        let algo: ShuffleAlgo = case["algo"].as_str().unwrap().parse().unwrap();
        let mut warnings = Vec::new();
        let got = get_shuffle_warn(
            algo,
            &ints(&case["sizes"]),
            size(&case["ncn"]),
            case["seed"].as_u64().unwrap(),
            case["epoch"].as_u64().unwrap(),
            size(&case["block"]),
            &mut warnings,
        );
        assert_outcome(got, Some(&warnings), case, |perm| {
            assert_digest(&perm, &case["ok"], &case.to_string());
        });
    }
}

#[test]
fn sampling_matches_streaming() {
    for case in golden()["sampling"].as_array().unwrap() {
        let got = get_sampling(
            &ints(&case["sizes"]),
            int(&case["choose"]),
            int(&case["granularity"]),
            case["seed"].as_u64().unwrap(),
            case["epoch"].as_u64().unwrap(),
            case["use_epoch"].as_bool().unwrap(),
        );
        assert_outcome(got, Some(&[]), case, |v| {
            assert_eq!(v, ints(&case["ok"]), "{case}");
        });
    }
}

fn stream_specs(streams: &Value) -> Vec<StreamSpec> {
    streams
        .as_array()
        .unwrap()
        .iter()
        .map(|s| StreamSpec {
            samples_per_shard: ints(&s["sizes"]),
            choose: int(&s["choose"]),
            proportion: s["proportion"].as_f64().unwrap(),
        })
        .collect()
}

#[test]
fn resampling_matches_streaming() {
    for case in golden()["resample"].as_array().unwrap() {
        let specs = stream_specs(&case["streams"]);
        let mut offset = 0;
        let mut shards = Vec::new();
        for s in &specs {
            shards.push(StreamShards {
                samples_per_shard: &s.samples_per_shard,
                sample_offset: offset,
                choose: s.choose,
            });
            offset += s.samples_per_shard.iter().sum::<i64>();
        }
        let params = ResampleParams {
            seed: case["seed"].as_u64().unwrap(),
            epoch: case["epoch"].as_u64().unwrap(),
            sampling_method: case["method"].as_str().unwrap().parse().unwrap(),
            granularity: int(&case["granularity"]),
            epoch_seed_change: case["epoch_seed_change"].as_bool().unwrap(),
        };
        let selected = match case["stream_id"].as_u64() {
            Some(i) => &shards[i as usize..=i as usize],
            None => &shards[..],
        };
        let got = resample_streams(selected, &params);
        assert_outcome(got, Some(&[]), case, |r| {
            assert_digest(&r.shuffle_units, &case["ok"][0], &case.to_string());
            assert_digest(&r.small_per_big, &case["ok"][1], &case.to_string());
        });
    }
}

fn partition_spec(case: &Value) -> PartitionSpec {
    PartitionSpec {
        num_samples: case["n"].as_u64().unwrap(),
        num_canonical_nodes: size(&case["ncn"]),
        num_physical_nodes: size(&case["pn"]),
        ranks_per_node: size(&case["rpn"]),
        workers_per_rank: size(&case["wpr"]),
        batch_size: size(&case["bs"]),
        drop_first: case["drop"].as_u64().unwrap(),
        initial_physical_nodes: case["ipn"].as_u64().map(|v| v as usize),
    }
}

#[test]
fn partitions_match_streaming_and_worker_slices_agree() {
    for case in golden()["partition"].as_array().unwrap() {
        let algo: PartitionAlgo = case["algo"].as_str().unwrap().parse().unwrap();
        let spec = partition_spec(case);
        let mut warnings = Vec::new();
        let got = get_partitions(algo, &spec, &mut warnings);
        assert_outcome(got, Some(&warnings), case, |part| {
            let shape: Vec<usize> = case["ok"]["shape"]
                .as_array()
                .unwrap()
                .iter()
                .map(size)
                .collect();
            assert_eq!(part.shape.to_vec(), shape, "{case}");
            assert_digest(&part.ids, &case["ok"]["ids"], &case.to_string());
            let [p, r, w, _, _] = part.shape;
            for (pi, ri, wi) in itertools(p, r, w) {
                let one = worker_slice(algo, &spec, pi, ri, wi, &mut Vec::new()).unwrap();
                assert_eq!(
                    one,
                    part.worker(pi, ri, wi).unwrap(),
                    "{case} worker {pi},{ri},{wi}"
                );
            }
        });
    }
}

fn itertools(p: usize, r: usize, w: usize) -> impl Iterator<Item = (usize, usize, usize)> {
    (0..p).flat_map(move |a| (0..r).flat_map(move |b| (0..w).map(move |c| (a, b, c))))
}

fn epoch_config(case: &Value) -> EpochConfig {
    EpochConfig {
        streams: stream_specs(&case["streams"]),
        seed: case["seed"].as_u64().unwrap(),
        epoch: case["epoch"].as_u64().unwrap(),
        shuffle: case["shuffle"].as_bool().unwrap(),
        shuffle_algo: case["algo"].as_str().unwrap().parse().unwrap(),
        shuffle_block_size: size(&case["block"]),
        num_canonical_nodes: size(&case["ncn"]),
        partition_algo: case["partition_algo"].as_str().unwrap().parse().unwrap(),
        batching_method: case["method"].as_str().unwrap().parse().unwrap(),
        batch_size: size(&case["bs"]),
        world: World {
            num_nodes: size(&case["nodes"]),
            ranks_per_node: size(&case["rpn"]),
            workers_per_rank: size(&case["wpr"]),
        },
        sample_in_epoch: case["sample_in_epoch"].as_u64().unwrap(),
        initial_physical_nodes: case["ipn"].as_u64().map(|v| v as usize),
        sampling_method: case["sampling_method"].as_str().unwrap().parse().unwrap(),
        sampling_granularity: int(&case["granularity"]),
    }
}

#[test]
fn batching_methods_match_streaming() {
    for case in golden()["batching"].as_array().unwrap() {
        let cfg = epoch_config(case);
        let mut warnings = Vec::new();
        let got = plan_epoch_with(&cfg, &mut warnings);
        assert_outcome(got, Some(&warnings), case, |part| {
            let shape: Vec<usize> = case["ok"]["shape"]
                .as_array()
                .unwrap()
                .iter()
                .map(size)
                .collect();
            assert_eq!(part.shape.to_vec(), shape, "{case}");
            assert_digest(&part.ids, &case["ok"]["ids"], &case.to_string());
            let [p, r, w, _, _] = part.shape;
            for (pi, ri, wi) in itertools(p, r, w) {
                let one = plan_worker(&cfg, pi, ri, wi).unwrap();
                assert_eq!(
                    one.ids,
                    part.worker(pi, ri, wi).unwrap(),
                    "{case} worker {pi},{ri},{wi}"
                );
                // In pieces (one slot, an odd count, all at once): the same ids and warnings.
                for piece in [1, 7, usize::MAX] {
                    let mut cursor = plan_worker_pieces(&cfg, pi, ri, wi).unwrap();
                    assert_eq!(cursor.warnings, one.warnings, "{case}");
                    assert_eq!(cursor.len(), one.ids.len(), "{case}");
                    let mut got = Vec::new();
                    loop {
                        let ids = cursor.next_piece(piece).unwrap();
                        if ids.is_empty() {
                            break;
                        }
                        got.extend(ids);
                    }
                    assert_eq!(
                        got, one.ids,
                        "{case} worker {pi},{ri},{wi} pieces of {piece}"
                    );
                }
            }
        });
    }
}

#[test]
fn spec_shuffle_vectors() {
    let sizes = [3, 5, 4, 6];
    let cases: [(&str, u64, [i64; 18]); 7] = [
        (
            "naive",
            0,
            [16, 17, 12, 6, 10, 9, 7, 3, 0, 14, 5, 11, 2, 4, 15, 1, 13, 8],
        ),
        (
            "py1s",
            0,
            [10, 8, 9, 17, 16, 12, 13, 15, 14, 11, 0, 2, 1, 4, 7, 5, 6, 3],
        ),
        (
            "py1s",
            1,
            [15, 14, 17, 12, 13, 16, 10, 8, 9, 5, 7, 6, 3, 4, 1, 2, 0, 11],
        ),
        (
            "py2s",
            0,
            [10, 9, 8, 14, 15, 13, 17, 16, 12, 1, 2, 0, 11, 7, 4, 3, 6, 5],
        ),
        (
            "py1br",
            0,
            [8, 10, 14, 9, 13, 15, 17, 16, 12, 0, 11, 1, 7, 3, 6, 4, 5, 2],
        ),
        (
            "py1e",
            0,
            [8, 10, 17, 9, 16, 12, 13, 15, 14, 11, 4, 0, 1, 7, 2, 3, 5, 6],
        ),
        (
            "py1e",
            1,
            [15, 14, 17, 10, 12, 9, 8, 13, 16, 3, 7, 2, 6, 5, 11, 1, 4, 0],
        ),
    ];
    for (algo, epoch, want) in cases {
        let got = get_shuffle(algo.parse().unwrap(), &sizes, 2, 42, epoch, 8).unwrap();
        assert_eq!(got, want, "{algo} epoch {epoch}");
    }
    assert!("py1b".parse::<ShuffleAlgo>().is_err());
}

#[test]
fn spec_sampling_vectors() {
    assert_eq!(
        get_sampling(&[4, 4, 4], 5, 1, 42, 0, true).unwrap(),
        [1, 2, 2]
    );
    assert_eq!(
        get_sampling(&[4, 4, 4], 30, 2, 42, 0, true).unwrap(),
        [8, 12, 10]
    );
}

fn spec(n: u64, ncn: usize, pn: usize, rpn: usize, wpr: usize, bs: usize) -> PartitionSpec {
    PartitionSpec {
        num_samples: n,
        num_canonical_nodes: ncn,
        num_physical_nodes: pn,
        ranks_per_node: rpn,
        workers_per_rank: wpr,
        batch_size: bs,
        drop_first: 0,
        initial_physical_nodes: None,
    }
}

#[test]
fn spec_partition_vectors() {
    let orig = PartitionAlgo::Orig;
    let part = get_partitions(orig, &spec(10, 2, 1, 2, 2, 2), &mut Vec::new()).unwrap();
    assert_eq!(part.shape, [1, 2, 2, 2, 2]);
    assert_eq!(
        part.ids,
        [0, 1, 4, -1, 2, 3, -1, -1, 5, 6, 9, -1, 7, 8, -1, -1]
    );
    let dropped = PartitionSpec {
        drop_first: 4,
        ..spec(10, 2, 1, 2, 2, 2)
    };
    let part = get_partitions(orig, &dropped, &mut Vec::new()).unwrap();
    assert_eq!(part.shape, [1, 2, 2, 1, 2]);
    assert_eq!(part.ids, [2, 3, 4, -1, 7, 8, 9, -1]);
    let part = get_partitions(orig, &spec(10, 4, 2, 1, 1, 1), &mut Vec::new()).unwrap();
    assert_eq!(part.ids, [0, 5, 1, 6, 1, 6, 2, 7, 3, 8, 4, 9]);
    let relaxed = PartitionSpec {
        initial_physical_nodes: Some(2),
        ..spec(12, 2, 3, 1, 1, 2)
    };
    let part = get_partitions(PartitionAlgo::Relaxed, &relaxed, &mut Vec::new()).unwrap();
    assert_eq!(part.ids, [0, 1, 3, 4, 2, 6, 5, 9, 7, 8, 10, 11]);
    let err = get_partitions(orig, &spec(10, 3, 2, 1, 1, 1), &mut Vec::new()).unwrap_err();
    assert!(err
        .to_string()
        .starts_with("Either canonical or physical nodes"));
}

/// The 30-sample dataset (shards of 11/11/8) read by one process with `batch_size=4`,
/// `shuffle=True`, `shuffle_block_size=8` (COMPAT-SPEC §4.6, from a real `StreamingDataset`).
#[test]
fn spec_end_to_end_order() {
    let want: [[i64; 30]; 2] = [
        [
            2, 5, 10, 9, 8, 1, 6, 7, 4, 3, 0, 18, 13, 19, 21, 11, 17, 16, 20, 15, 14, 12, 24, 25,
            26, 28, 29, 23, 22, 27,
        ],
        [
            19, 14, 15, 11, 13, 18, 20, 21, 17, 16, 12, 7, 4, 8, 3, 2, 10, 5, 6, 1, 0, 9, 27, 29,
            23, 25, 22, 24, 26, 28,
        ],
    ];
    for (epoch, want) in want.iter().enumerate() {
        let cfg = EpochConfig {
            streams: vec![StreamSpec {
                samples_per_shard: vec![11, 11, 8],
                choose: 30,
                proportion: 1.0,
            }],
            seed: 9176,
            epoch: epoch as u64,
            shuffle: true,
            shuffle_algo: ShuffleAlgo::Py1e,
            shuffle_block_size: 8,
            num_canonical_nodes: 1,
            partition_algo: PartitionAlgo::Orig,
            batching_method: BatchingMethod::Random,
            batch_size: 4,
            world: World {
                num_nodes: 1,
                ranks_per_node: 1,
                workers_per_rank: 1,
            },
            sample_in_epoch: 0,
            initial_physical_nodes: None,
            sampling_method: "balanced".parse().unwrap(),
            sampling_granularity: 1,
        };
        let plan = plan_epoch(&cfg).unwrap();
        let order: Vec<i64> = plan.partition.ids.into_iter().filter(|&i| i >= 0).collect();
        assert_eq!(order, want, "epoch {epoch}");
    }
}
