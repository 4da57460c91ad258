//! A file of a shard entry (`raw_data`, `zip_data`...), read without building a JSON map: of
//! an object only `basename`, `bytes` and `hashes` are kept (the checks read nothing else),
//! so the two files of each of 650k entries cost no map and no key string.

use std::fmt;

use serde::de::{self, DeserializeSeed, IgnoredAny, MapAccess, SeqAccess, Visitor};
use serde::{Deserialize, Deserializer};
use serde_json::Value;

/// A file key's value as read.
pub(super) enum FileValue {
    /// An object: the values of its keys that the checks read (the last, if repeated).
    Object {
        basename: Option<Value>,
        bytes: Option<Value>,
        hashes: Option<Value>,
    },
    /// Anything else (`null`: the entry has no such file).
    Other(Value),
}

/// Reads one file key's value into a [`FileValue`].
pub(super) struct FileSeed;

impl<'de> DeserializeSeed<'de> for FileSeed {
    type Value = FileValue;
    fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<FileValue, D::Error> {
        d.deserialize_any(self)
    }
}

macro_rules! other {
    ($($method:ident: $ty:ty),*) => {$(
        fn $method<E: de::Error>(self, v: $ty) -> Result<FileValue, E> {
            Ok(FileValue::Other(Value::from(v)))
        }
    )*};
}

impl<'de> Visitor<'de> for FileSeed {
    type Value = FileValue;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a shard file")
    }

    other!(visit_bool: bool, visit_i64: i64, visit_u64: u64, visit_f64: f64, visit_str: &str);

    fn visit_unit<E: de::Error>(self) -> Result<FileValue, E> {
        Ok(FileValue::Other(Value::Null))
    }

    fn visit_seq<A: SeqAccess<'de>>(self, seq: A) -> Result<FileValue, A::Error> {
        let items = Vec::<Value>::deserialize(de::value::SeqAccessDeserializer::new(seq))?;
        Ok(FileValue::Other(Value::Array(items)))
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<FileValue, A::Error> {
        let (mut basename, mut bytes, mut hashes) = (None, None, None);
        while let Some(key) = map.next_key_seed(FileKey)? {
            match key {
                Some(0) => basename = Some(map.next_value()?),
                Some(1) => bytes = Some(map.next_value()?),
                Some(_) => hashes = Some(map.next_value()?),
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
