//! An `ndarray` column value, with and without the dtype and shape fixed by the encoding.
#![no_main]

use libfuzzer_sys::fuzz_target;
use streamx_core::mds::{decode_ndarray, ScalarType};

fuzz_target!(|data: &[u8]| {
    let (&head, bytes) = data.split_first().unwrap_or((&0, &[]));
    let dtype = (head & 1 == 1)
        .then(|| ScalarType::from_dtype_code(head >> 4))
        .flatten();
    let shape: Option<&[u64]> = match (head >> 1) & 3 {
        0 => None,
        1 => Some(&[3]),
        2 => Some(&[2, 2]),
        _ => Some(&[u64::MAX, 2]),
    };
    if let Ok(array) = decode_ndarray(dtype, shape, bytes) {
        let elements: u64 = array.shape.iter().product();
        assert_eq!(elements * array.dtype.size(), array.data.len() as u64);
    }
});
