//! The checks of one shard entry as read ([`RawEntry`]), in the order the Python validator
//! made them and with its messages; a checked [`Entry`] still borrows its strings from the
//! index, and the table copies only the values it has not seen.

use std::borrow::Cow;
use std::fmt::Display;

use serde_json::{Map, Value};

use super::entry::{RawEntry, RawObject, Texts, COLUMN_KEYS, FILE_KEYS};
use super::file_value::FileValue;
use super::lean::Lean;
use super::paths::{is_contained, is_in_ledger_dir};
use super::repr::{py_repr, py_str};
use crate::compression::Compression;

const FORMATS: [&str; 5] = ["mds", "json", "csv", "tsv", "xsv"];

/// A file of an entry, checked.
pub(super) struct FileEntry<'de> {
    pub basename: Cow<'de, str>,
    pub bytes: u64,
    pub hashes: Vec<(Cow<'de, str>, Cow<'de, str>)>,
}

/// An entry's MDS column layout: names, encodings, and fixed sizes (`None`: variable).
#[derive(Debug, Clone, PartialEq, Eq, Hash, serde::Serialize, serde::Deserialize)]
pub struct Schema {
    pub names: Vec<String>,
    pub encodings: Vec<String>,
    pub sizes: Vec<Option<u64>>,
}

/// A checked column layout, its strings borrowed.
pub(super) struct SchemaView<'de> {
    pub names: Vec<Cow<'de, str>>,
    pub encodings: Vec<Cow<'de, str>>,
    pub sizes: Vec<Option<u64>>,
}

impl SchemaView<'_> {
    /// Whether `schema` is this layout.
    pub fn is(&self, schema: &Schema) -> bool {
        self.sizes == schema.sizes
            && same_texts(&schema.names, &self.names)
            && same_texts(&schema.encodings, &self.encodings)
    }

    /// The layout, owned.
    pub fn to_schema(&self) -> Schema {
        let owned = |v: &[Cow<'_, str>]| v.iter().map(ToString::to_string).collect();
        Schema {
            names: owned(&self.names),
            encodings: owned(&self.encodings),
            sizes: self.sizes.clone(),
        }
    }
}

/// Whether owned and borrowed string lists are equal.
pub(super) fn same_texts(owned: &[String], texts: &[Cow<'_, str>]) -> bool {
    owned.len() == texts.len() && owned.iter().zip(texts).all(|(a, b)| a == b)
}

/// A checked entry.
pub(super) struct Entry<'de> {
    pub format: Cow<'de, str>,
    pub compression: Option<Cow<'de, str>>,
    pub samples: u64,
    pub hashes: Vec<Cow<'de, str>>,
    pub size_limit: Option<i64>,
    pub files: [Option<FileEntry<'de>>; 4],
    pub schema: Option<SchemaView<'de>>,
    pub extra: String,
}

fn missing(key: &str, place: &impl Display) -> String {
    format!("Invalid shard entry in {place}: KeyError({})", py_str(key))
}

/// Checks one entry; the error is the whole message, naming `place` (file and shard).
/// An object's values are taken from `o`.
pub(super) fn check<'de>(
    raw: RawEntry,
    o: &mut RawObject<'de>,
    place: &impl Display,
) -> Result<Entry<'de>, String> {
    match raw {
        RawEntry::Object => {}
        RawEntry::NotObject(kind) => {
            return Err(format!(
                "Invalid shard entry in {place}: TypeError('a {kind} is not a shard entry')"
            ))
        }
    }
    let format = match o.format.take().ok_or_else(|| missing("format", place))? {
        Lean::Typed(s) if FORMATS.contains(&s.as_ref()) => s,
        other => {
            return Err(format!(
                "Unknown shard format {} in {place}.",
                py_repr(&other.into_value())
            ))
        }
    };
    let version = o.version.take().ok_or_else(|| missing("version", place))?;
    if !matches!(version, Lean::Typed(2)) {
        let version = version.into_value();
        if version.as_f64() != Some(2.0) || version.is_boolean() {
            return Err(format!(
                "Unsupported streaming data version: {}. Expected version 2. ({place})",
                py_display(&version)
            ));
        }
    }
    let compression = match o
        .compression
        .take()
        .ok_or_else(|| missing("compression", place))?
    {
        Lean::Typed(None) => None,
        Lean::Typed(Some(s)) if Compression::parse(&s).is_ok() => Some(s),
        other => {
            return Err(format!(
                "Unknown compression {} in {place}.",
                py_repr(&other.into_value())
            ))
        }
    };
    let samples = match o.samples.take().ok_or_else(|| missing("samples", place))? {
        Lean::Typed(n) => n,
        Lean::Other(odd) => {
            return Err(format!(
                "Invalid sample count {} in {place}.",
                py_repr(&odd)
            ))
        }
    };
    let mut files: [Option<FileEntry<'de>>; 4] = Default::default();
    for ((slot, value), key) in files.iter_mut().zip(o.files.iter_mut()).zip(FILE_KEYS) {
        *slot = file(value.take(), key, place)?;
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
    let hashes = match o.hashes.take() {
        None => Vec::new(),
        Some(Lean::Typed(names)) => names,
        Some(Lean::Other(_)) => {
            return Err(format!(
                "Invalid shard entry in {place}: hashes is not a list of names"
            ))
        }
    };
    let size_limit = match o.size_limit.take() {
        None => None,
        Some(Lean::Typed(limit)) => limit,
        Some(Lean::Other(odd)) => {
            return Err(format!("Invalid size_limit {} in {place}.", py_repr(&odd)))
        }
    };
    let (schema, extra) = if format == "mds" {
        (
            Some(schema(o, place)?),
            object_text(std::mem::take(&mut o.rest)),
        )
    } else {
        (None, object_text(rest_with_columns(o)))
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

/// The JSON text of an entry's other keys (`""`: none).
fn object_text(rest: Map<String, Value>) -> String {
    if rest.is_empty() {
        String::new()
    } else {
        Value::Object(rest).to_string()
    }
}

/// The other keys of a non-MDS entry with its column keys put back where they were written.
fn rest_with_columns(o: &mut RawObject<'_>) -> Map<String, Value> {
    let values = [
        o.names.take().map(Lean::into_value),
        o.encodings.take().map(Lean::into_value),
        o.sizes.take().map(Lean::into_value),
    ];
    let rest = std::mem::take(&mut o.rest);
    let mut columns: Vec<((usize, usize), &str, Value)> = o
        .column_places
        .into_iter()
        .zip(COLUMN_KEYS)
        .zip(values)
        .filter_map(|((at, key), value)| Some((at?, key, value?)))
        .collect();
    if columns.is_empty() {
        return rest;
    }
    columns.sort_by_key(|c| c.0);
    let mut columns = columns.into_iter().peekable();
    let mut map = Map::new();
    for (i, (key, value)) in rest.into_iter().enumerate() {
        while let Some((_, k, v)) = columns.next_if(|c| c.0 .0 <= i) {
            map.insert(k.to_owned(), v);
        }
        map.insert(key, value);
    }
    for (_, k, v) in columns {
        map.insert(k.to_owned(), v);
    }
    map
}

fn file<'de>(
    value: Option<FileValue<'de>>,
    key: &str,
    place: &impl Display,
) -> Result<Option<FileEntry<'de>>, String> {
    let (basename, size, hashes) = match value {
        None => return Ok(None),
        Some(FileValue::Other(v)) if v.is_null() => return Ok(None),
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
    let basename = match basename.ok_or_else(|| missing("basename", place))? {
        Lean::Typed(s) if is_in_ledger_dir(&s) => {
            return Err(format!(
                "Shard file name {} points into the cache's own .streamx/ directory in \
                 {place}.",
                py_str(&s)
            ))
        }
        Lean::Typed(s) if is_contained(&s) => s,
        other => {
            return Err(format!(
                "Shard file name {} escapes the dataset directory in {place}.",
                py_repr(&other.into_value())
            ))
        }
    };
    let bytes = match size.ok_or_else(|| missing("bytes", place))? {
        Lean::Typed(n) => n,
        Lean::Other(odd) => {
            return Err(format!(
                "Invalid size {} of {} in {place}.",
                py_repr(&odd),
                py_str(&basename)
            ))
        }
    };
    let hashes = match hashes {
        None => Vec::new(),
        Some(Lean::Typed(pairs)) => pairs.0,
        Some(Lean::Other(v)) if is_falsy(&v) => Vec::new(),
        Some(Lean::Other(other)) => {
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

/// A column list: `Ok` for a list (its elements typed, or as read when one is not).
fn column_list<T>(
    value: Option<Lean<Vec<T>>>,
    key: &str,
    place: &impl Display,
) -> Result<Lean<Vec<T>>, String> {
    match value {
        Some(Lean::Other(v)) if !v.is_array() => Err(format!(
            "Invalid shard entry in {place}: TypeError('{key} is not a list')"
        )),
        Some(list) => Ok(list),
        None => Err(missing(key, place)),
    }
}

fn list_len<T>(list: &Lean<Vec<T>>) -> usize {
    match list {
        Lean::Typed(items) => items.len(),
        Lean::Other(v) => v.as_array().map_or(0, Vec::len),
    }
}

fn schema<'de>(o: &mut RawObject<'de>, place: &impl Display) -> Result<SchemaView<'de>, String> {
    let names: Texts<'de> = column_list(o.names.take(), COLUMN_KEYS[0], place)?;
    let encodings: Texts<'de> = column_list(o.encodings.take(), COLUMN_KEYS[1], place)?;
    let sizes = column_list(o.sizes.take(), COLUMN_KEYS[2], place)?;
    let n = list_len(&names);
    if n != list_len(&encodings) || n != list_len(&sizes) {
        return Err(format!(
            "Column names, encodings and sizes differ in length in {place}."
        ));
    }
    let names = match names {
        Lean::Typed(names) if distinct(&names) => names,
        other @ (Lean::Typed(_) | Lean::Other(_)) => {
            return Err(format!(
                "Column names {} are not distinct strings in {place}: a sample is a dict, so \
                 a repeated name would lose a column.",
                py_repr(&other.into_value())
            ))
        }
    };
    let sizes = match sizes {
        Lean::Typed(sizes) => sizes,
        other @ Lean::Other(_) => {
            return Err(format!(
                "Invalid column sizes {} in {place}.",
                py_repr(&other.into_value())
            ))
        }
    };
    let encodings = match encodings {
        Lean::Typed(encodings) => encodings,
        Lean::Other(list) => {
            // A list with an element that is not a string: name the first.
            let items = list.as_array().map_or(&[][..], Vec::as_slice);
            let (name, odd) = names
                .iter()
                .zip(items)
                .find(|(_, e)| !e.is_string())
                .map_or(("", &Value::Null), |(n, e)| (n.as_ref(), e));
            return Err(format!(
                "Column {name} has an unknown encoding {} in {place}.",
                py_repr(odd)
            ));
        }
    };
    Ok(SchemaView {
        names,
        encodings,
        sizes,
    })
}

/// Whether no two names are equal (pairwise for the few columns of a layout, else sorted).
fn distinct(names: &[Cow<'_, str>]) -> bool {
    if names.len() <= 16 {
        return names
            .iter()
            .enumerate()
            .all(|(i, a)| names[i + 1..].iter().all(|b| a != b));
    }
    let mut sorted: Vec<&str> = names.iter().map(AsRef::as_ref).collect();
    sorted.sort_unstable();
    sorted.windows(2).all(|w| w[0] != w[1])
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

/// `str()` of the Python value: strings bare, everything else as its repr.
pub(super) fn py_display(value: &Value) -> String {
    match value {
        Value::String(s) => s.clone(),
        other => py_repr(other),
    }
}
