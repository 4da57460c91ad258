//! One shard entry of `index.json`, read with every value kept (so a bad one is reported, not
//! thrown at the JSON parser): the known keys into typed, borrowing values ([`Lean`]), any
//! other key into a JSON map. [`super::check`] then checks it.

use std::borrow::Cow;
use std::fmt;

use serde::de::{self, DeserializeSeed, IgnoredAny, MapAccess, SeqAccess, Visitor};
use serde::Deserializer;
use serde_json::{Map, Value};

use super::file_value::{FileSeed, FileValue};
use super::lean::{Lean, ListSeed};

/// The file keys, in the order of the table's file columns.
pub(super) const FILE_KEYS: [&str; 4] = ["raw_data", "zip_data", "raw_meta", "zip_meta"];
/// The MDS column layout's keys, in the order they are checked.
pub(super) const COLUMN_KEYS: [&str; 3] = ["column_names", "column_encodings", "column_sizes"];

/// A list of strings as read.
pub(super) type Texts<'de> = Lean<Vec<Cow<'de, str>>>;

/// What an entry was: an object (its values then in the [`RawObject`] the seed filled), or
/// another kind of value (its Python type name, for the message).
#[derive(Clone, Copy)]
pub(super) enum RawEntry {
    Object,
    NotObject(&'static str),
}

/// The values of an entry object (`None`: the key is absent; a repeated key's last value).
#[derive(Default)]
pub(super) struct RawObject<'de> {
    pub format: Option<Lean<Cow<'de, str>>>,
    pub version: Option<Lean<u64>>,
    pub compression: Option<Lean<Option<Cow<'de, str>>>>,
    pub samples: Option<Lean<u64>>,
    pub hashes: Option<Texts<'de>>,
    pub size_limit: Option<Lean<Option<i64>>>,
    /// By [`FILE_KEYS`] position.
    pub files: [Option<FileValue<'de>>; 4],
    pub names: Option<Texts<'de>>,
    pub encodings: Option<Texts<'de>>,
    pub sizes: Option<Lean<Vec<Option<u64>>>>,
    /// Where each of [`COLUMN_KEYS`] first appeared among the keys kept in `rest`: the
    /// number of `rest` keys before it, and the order of column keys at the same place. A
    /// non-MDS entry keeps its column keys with its other keys, in the order written.
    pub column_places: [Option<(usize, usize)>; 3],
    /// Every other key, in order.
    pub rest: Map<String, Value>,
}

/// Reads one element of the `shards` array, an object's values into `slot` (one
/// [`RawObject`] for every entry: it is several hundred bytes, better filled in place than
/// moved out of the parser and into the checks); fails only on bad JSON.
pub(super) struct EntrySeed<'s, 'de> {
    pub slot: &'s mut RawObject<'de>,
}

impl<'de> DeserializeSeed<'de> for EntrySeed<'_, 'de> {
    type Value = RawEntry;
    fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<RawEntry, D::Error> {
        d.deserialize_any(self)
    }
}

macro_rules! not_object {
    ($($method:ident: $ty:ty => $kind:literal),*) => {$(
        fn $method<E: de::Error>(self, _: $ty) -> Result<Self::Value, E> {
            Ok(RawEntry::NotObject($kind))
        }
    )*};
}

impl<'de> Visitor<'de> for EntrySeed<'_, 'de> {
    type Value = RawEntry;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a shard entry")
    }

    not_object!(visit_bool: bool => "bool", visit_i64: i64 => "int", visit_u64: u64 => "int",
                visit_f64: f64 => "float", visit_str: &str => "str");

    fn visit_unit<E: de::Error>(self) -> Result<Self::Value, E> {
        Ok(RawEntry::NotObject("NoneType"))
    }

    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Self::Value, A::Error> {
        while seq.next_element::<IgnoredAny>()?.is_some() {}
        Ok(RawEntry::NotObject("list"))
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Self::Value, A::Error> {
        let o = self.slot;
        *o = RawObject::default();
        let mut columns_seen = 0;
        while let Some(key) = map.next_key_seed(KeySeed)? {
            match key {
                Key::Format => o.format = Some(map.next_value_seed(Lean::seed())?),
                Key::Version => o.version = Some(map.next_value_seed(Lean::seed())?),
                Key::Compression => o.compression = Some(map.next_value_seed(Lean::seed())?),
                Key::Samples => o.samples = Some(map.next_value_seed(Lean::seed())?),
                Key::Hashes => o.hashes = Some(map.next_value_seed(ListSeed::new())?),
                Key::SizeLimit => o.size_limit = Some(map.next_value_seed(Lean::seed())?),
                Key::File(i) => o.files[i] = Some(map.next_value_seed(FileSeed)?),
                Key::Column(i) => {
                    if o.column_places[i].is_none() {
                        o.column_places[i] = Some((o.rest.len(), columns_seen));
                        columns_seen += 1;
                    }
                    match i {
                        0 => o.names = Some(map.next_value_seed(ListSeed::new())?),
                        1 => o.encodings = Some(map.next_value_seed(ListSeed::new())?),
                        _ => o.sizes = Some(map.next_value_seed(ListSeed::new())?),
                    }
                }
                Key::Other(name) => {
                    o.rest.insert(name, map.next_value()?);
                }
            }
        }
        Ok(RawEntry::Object)
    }
}

/// A key of an entry: a known one (matched without allocating) or any other.
enum Key {
    Format,
    Version,
    Compression,
    Samples,
    Hashes,
    SizeLimit,
    /// By [`FILE_KEYS`] position.
    File(usize),
    /// By [`COLUMN_KEYS`] position.
    Column(usize),
    Other(String),
}

struct KeySeed;

impl<'de> DeserializeSeed<'de> for KeySeed {
    type Value = Key;
    fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<Key, D::Error> {
        d.deserialize_str(self)
    }
}

impl Visitor<'_> for KeySeed {
    type Value = Key;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a key")
    }

    fn visit_str<E: de::Error>(self, key: &str) -> Result<Key, E> {
        // By length first: a `match` on strings compares with each arm in turn, and an
        // entry's dozen keys are matched 650k times.
        let known = match key.len() {
            6 => [("format", Key::Format), ("hashes", Key::Hashes)]
                .into_iter()
                .find(|(k, _)| *k == key),
            7 => [("version", Key::Version), ("samples", Key::Samples)]
                .into_iter()
                .find(|(k, _)| *k == key),
            8 => FILE_KEYS
                .iter()
                .position(|k| *k == key)
                .map(|i| ("", Key::File(i))),
            10 if key == "size_limit" => Some(("", Key::SizeLimit)),
            11 if key == "compression" => Some(("", Key::Compression)),
            12 | 16 => COLUMN_KEYS
                .iter()
                .position(|k| *k == key)
                .map(|i| ("", Key::Column(i))),
            _ => None,
        };
        Ok(known.map_or_else(|| Key::Other(key.to_owned()), |(_, k)| k))
    }
}
