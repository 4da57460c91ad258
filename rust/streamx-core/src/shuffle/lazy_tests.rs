//! Every lazy shuffle equals the whole one: at every position, in pieces of any size, and at
//! scattered positions asked for in one call.

use super::{get_shuffle_warn, LazyShuffle, ShuffleAlgo, ShuffleArgs};

const CASES: [(&[i64], usize, usize); 6] = [
    (&[3, 5, 4, 6, 9, 1, 7], 2, 8),
    (&[100, 250, 90, 300, 41], 3, 64),
    (&[1000; 12], 4, 3000),
    (&[7, 0, 13, 2000, 0, 5], 1, 40),
    (&[0, 0, 4, 0, 9], 3, 4),
    (&[500, 20, 700, 1, 1, 333], 5, 200),
];

fn lazy(algo: ShuffleAlgo, sizes: &[i64], ncn: usize, epoch: u64, block: usize) -> LazyShuffle {
    let args = ShuffleArgs {
        algo,
        shard_sizes: sizes,
        num_canonical_nodes: ncn,
        seed: 7,
        epoch,
        block_size: block,
    };
    LazyShuffle::new(&args, None, &mut Vec::new())
        .unwrap()
        .unwrap()
}

#[test]
fn pieces_equal_the_whole_shuffle_for_every_algorithm() {
    for algo in [ShuffleAlgo::Py1s, ShuffleAlgo::Py2s, ShuffleAlgo::Py1br] {
        for (sizes, ncn, block) in CASES {
            for epoch in 0..3_u64 {
                let whole =
                    get_shuffle_warn(algo, sizes, ncn, 7, epoch, block, &mut Vec::new()).unwrap();
                let total = whole.len() as i64;
                for piece in [1, 3, 17, 1000] {
                    let mut shuffle = lazy(algo, sizes, ncn, epoch, block);
                    let mut got = Vec::new();
                    for start in (0..total).step_by(piece) {
                        let positions: Vec<i64> =
                            (start..(start + piece as i64).min(total)).collect();
                        got.extend(shuffle.values_at(&positions).unwrap());
                    }
                    assert_eq!(got, whole, "{algo} {sizes:?} ncn {ncn} piece {piece}");
                }
                // Scattered positions, from the end backwards (a resume asks for a late node
                // first), then the rest.
                let mut shuffle = lazy(algo, sizes, ncn, epoch, block);
                let late: Vec<i64> = (total / 2..total).filter(|p| p % 5 == 1).collect();
                let got = shuffle.values_at(&late).unwrap();
                let want: Vec<i64> = late.iter().map(|&p| whole[p as usize]).collect();
                assert_eq!(got, want, "{algo} {sizes:?} scattered");
                let all: Vec<i64> = (0..total).collect();
                assert_eq!(
                    shuffle.values_at(&all).unwrap(),
                    whole,
                    "{algo} {sizes:?} then all"
                );
            }
        }
    }
}

#[test]
fn construction_fails_as_the_whole_shuffle_does() {
    // py1br's stagger is drawn below `int(0.75 * block)`: a block of 1 cannot give one.
    let args = ShuffleArgs {
        algo: ShuffleAlgo::Py1br,
        shard_sizes: &[5, 5],
        num_canonical_nodes: 2,
        seed: 7,
        epoch: 0,
        block_size: 1,
    };
    let whole = get_shuffle_warn(ShuffleAlgo::Py1br, &[5, 5], 2, 7, 0, 1, &mut Vec::new());
    let lazy = LazyShuffle::new(&args, None, &mut Vec::new());
    assert_eq!(
        whole.unwrap_err().to_string(),
        lazy.err().map(|e| e.to_string()).unwrap_or_default()
    );
    let naive = ShuffleArgs {
        algo: ShuffleAlgo::Naive,
        ..args
    };
    assert!(LazyShuffle::new(&naive, None, &mut Vec::new())
        .unwrap()
        .is_none());
}

#[test]
fn a_node_counted_in_part_resumes_where_it_stopped() {
    // A node's first piece counts only the spans (pieces, windows) up to its last rank; the
    // rest of that node, earlier ranks, and the nodes after it must still come out whole.
    for algo in [ShuffleAlgo::Py1s, ShuffleAlgo::Py2s, ShuffleAlgo::Py1br] {
        for (sizes, ncn, block) in CASES {
            let whole = get_shuffle_warn(algo, sizes, ncn, 7, 1, block, &mut Vec::new()).unwrap();
            let total = whole.len() as i64;
            let bounds = super::spans::node_bounds(total, ncn);
            let mut shuffle = lazy(algo, sizes, ncn, 1, block);
            let mut asks: Vec<i64> = Vec::new();
            for node in 0..ncn {
                let (lo, hi) = (bounds[node], bounds[node + 1]);
                // The middle of each node first, then its start, then its end.
                asks.extend(
                    [lo + (hi - lo) / 2, lo, hi - 1]
                        .iter()
                        .filter(|&&p| p >= lo && p < hi),
                );
            }
            // Then node 0's middle again (after every node), and everything.
            asks.push(bounds[1] / 3);
            for p in asks {
                let got = shuffle.values_at(&[p]).unwrap();
                assert_eq!(
                    got,
                    [whole[p as usize]],
                    "{algo} {sizes:?} ncn {ncn} at {p}"
                );
            }
            let all: Vec<i64> = (0..total).collect();
            assert_eq!(
                shuffle.values_at(&all).unwrap(),
                whole,
                "{algo} {sizes:?} all"
            );
        }
    }
}
