//! One shard entry of `index.json`: read with every value kept (so a bad one is reported,
//! not thrown at the JSON parser), then checked in the order the Python validator checked.

use std::fmt;

use serde::de::{self, DeserializeSeed, IgnoredAny, MapAccess, SeqAccess, Visitor};
use serde::Deserializer;
use serde_json::{Map, Value};

use super::file_value::{FileSeed, FileValue};
use super::paths::{is_contained, is_in_ledger_dir};
use super::repr::{py_repr, py_str};
use crate::compression::Compression;

/// The keys validated one by one; any other key is kept in the entry's `extra`.
const KEYS: [&str; 10] = [
    "format",
    "version",
    "compression",
    "samples",
    "raw_data",
    "zip_data",
    "raw_meta",
    "zip_meta",
    "hashes",
    "size_limit",
];
const FILE_KEYS: [&str; 4] = ["raw_data", "zip_data", "raw_meta", "zip_meta"];
const FORMATS: [&str; 5] = ["mds", "json", "csv", "tsv", "xsv"];

/// An entry as read: its known values by [`KEYS`] position, and every other key in order.
pub(super) enum RawEntry {
    Object(Box<KnownAndRest>),
    NotObject(&'static str),
}

/// The values of [`KEYS`] by position (the files' in the second array, by [`FILE_KEYS`]
/// position), and every other key in order.
pub(super) type KnownAndRest = (
    [Option<Value>; 10],
    [Option<FileValue>; 4],
    Map<String, Value>,
);

/// A file of an entry, checked.
pub(super) struct FileEntry {
    pub basename: String,
    pub bytes: u64,
    pub hashes: Vec<(String, String)>,
}

/// An entry's MDS column layout: names, encodings, and fixed sizes (`None`: variable).
#[derive(Debug, Clone, PartialEq, Eq, Hash, serde::Serialize, serde::Deserialize)]
pub struct Schema {
    pub names: Vec<String>,
    pub encodings: Vec<String>,
    pub sizes: Vec<Option<u64>>,
}

/// A checked entry.
pub(super) struct Entry {
    pub format: String,
    pub compression: Option<String>,
    pub samples: u64,
    pub hashes: Vec<String>,
    pub size_limit: Option<i64>,
    pub files: [Option<FileEntry>; 4],
    pub schema: Option<Schema>,
    pub extra: String,
}

/// Reads one element of the `shards` array into a [`RawEntry`]; fails only on bad JSON.
pub(super) struct EntrySeed;

impl<'de> DeserializeSeed<'de> for EntrySeed {
    type Value = RawEntry;
    fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<RawEntry, D::Error> {
        d.deserialize_any(EntryVisitor)
    }
}

struct EntryVisitor;

macro_rules! not_object {
    ($($method:ident: $ty:ty => $kind:literal),*) => {$(
        fn $method<E: de::Error>(self, _: $ty) -> Result<RawEntry, E> {
            Ok(RawEntry::NotObject($kind))
        }
    )*};
}

impl<'de> Visitor<'de> for EntryVisitor {
    type Value = RawEntry;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a shard entry")
    }

    not_object!(visit_bool: bool => "bool", visit_i64: i64 => "int", visit_u64: u64 => "int",
                visit_f64: f64 => "float", visit_str: &str => "str");

    fn visit_unit<E: de::Error>(self) -> Result<RawEntry, E> {
        Ok(RawEntry::NotObject("NoneType"))
    }

    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<RawEntry, A::Error> {
        while seq.next_element::<IgnoredAny>()?.is_some() {}
        Ok(RawEntry::NotObject("list"))
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<RawEntry, A::Error> {
        let mut known: [Option<Value>; 10] = Default::default();
        let mut files: [Option<FileValue>; 4] = Default::default();
        let mut rest = Map::new();
        while let Some(key) = map.next_key_seed(KeySeed)? {
            match key {
                Key::Known(i) => match FILE_KEYS.iter().position(|k| *k == KEYS[i]) {
                    Some(f) => files[f] = Some(map.next_value_seed(FileSeed)?),
                    None => known[i] = Some(map.next_value()?),
                },
                Key::Other(name) => {
                    rest.insert(name, map.next_value()?);
                }
            }
        }
        Ok(RawEntry::Object(Box::new((known, files, rest))))
    }
}

/// A key of an entry: one of [`KEYS`] (matched without allocating) or any other.
enum Key {
    Known(usize),
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
        Ok(match KEYS.iter().position(|k| *k == key) {
            Some(i) => Key::Known(i),
            None => Key::Other(key.to_owned()),
        })
    }
}

/// Checks one entry; the error is the whole message, naming `place` (file and shard).
pub(super) fn check(raw: RawEntry, place: &str) -> Result<Entry, String> {
    let (mut known, raw_files, mut rest) = match raw {
        RawEntry::Object(parts) => *parts,
        RawEntry::NotObject(kind) => {
            return Err(format!(
                "Invalid shard entry in {place}: TypeError('a {kind} is not a shard entry')"
            ))
        }
    };
    let mut take = |key: &str| known[KEYS.iter().position(|k| *k == key).unwrap()].take();
    let missing = |key: &str| format!("Invalid shard entry in {place}: KeyError({})", py_str(key));
    let format = match take("format").ok_or_else(|| missing("format"))? {
        Value::String(s) if FORMATS.contains(&s.as_str()) => s,
        other => {
            return Err(format!(
                "Unknown shard format {} in {place}.",
                py_repr(&other)
            ))
        }
    };
    let version = take("version").ok_or_else(|| missing("version"))?;
    if version.as_f64() != Some(2.0) || version.is_boolean() {
        return Err(format!(
            "Unsupported streaming data version: {}. Expected version 2. ({place})",
            py_display(&version)
        ));
    }
    let compression = match take("compression").ok_or_else(|| missing("compression"))? {
        Value::Null => None,
        Value::String(s) if Compression::parse(&s).is_ok() => Some(s),
        other => {
            return Err(format!(
                "Unknown compression {} in {place}.",
                py_repr(&other)
            ))
        }
    };
    let samples_value = take("samples").ok_or_else(|| missing("samples"))?;
    let samples = count(&samples_value).ok_or_else(|| {
        format!(
            "Invalid sample count {} in {place}.",
            py_repr(&samples_value)
        )
    })?;
    let mut files: [Option<FileEntry>; 4] = Default::default();
    for ((slot, value), key) in files.iter_mut().zip(raw_files).zip(FILE_KEYS) {
        *slot = file(value, key, place)?;
    }
    let Some(raw) = &files[0] else {
        return Err(format!("Missing raw_data in {place}."));
    };
    // An MDS shard holds a u32 count and n + 1 u32 offsets: a count its size cannot hold is
    // a lie, and would size the epoch's arrays by it.
    if format == "mds" && 4 * (u128::from(samples) + 2) > u128::from(raw.bytes) {
        return Err(format!(
            "{samples} samples cannot fit in {} bytes of {} in {place}.",
            raw.bytes, raw.basename
        ));
    }
    let hashes = names_list(take("hashes").unwrap_or(Value::Array(Vec::new())))
        .ok_or_else(|| format!("Invalid shard entry in {place}: hashes is not a list of names"))?;
    let size_limit = match take("size_limit").unwrap_or(Value::Null) {
        Value::Null => None,
        Value::Number(n) if n.as_i64().is_some() => n.as_i64(),
        other => {
            return Err(format!(
                "Invalid size_limit {} in {place}.",
                py_repr(&other)
            ))
        }
    };
    let schema = if format == "mds" {
        Some(schema(&mut rest, place)?)
    } else {
        None
    };
    let extra = if rest.is_empty() {
        String::new()
    } else {
        Value::Object(rest).to_string()
    };
    Ok(Entry {
        format,
        compression,
        samples,
        hashes,
        size_limit,
        files,
        schema,
        extra,
    })
}

fn file(value: Option<FileValue>, key: &str, place: &str) -> Result<Option<FileEntry>, String> {
    let (basename, size, hashes) = match value {
        None | Some(FileValue::Other(Value::Null)) => return Ok(None),
        Some(FileValue::Object {
            basename,
            bytes,
            hashes,
        }) => (basename, bytes, hashes),
        Some(FileValue::Other(_)) => {
            return Err(format!(
                "Invalid shard entry in {place}: TypeError('{key} is not an object')"
            ))
        }
    };
    let missing = |k: &str| format!("Invalid shard entry in {place}: KeyError({})", py_str(k));
    let basename = match basename.ok_or_else(|| missing("basename"))? {
        Value::String(s) if is_in_ledger_dir(&s) => {
            return Err(format!(
                "Shard file name {} points into the cache's own .streamx/ directory in \
                 {place}.",
                py_str(&s)
            ))
        }
        Value::String(s) if is_contained(&s) => s,
        other => {
            return Err(format!(
                "Shard file name {} escapes the dataset directory in {place}.",
                py_repr(&other)
            ))
        }
    };
    let size = size.ok_or_else(|| missing("bytes"))?;
    let bytes = count(&size).ok_or_else(|| {
        format!(
            "Invalid size {} of {} in {place}.",
            py_repr(&size),
            py_str(&basename)
        )
    })?;
    let hashes = match hashes {
        None => Vec::new(),
        Some(v) if is_falsy(&v) => Vec::new(),
        Some(Value::Object(map)) if map.values().all(Value::is_string) => map
            .into_iter()
            .map(|(k, v)| (k, v.as_str().unwrap_or_default().to_owned()))
            .collect(),
        Some(other) => {
            return Err(format!(
                "Invalid hashes {} of {} in {place}.",
                py_repr(&other),
                py_str(&basename)
            ))
        }
    };
    Ok(Some(FileEntry {
        basename,
        bytes,
        hashes,
    }))
}

fn schema(rest: &mut Map<String, Value>, place: &str) -> Result<Schema, String> {
    let mut list = |key: &str| match rest.shift_remove(key) {
        Some(Value::Array(items)) => Ok(items),
        Some(_) => Err(format!(
            "Invalid shard entry in {place}: TypeError('{key} is not a list')"
        )),
        None => Err(format!(
            "Invalid shard entry in {place}: KeyError({})",
            py_str(key)
        )),
    };
    let (names, encodings, sizes) = (
        list("column_names")?,
        list("column_encodings")?,
        list("column_sizes")?,
    );
    if names.len() != encodings.len() || names.len() != sizes.len() {
        return Err(format!(
            "Column names, encodings and sizes differ in length in {place}."
        ));
    }
    let texts: Vec<&str> = names.iter().filter_map(Value::as_str).collect();
    let mut sorted = texts.clone();
    sorted.sort_unstable();
    sorted.dedup();
    if texts.len() != names.len() || sorted.len() != names.len() {
        return Err(format!(
            "Column names {} are not distinct strings in {place}: a sample is a dict, so a \
             repeated name would lose a column.",
            py_repr(&Value::Array(names))
        ));
    }
    let fixed: Vec<Option<u64>> = sizes.iter().map(count).collect();
    if sizes
        .iter()
        .zip(&fixed)
        .any(|(v, c)| !v.is_null() && c.is_none())
    {
        return Err(format!(
            "Invalid column sizes {} in {place}.",
            py_repr(&Value::Array(sizes))
        ));
    }
    let mut kinds = Vec::with_capacity(encodings.len());
    for (name, encoding) in texts.iter().zip(&encodings) {
        match encoding.as_str() {
            Some(e) => kinds.push(e.to_owned()),
            None => {
                return Err(format!(
                    "Column {name} has an unknown encoding {} in {place}.",
                    py_repr(encoding)
                ))
            }
        }
    }
    let names = texts.into_iter().map(str::to_owned).collect();
    Ok(Schema {
        names,
        encodings: kinds,
        sizes: fixed,
    })
}

/// A JSON integer >= 0 (`true` is an `int` in Python, but not in an index).
fn count(value: &Value) -> Option<u64> {
    value.as_u64()
}

/// Python's truth value of a JSON value, for `obj.get("hashes") or {}`.
fn is_falsy(value: &Value) -> bool {
    match value {
        Value::Null => true,
        Value::Bool(b) => !b,
        Value::Number(n) => n.as_f64() == Some(0.0),
        Value::String(s) => s.is_empty(),
        Value::Array(a) => a.is_empty(),
        Value::Object(o) => o.is_empty(),
    }
}

fn names_list(value: Value) -> Option<Vec<String>> {
    match value {
        Value::Array(items) => items
            .into_iter()
            .map(|v| match v {
                Value::String(s) => Some(s),
                _ => None,
            })
            .collect(),
        _ => None,
    }
}

/// `str()` of the Python value: strings bare, everything else as its repr.
pub(super) fn py_display(value: &Value) -> String {
    match value {
        Value::String(s) => s.clone(),
        other => py_repr(other),
    }
}
