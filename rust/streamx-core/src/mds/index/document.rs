//! The whole `index.json`: `{"version": 2, "shards": [...]}`, read in one streaming pass.
//! Each entry is checked and folded into the table as soon as it is read, so the document is
//! never held whole; after the first bad entry the rest are only skipped over.

use std::fmt;

use serde::de::{self, DeserializeSeed, IgnoredAny, MapAccess, SeqAccess, Visitor};
use serde::Deserializer;
use serde_json::Value;

use super::check::check;
use super::entry::{EntrySeed, RawObject};
use super::table::TableBuilder;

/// What the top level of the document held.
#[derive(Default)]
pub(super) struct Document {
    pub is_object: bool,
    pub version: Option<Value>,
    /// `None` while no `shards` list was seen.
    pub shards: Option<Shards>,
    pub shards_not_list: bool,
}

/// The entries read so far, and the first entry that failed its checks.
pub(super) struct Shards {
    pub table: TableBuilder,
    pub first_error: Option<String>,
}

/// Reads the document; `path` names the file in entry errors.
pub(super) struct DocumentSeed<'p> {
    pub path: &'p str,
}

impl<'de> DeserializeSeed<'de> for DocumentSeed<'_> {
    type Value = Document;
    fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<Document, D::Error> {
        d.deserialize_any(self)
    }
}

impl<'de> Visitor<'de> for DocumentSeed<'_> {
    type Value = Document;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("an index document")
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Document, A::Error> {
        let mut doc = Document {
            is_object: true,
            ..Document::default()
        };
        while let Some(key) = map.next_key::<String>()? {
            match key.as_str() {
                "version" => doc.version = Some(map.next_value()?),
                "shards" => {
                    doc.shards = map.next_value_seed(ShardsSeed { path: self.path })?;
                    doc.shards_not_list = doc.shards.is_none();
                }
                _ => {
                    map.next_value::<IgnoredAny>()?;
                }
            }
        }
        Ok(doc)
    }

    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Document, A::Error> {
        while seq.next_element::<IgnoredAny>()?.is_some() {}
        Ok(Document::default())
    }

    fn visit_bool<E: de::Error>(self, _: bool) -> Result<Document, E> {
        Ok(Document::default())
    }
    fn visit_i64<E: de::Error>(self, _: i64) -> Result<Document, E> {
        Ok(Document::default())
    }
    fn visit_u64<E: de::Error>(self, _: u64) -> Result<Document, E> {
        Ok(Document::default())
    }
    fn visit_f64<E: de::Error>(self, _: f64) -> Result<Document, E> {
        Ok(Document::default())
    }
    fn visit_str<E: de::Error>(self, _: &str) -> Result<Document, E> {
        Ok(Document::default())
    }
    fn visit_unit<E: de::Error>(self) -> Result<Document, E> {
        Ok(Document::default())
    }
}

/// Where an entry is, as errors name it ("PATH, shard N"): formatted only for an error.
pub(super) struct Place<'p> {
    pub path: &'p str,
    pub shard: usize,
}

impl fmt::Display for Place<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}, shard {}", self.path, self.shard)
    }
}

/// Reads the `shards` value: `Some` for a list, `None` for anything else.
struct ShardsSeed<'p> {
    path: &'p str,
}

impl<'de> DeserializeSeed<'de> for ShardsSeed<'_> {
    type Value = Option<Shards>;
    fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<Option<Shards>, D::Error> {
        d.deserialize_any(self)
    }
}

impl<'de> Visitor<'de> for ShardsSeed<'_> {
    type Value = Option<Shards>;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a list of shard entries")
    }

    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Option<Shards>, A::Error> {
        let mut shards = Shards {
            table: TableBuilder::default(),
            first_error: None,
        };
        let mut number = 0usize;
        let mut slot = RawObject::default();
        while shards.first_error.is_none() {
            let Some(raw) = seq.next_element_seed(EntrySeed { slot: &mut slot })? else {
                return Ok(Some(shards));
            };
            let place = Place {
                path: self.path,
                shard: number,
            };
            match check(raw, &mut slot, &place) {
                Ok(entry) => shards.table.push(&entry),
                Err(message) => shards.first_error = Some(message),
            }
            number += 1;
        }
        while seq.next_element::<IgnoredAny>()?.is_some() {}
        Ok(Some(shards))
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Option<Shards>, A::Error> {
        while map.next_entry::<IgnoredAny, IgnoredAny>()?.is_some() {}
        Ok(None)
    }
    fn visit_bool<E: de::Error>(self, _: bool) -> Result<Option<Shards>, E> {
        Ok(None)
    }
    fn visit_i64<E: de::Error>(self, _: i64) -> Result<Option<Shards>, E> {
        Ok(None)
    }
    fn visit_u64<E: de::Error>(self, _: u64) -> Result<Option<Shards>, E> {
        Ok(None)
    }
    fn visit_f64<E: de::Error>(self, _: f64) -> Result<Option<Shards>, E> {
        Ok(None)
    }
    fn visit_str<E: de::Error>(self, _: &str) -> Result<Option<Shards>, E> {
        Ok(None)
    }
    fn visit_unit<E: de::Error>(self) -> Result<Option<Shards>, E> {
        Ok(None)
    }
}
