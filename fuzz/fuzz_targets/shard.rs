//! A shard file: header validation, then every sample split by a layout taken from the input.
#![no_main]

use libfuzzer_sys::fuzz_target;
use streamx_core::mds::shard::validate;
use streamx_core::mds::ColumnLayout;

fuzz_target!(|data: &[u8]| {
    // The first byte picks the column layout: bit i set means column i is variable-size.
    let (&spec, shard) = data.split_first().unwrap_or((&0, &[]));
    let Ok(n) = validate(shard) else { return };
    let sizes: Vec<Option<u32>> = (0..spec % 5)
        .map(|i| (spec >> (3 + i) & 1 == 0).then_some(u32::from(i) * 3))
        .collect();
    let layout = ColumnLayout::new(sizes);
    let offset = |i: usize| {
        let at = 4 + 4 * i;
        u32::from_le_bytes(shard[at..at + 4].try_into().unwrap()) as usize
    };
    let mut out = Vec::new();
    for i in 0..n {
        let sample = &shard[offset(i)..offset(i + 1)];
        if layout.split(sample, &mut out).is_ok() {
            let total: usize = out.iter().map(|c| c.len()).sum();
            assert!(total <= sample.len());
        }
    }
});
