//! Column encoding names, as accepted by mosaicml-streaming's MDS writer and reader.
//!
//! Rust frames every column; it decodes only the byte-level encodings. Encodings whose values
//! are Python objects (images, pickles, JSON, decimals) are passed through as bytes.

use crate::error::{Error, Result};

/// A fixed-width numeric type (numpy dtype), as used by scalar columns and ndarrays.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum ScalarType {
    /// `uint8`
    U8,
    /// `uint16`
    U16,
    /// `uint32`
    U32,
    /// `uint64`
    U64,
    /// `int8`
    I8,
    /// `int16`
    I16,
    /// `int32`
    I32,
    /// `int64`
    I64,
    /// `float16`
    F16,
    /// `float32`
    F32,
    /// `float64`
    F64,
}

/// (type, numpy name, byte size, ndarray dtype code).
const SCALARS: [(ScalarType, &str, u64, u8); 11] = [
    (ScalarType::U8, "uint8", 1, 8),
    (ScalarType::U16, "uint16", 2, 16),
    (ScalarType::U32, "uint32", 4, 32),
    (ScalarType::U64, "uint64", 8, 64),
    (ScalarType::I8, "int8", 1, 9),
    (ScalarType::I16, "int16", 2, 17),
    (ScalarType::I32, "int32", 4, 33),
    (ScalarType::I64, "int64", 8, 65),
    (ScalarType::F16, "float16", 2, 18),
    (ScalarType::F32, "float32", 4, 34),
    (ScalarType::F64, "float64", 8, 66),
];

impl ScalarType {
    fn row(self) -> (ScalarType, &'static str, u64, u8) {
        SCALARS[self as usize]
    }

    /// Every scalar type, in the table's order.
    pub fn all() -> impl Iterator<Item = ScalarType> {
        SCALARS.iter().map(|row| row.0)
    }

    /// Parses a numpy dtype name (`"uint8"` .. `"float64"`).
    pub fn from_name(name: &str) -> Option<ScalarType> {
        SCALARS.iter().find(|r| r.1 == name).map(|r| r.0)
    }

    /// The numpy dtype name.
    pub fn name(self) -> &'static str {
        self.row().1
    }

    /// Size of one value in bytes.
    pub fn size(self) -> u64 {
        self.row().2
    }

    /// The one-byte code that dynamic-dtype ndarrays store.
    pub fn dtype_code(self) -> u8 {
        self.row().3
    }

    /// Inverse of [`ScalarType::dtype_code`].
    pub fn from_dtype_code(code: u8) -> Option<ScalarType> {
        SCALARS.iter().find(|r| r.3 == code).map(|r| r.0)
    }
}

/// One column encoding, parsed from its name.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub enum Encoding {
    /// `bytes`: stored unchanged.
    Bytes,
    /// `str`: UTF-8.
    Str,
    /// `int`: int64 LE, decoded to a Python `int`.
    Int,
    /// `uint8` .. `float64`: one LE value, decoded to a numpy scalar.
    Scalar(ScalarType),
    /// `str_int`: decimal digits.
    StrInt,
    /// `str_float`: Python `str(float)`.
    StrFloat,
    /// `str_decimal`: `str(Decimal)`.
    StrDecimal,
    /// `pil`: raw PIL image.
    Pil,
    /// `jpeg`.
    Jpeg,
    /// `png`.
    Png,
    /// `list[pil]`.
    ListPil,
    /// `list[jpeg]`.
    ListJpeg,
    /// `list[png]`.
    ListPng,
    /// `jpeg_array` (alias `jpegarray`).
    JpegArray,
    /// `pkl`: pickle (unsafe to decode).
    Pkl,
    /// `json`.
    Json,
    /// `ndarray[:dtype[:d0,d1,...]]`; a part given in the name is not stored per sample.
    NdArray {
        /// The static dtype, if the name gives one.
        dtype: Option<ScalarType>,
        /// The static shape, if the name gives one (only with a dtype).
        shape: Option<Vec<u64>>,
    },
}

const SIMPLE: [(&str, Encoding); 16] = [
    ("bytes", Encoding::Bytes),
    ("str", Encoding::Str),
    ("int", Encoding::Int),
    ("str_int", Encoding::StrInt),
    ("str_float", Encoding::StrFloat),
    ("str_decimal", Encoding::StrDecimal),
    ("pil", Encoding::Pil),
    ("jpeg", Encoding::Jpeg),
    ("png", Encoding::Png),
    ("list[pil]", Encoding::ListPil),
    ("list[jpeg]", Encoding::ListJpeg),
    ("list[png]", Encoding::ListPng),
    ("jpeg_array", Encoding::JpegArray),
    ("jpegarray", Encoding::JpegArray),
    ("pkl", Encoding::Pkl),
    ("json", Encoding::Json),
];

impl Encoding {
    /// Parses an encoding name the way mosaicml-streaming does: a name with a `:` is split at
    /// the first one and only `ndarray` takes the rest as arguments.
    pub fn parse(name: &str) -> Result<Encoding> {
        let unsupported = || Error::UnsupportedEncoding(name.to_owned());
        match name.split_once(':') {
            Some(("ndarray", args)) => parse_ndarray_args(args).ok_or_else(unsupported),
            Some(_) => Err(unsupported()),
            None if name == "ndarray" => Ok(Encoding::NdArray {
                dtype: None,
                shape: None,
            }),
            None => {
                if let Some(t) = ScalarType::from_name(name) {
                    return Ok(Encoding::Scalar(t));
                }
                SIMPLE
                    .iter()
                    .find(|(n, _)| *n == name)
                    .map(|(_, e)| e.clone())
                    .ok_or_else(unsupported)
            }
        }
    }

    /// The fixed encoded size in bytes (the index's `column_sizes` entry), or `None` if it
    /// varies per sample.
    pub fn fixed_size(&self) -> Option<u64> {
        match self {
            Encoding::Int => Some(8),
            Encoding::Scalar(t) => Some(t.size()),
            Encoding::NdArray {
                dtype: Some(t),
                shape: Some(shape),
            } => shape
                .iter()
                .try_fold(t.size(), |acc, &d| acc.checked_mul(d)),
            _ => None,
        }
    }

    /// Every encoding name the format defines, without arguments (`ndarray` stands for
    /// all its `ndarray:dtype:shape` forms). The one list both languages check against.
    pub fn names() -> Vec<&'static str> {
        let simple = SIMPLE.iter().map(|(name, _)| *name);
        let scalars = SCALARS.iter().map(|row| row.1);
        simple.chain(scalars).chain(["ndarray"]).collect()
    }

    /// Whether the bindings encode and decode this column's values themselves (the
    /// byte-level encodings); the others are encoded and decoded by Python.
    pub fn is_native(&self) -> bool {
        matches!(
            self,
            Encoding::Bytes
                | Encoding::Str
                | Encoding::Int
                | Encoding::StrInt
                | Encoding::Scalar(_)
        )
    }

    /// Whether encoding or decoding values needs Python objects (images, pickle, JSON,
    /// `Decimal`, float repr); such columns cross into Rust as opaque bytes.
    pub fn is_python_object(&self) -> bool {
        matches!(
            self,
            Encoding::Pil
                | Encoding::Jpeg
                | Encoding::Png
                | Encoding::ListPil
                | Encoding::ListJpeg
                | Encoding::ListPng
                | Encoding::JpegArray
                | Encoding::Pkl
                | Encoding::Json
                | Encoding::StrDecimal
                | Encoding::StrFloat
        )
    }
}

/// Parses `dtype[:d0,d1,...]`; an empty string means fully dynamic, as upstream.
fn parse_ndarray_args(args: &str) -> Option<Encoding> {
    if args.is_empty() {
        return Some(Encoding::NdArray {
            dtype: None,
            shape: None,
        });
    }
    let mut parts = args.split(':');
    let dtype = ScalarType::from_name(parts.next()?)?;
    let shape = match parts.next() {
        None => None,
        Some(dims) => Some(
            dims.split(',')
                .map(parse_dim)
                .collect::<Option<Vec<u64>>>()?,
        ),
    };
    if parts.next().is_some() {
        return None;
    }
    let enc = Encoding::NdArray {
        dtype: Some(dtype),
        shape,
    };
    // A static shape whose byte size overflows u64 could never be stored.
    if matches!(&enc, Encoding::NdArray { shape: Some(_), .. }) && enc.fixed_size().is_none() {
        return None;
    }
    Some(enc)
}

/// One dimension as Python's `int()` reads it (surrounding whitespace, `+`, and `_` between
/// digits are allowed); it must be at least 1.
fn parse_dim(text: &str) -> Option<u64> {
    let text = text.trim();
    let digits = text.strip_prefix('+').unwrap_or(text);
    let valid = !digits.is_empty()
        && !digits.starts_with('_')
        && !digits.ends_with('_')
        && !digits.contains("__")
        && digits.bytes().all(|b| b.is_ascii_digit() || b == b'_');
    if !valid {
        return None;
    }
    let value: u64 = digits.replace('_', "").parse().ok()?;
    (value >= 1).then_some(value)
}
