//! A file of a shard entry (`raw_data`, `zip_data`...), read without building a JSON map: of
//! an object only `basename`, `bytes` and `hashes` are kept (the checks read nothing else),
//! so the two files of each of 650k entries cost no map and no key string, and the name is
//! borrowed from the index.

use std::borrow::Cow;
use std::fmt;

use serde::de::{self, DeserializeSeed, IgnoredAny, MapAccess, SeqAccess, Visitor};
use serde::{Deserialize, Deserializer};
use serde_json::Value;

use super::lean::{Lean, Pairs, PairsSeed};

/// A file key's value as read.
pub(super) enum FileValue<'de> {
    /// An object: the values of its keys that the checks read (the last, if repeated).
    Object {
        basename: Option<Lean<Cow<'de, str>>>,
        bytes: Option<Lean<u64>>,
        hashes: Option<Lean<Pairs<'de>>>,
    },
    /// Anything else (`null`: the entry has no such file), boxed as [`Lean`]'s is.
    Other(Box<Value>),
}

/// Reads one file key's value into a [`FileValue`].
pub(super) struct FileSeed;

impl<'de> DeserializeSeed<'de> for FileSeed {
    type Value = FileValue<'de>;
    fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<FileValue<'de>, D::Error> {
        d.deserialize_any(self)
    }
}

macro_rules! other {
    ($($method:ident: $ty:ty),*) => {$(
        fn $method<E: de::Error>(self, v: $ty) -> Result<Self::Value, E> {
            Ok(FileValue::Other(Box::new(Value::from(v))))
        }
    )*};
}

impl<'de> Visitor<'de> for FileSeed {
    type Value = FileValue<'de>;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a shard file")
    }

    other!(visit_bool: bool, visit_i64: i64, visit_u64: u64, visit_f64: f64, visit_str: &str);

    fn visit_unit<E: de::Error>(self) -> Result<Self::Value, E> {
        Ok(FileValue::Other(Box::new(Value::Null)))
    }

    fn visit_seq<A: SeqAccess<'de>>(self, seq: A) -> Result<Self::Value, A::Error> {
        let items = Vec::<Value>::deserialize(de::value::SeqAccessDeserializer::new(seq))?;
        Ok(FileValue::Other(Box::new(Value::Array(items))))
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Self::Value, A::Error> {
        let (mut basename, mut bytes, mut hashes) = (None, None, None);
        while let Some(key) = map.next_key_seed(FileKey)? {
            match key {
                Some(0) => basename = Some(map.next_value_seed(Lean::seed())?),
                Some(1) => bytes = Some(map.next_value_seed(Lean::seed())?),
                Some(_) => hashes = Some(map.next_value_seed(PairsSeed)?),
                None => {
                    map.next_value::<IgnoredAny>()?;
                }
            }
        }
        Ok(FileValue::Object {
            basename,
            bytes,
            hashes,
        })
    }
}

/// A key of a file object: `basename`, `bytes`, `hashes` (0, 1, 2), or another (None).
struct FileKey;

impl<'de> DeserializeSeed<'de> for FileKey {
    type Value = Option<u8>;
    fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<Option<u8>, D::Error> {
        d.deserialize_str(self)
    }
}

impl Visitor<'_> for FileKey {
    type Value = Option<u8>;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a key")
    }

    fn visit_str<E: de::Error>(self, key: &str) -> Result<Option<u8>, E> {
        Ok(match key {
            "basename" => Some(0),
            "bytes" => Some(1),
            "hashes" => Some(2),
            _ => None,
        })
    }
}
