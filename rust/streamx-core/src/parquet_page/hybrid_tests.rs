//! The RLE/bit-packed hybrid's decoders: runs and groups, and whole groups appended at once
//! against the value-by-value path.

use super::hybrid;
use super::tests::varint;

#[test]
fn hybrid_runs_and_bit_packed_groups_decode() {
    // A run of four 7s, then one bit-packed group of 8 three-bit values 0..8.
    let mut bytes = vec![4 << 1, 7];
    bytes.push((1 << 1) | 1);
    let mut word = 0u32;
    for v in 0..8u32 {
        word |= v << (3 * v);
    }
    bytes.extend_from_slice(&word.to_le_bytes()[..3]);
    let mut got = Vec::new();
    hybrid::decode(&bytes, 3, 10, &mut |v| {
        got.push(v);
        Ok(())
    })
    .unwrap();
    assert_eq!(got, [7, 7, 7, 7, 0, 1, 2, 3, 4, 5]);
}

#[test]
fn bit_packed_indices_appended_whole_equal_those_decoded_one_by_one() {
    // Every width, and counts that end inside, at and past a group of eight (the last
    // values of a run are read from a copy of its tail).
    let mut seed = 0x9e37_79b9_7f4a_7c15u64;
    for width in 0..=32u32 {
        for count in [1usize, 7, 8, 9, 63, 64, 100] {
            let groups = count.div_ceil(8);
            let mut bytes = Vec::new();
            varint(&mut bytes, ((groups as u64) << 1) | 1);
            for _ in 0..groups * width as usize {
                seed = seed.wrapping_mul(6_364_136_223_846_793_005).wrapping_add(1);
                bytes.push((seed >> 56) as u8);
            }
            let mut one_by_one = Vec::new();
            hybrid::decode(&bytes, width, count, &mut |v| {
                one_by_one.push(v);
                Ok(())
            })
            .unwrap();
            let mut whole = Vec::new();
            let bound = u32::MAX;
            let got = hybrid::decode_into(&bytes, width, count, bound, &mut whole);
            if one_by_one.contains(&u32::MAX) {
                assert!(got.is_err(), "width {width}, count {count}");
                continue;
            }
            got.unwrap();
            assert_eq!(whole, one_by_one, "width {width}, count {count}");
        }
    }
}
