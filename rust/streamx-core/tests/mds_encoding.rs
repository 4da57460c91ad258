//! Encoding names, fixed sizes, ndarray bytes and sample framing, checked against
//! mosaicml-streaming (`fixtures/mds/encodings.json`).

mod mds_common;

use streamx_core::mds::{decode_ndarray, encode_ndarray, ColumnLayout, Encoding, ScalarType};
use streamx_core::Error;

fn fixture() -> serde_json::Value {
    serde_json::from_slice(&std::fs::read(mds_common::fixture("encodings.json")).unwrap()).unwrap()
}

#[test]
fn names_and_fixed_sizes_match_python() {
    let fixture = fixture();
    for (name, expected) in fixture["parse"].as_object().unwrap() {
        let parsed = Encoding::parse(name);
        if expected.is_null() {
            assert!(
                matches!(&parsed, Err(Error::UnsupportedEncoding(n)) if n == name),
                "{name}: {parsed:?}"
            );
        } else {
            let enc = parsed.unwrap_or_else(|e| panic!("{name}: {e}"));
            assert_eq!(enc.fixed_size(), expected[1].as_u64(), "{name}");
        }
    }
}

#[test]
fn python_object_encodings() {
    let python = [
        "pil",
        "jpeg",
        "png",
        "list[pil]",
        "list[jpeg]",
        "list[png]",
        "jpeg_array",
        "jpegarray",
        "pkl",
        "json",
        "str_decimal",
        "str_float",
    ];
    let native = [
        "bytes",
        "str",
        "int",
        "str_int",
        "uint8",
        "float16",
        "ndarray",
        "ndarray:int8:2",
    ];
    for name in python {
        assert!(Encoding::parse(name).unwrap().is_python_object(), "{name}");
    }
    for name in native {
        assert!(!Encoding::parse(name).unwrap().is_python_object(), "{name}");
    }
    assert_eq!(Encoding::parse("jpegarray").unwrap(), Encoding::JpegArray);
    assert_eq!(
        Encoding::parse("ndarray:int32:3,4").unwrap(),
        Encoding::NdArray {
            dtype: Some(ScalarType::I32),
            shape: Some(vec![3, 4])
        }
    );
}

#[test]
fn scalar_type_tables() {
    let all = [
        ("uint8", 1, 8),
        ("int8", 1, 9),
        ("uint16", 2, 16),
        ("int16", 2, 17),
        ("float16", 2, 18),
        ("uint32", 4, 32),
        ("int32", 4, 33),
        ("float32", 4, 34),
        ("uint64", 8, 64),
        ("int64", 8, 65),
        ("float64", 8, 66),
    ];
    for (name, size, code) in all {
        let t = ScalarType::from_name(name).unwrap();
        assert_eq!((t.name(), t.size(), t.dtype_code()), (name, size, code));
        assert_eq!(ScalarType::from_dtype_code(code), Some(t));
        assert_eq!(Encoding::parse(name).unwrap(), Encoding::Scalar(t));
    }
    assert_eq!(ScalarType::from_name("bool"), None);
    assert_eq!(
        (0..=255u8).filter_map(ScalarType::from_dtype_code).count(),
        11
    );
}

fn static_parts(encoding: &str) -> (Option<ScalarType>, Option<Vec<u64>>) {
    match Encoding::parse(encoding).unwrap() {
        Encoding::NdArray { dtype, shape } => (dtype, shape),
        other => panic!("{other:?}"),
    }
}

#[test]
fn ndarray_bytes_match_python() {
    for case in fixture()["ndarrays"].as_array().unwrap() {
        let (fixed_dtype, fixed_shape) = static_parts(case["encoding"].as_str().unwrap());
        let dtype = ScalarType::from_name(case["dtype"].as_str().unwrap()).unwrap();
        let shape: Vec<u64> = case["shape"]
            .as_array()
            .unwrap()
            .iter()
            .map(|d| d.as_u64().unwrap())
            .collect();
        let nbytes = case["nbytes"].as_u64().unwrap() as usize;
        let data = case["data"]
            .as_str()
            .map_or(vec![0; nbytes], |h| hex::decode(h).unwrap());
        let mut expected = hex::decode(case["header"].as_str().unwrap()).unwrap();
        expected.extend_from_slice(&data);

        let mut out = vec![0xAA]; // encode appends
        encode_ndarray(
            fixed_dtype,
            fixed_shape.as_deref(),
            dtype,
            &shape,
            &data,
            &mut out,
        )
        .unwrap();
        assert_eq!(&out[1..], &expected[..], "{case:?}");

        let decoded = decode_ndarray(fixed_dtype, fixed_shape.as_deref(), &expected).unwrap();
        assert_eq!(
            (decoded.dtype, decoded.shape.as_slice(), decoded.data),
            (dtype, &shape[..], &data[..])
        );
    }
}

#[test]
fn ndarray_spec_example_and_width_boundaries() {
    let mut out = Vec::new();
    encode_ndarray(None, None, ScalarType::F64, &[300, 2], &[0; 4800], &mut out).unwrap();
    assert_eq!(out[..6], [0x42, 0x09, 0x2c, 0x01, 0x02, 0x00]);
    let header = |shape: &[u64]| {
        let mut out = Vec::new();
        let n = shape.iter().product::<u64>() as usize;
        encode_ndarray(
            Some(ScalarType::U8),
            None,
            ScalarType::U8,
            shape,
            &vec![0; n],
            &mut out,
        )
        .unwrap();
        out[0]
    };
    assert_eq!(header(&[255]), 1 << 2);
    assert_eq!(header(&[256]), (1 << 2) | 1);
    assert_eq!(header(&[65535, 1]), (2 << 2) | 1);
    assert_eq!(header(&[65536]), (1 << 2) | 2);
}

#[test]
fn ndarray_encode_rejects_what_python_rejects() {
    use ScalarType::{F32, I16, U8};
    let enc =
        |fd: Option<ScalarType>, fs: Option<&[u64]>, d: ScalarType, s: &[u64], data: &[u8]| {
            let mut out = vec![1, 2, 3];
            let r = encode_ndarray(fd, fs, d, s, data, &mut out);
            assert_eq!(out, [1, 2, 3], "nothing appended on error");
            match r {
                Err(Error::InvalidValue(msg)) => msg,
                other => panic!("{other:?}"),
            }
        };
    assert!(enc(Some(F32), None, I16, &[1], &[0; 2])
        .starts_with("Wrong dtype: expected float32, got int16"));
    assert!(enc(None, None, U8, &[0, 3], &[]).contains("0 elements"));
    assert!(enc(None, None, U8, &[], &[0]).contains("scalar"));
    assert!(enc(None, None, U8, &[1; 64], &[0]).contains("too many axes"));
    assert!(enc(Some(U8), Some(&[2, 2]), U8, &[4], &[0; 4]).starts_with("Wrong shape"));
    assert!(enc(None, None, I16, &[3], &[0; 5]).contains("needs prod(shape)"));
    // 63 axes is the maximum that fits, and a 0-d value is fine when the shape is static.
    encode_ndarray(None, None, U8, &[1; 63], &[0], &mut Vec::new()).unwrap();
}

#[test]
fn ndarray_decode_rejects_bad_bytes() {
    let bad = |fd: Option<ScalarType>, bytes: &[u8]| {
        assert!(
            matches!(decode_ndarray(fd, None, bytes), Err(Error::InvalidValue(_))),
            "{bytes:?}"
        );
    };
    bad(None, &[]);
    bad(None, &[7, 4, 1, 0]); // unknown dtype code
    bad(None, &[8]); // no shape byte
    bad(None, &[8, 8, 1]); // 2 dims declared, 1 present
    bad(None, &[8, 4, 2, 0]); // 2 values needed, 1 present
    bad(None, &[8, 4, 2, 0, 0, 0]); // trailing byte
    bad(
        Some(ScalarType::U64),
        &[(1 << 2) | 3, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff],
    ); // overflow
    let wide = [(1 << 2) | 3, 0, 0, 0, 0, 1, 0, 0, 0]; // dim 2^32 in uint64 width
    bad(Some(ScalarType::U8), &wide);
    let zero_d = decode_ndarray(Some(ScalarType::U8), None, &[0, 9]).unwrap();
    assert!(zero_d.shape.is_empty() && zero_d.data == [9]);
    let fixed = decode_ndarray(Some(ScalarType::U8), Some(&[2]), &[1, 2]).unwrap();
    assert_eq!(fixed.data, [1, 2]);
    assert!(decode_ndarray(Some(ScalarType::U8), Some(&[2]), &[1, 2, 3]).is_err());
}

/// Every column kind frames and splits back: fixed sizes from each encoding's
/// `fixed_size`, variable ones length-prefixed (including empty values).
#[test]
fn framing_round_trips_for_every_encoding() {
    let names = [
        "bytes",
        "str",
        "int",
        "uint8",
        "uint16",
        "uint32",
        "uint64",
        "int8",
        "int16",
        "int32",
        "int64",
        "float16",
        "float32",
        "float64",
        "str_int",
        "str_float",
        "str_decimal",
        "pil",
        "jpeg",
        "png",
        "list[pil]",
        "list[jpeg]",
        "list[png]",
        "jpeg_array",
        "pkl",
        "json",
        "ndarray",
        "ndarray:int16",
        "ndarray:float32:2,3",
    ];
    let encodings: Vec<Encoding> = names.iter().map(|n| Encoding::parse(n).unwrap()).collect();
    let sizes: Vec<Option<u32>> = encodings
        .iter()
        .map(|e| e.fixed_size().map(|s| s as u32))
        .collect();
    let layout = ColumnLayout::new(sizes.clone())
        .with_encodings(names.iter().map(|s| (*s).to_owned()).collect());
    for variant in 0..3usize {
        let values: Vec<Vec<u8>> = sizes
            .iter()
            .enumerate()
            .map(|(i, s)| {
                let len = s.map_or(variant * (i % 5) * 7, |n| n as usize);
                (0..len).map(|b| (b + i) as u8).collect()
            })
            .collect();
        let refs: Vec<&[u8]> = values.iter().map(Vec::as_slice).collect();
        let mut framed = Vec::new();
        layout.frame(&refs, &mut framed).unwrap();
        let variable = sizes.iter().filter(|s| s.is_none()).count();
        assert_eq!(
            framed.len(),
            4 * variable + values.iter().map(Vec::len).sum::<usize>()
        );
        let mut split = Vec::new();
        layout.split(&framed, &mut split).unwrap();
        assert_eq!(split, refs);
    }
}

#[test]
fn frame_rejects_wrong_fixed_sizes_and_column_counts() {
    let layout =
        ColumnLayout::new(vec![None, Some(4)]).with_encodings(vec!["str".into(), "float32".into()]);
    let mut out = vec![9];
    match layout.frame(&[b"ab", b"123"], &mut out) {
        Err(Error::InvalidValue(msg)) => assert_eq!(
            msg,
            "Unexpected data size; was this data typed with the correct encoding (float32)?"
        ),
        other => panic!("{other:?}"),
    }
    assert_eq!(out, [9], "nothing appended on error");
    assert!(layout.frame(&[b"ab"], &mut out).is_err());
    layout.frame(&[b"ab", b"1234"], &mut out).unwrap();
    assert_eq!(out, [9, 2, 0, 0, 0, b'a', b'b', b'1', b'2', b'3', b'4']);
}

#[test]
fn split_rejects_bad_framing() {
    let layout = ColumnLayout::new(vec![None, Some(2), None]);
    let mut out = Vec::new();
    let cases: [&[u8]; 4] = [
        &[1, 0, 0, 0],                      // second length prefix missing
        &[1, 0, 0, 0, 0, 0, 0, 0, 7, 8],    // fixed column runs past the end
        &[9, 0, 0, 0, 0, 0, 0, 0, 7, 8, 9], // variable column runs past the end
        &[0, 0, 0, 0, 0, 0, 0, 0, 7, 8, 9], // trailing byte
    ];
    for case in cases {
        assert!(
            matches!(layout.split(case, &mut out), Err(Error::InvalidValue(_))),
            "{case:?}"
        );
    }
    layout
        .split(&[0, 0, 0, 0, 1, 0, 0, 0, 7, 8, 9], &mut out)
        .unwrap();
    assert_eq!(out, [&[][..], &[7, 8], &[9]]);
    let sizes = [Some(u64::from(u32::MAX) + 1)];
    assert!(ColumnLayout::from_sizes(&sizes).is_err());
}

#[test]
fn every_listed_name_parses_and_native_ones_are_byte_level() {
    let names = Encoding::names();
    assert_eq!(names.len(), 28, "{names:?}");
    for name in names {
        let enc = Encoding::parse(name).unwrap_or_else(|e| panic!("{name}: {e}"));
        assert!(!(enc.is_native() && enc.is_python_object()), "{name}");
    }
    let native: Vec<_> = Encoding::names()
        .into_iter()
        .filter(|n| Encoding::parse(n).unwrap().is_native())
        .collect();
    assert_eq!(native.len(), 4 + 11, "{native:?}");
}
