//! Entry values read without a JSON tree: a string is borrowed from the index when it holds
//! no escape (a `Cow`), lists and objects of strings become `Vec`s of them, and a value of
//! any other shape is kept as a `Value` so that the checks can show it as it was written.
//!
//! 650k entries repeat the same few strings (format, compression, column layout); reading
//! them as `Value`s cost an allocation and a free per string, most of the parse's time.

use std::borrow::Cow;
use std::fmt;
use std::marker::PhantomData;

use serde::de::{self, DeserializeSeed, MapAccess, SeqAccess, Visitor};
use serde::{Deserialize, Deserializer};
use serde_json::{Map, Value};

/// A value of the expected shape, or whatever else was there.
pub(super) enum Lean<T> {
    Typed(T),
    /// Boxed: a `Value` is several times the size of the typed forms, and entries are moved.
    Other(Box<Value>),
}

/// A shape that can be written back as the JSON value it was read from.
pub(super) trait IntoValue {
    fn into_value(self) -> Value;
}

impl<T: IntoValue> Lean<T> {
    /// The value as read, as a JSON value (for error messages and `extra`).
    pub fn into_value(self) -> Value {
        match self {
            Lean::Typed(t) => t.into_value(),
            Lean::Other(v) => *v,
        }
    }
}

/// Wraps a value of another shape.
fn other<T>(value: Value) -> Lean<T> {
    Lean::Other(Box::new(value))
}

impl IntoValue for Cow<'_, str> {
    fn into_value(self) -> Value {
        Value::String(self.into_owned())
    }
}

impl<T: IntoValue> IntoValue for Option<T> {
    fn into_value(self) -> Value {
        self.map_or(Value::Null, IntoValue::into_value)
    }
}

impl IntoValue for u64 {
    fn into_value(self) -> Value {
        Value::from(self)
    }
}

impl<T: IntoValue> IntoValue for Vec<T> {
    fn into_value(self) -> Value {
        Value::Array(self.into_iter().map(IntoValue::into_value).collect())
    }
}

/// A JSON object of strings, its pairs in the order their keys first appeared.
#[derive(Default)]
pub(super) struct Pairs<'de>(pub Vec<(Cow<'de, str>, Cow<'de, str>)>);

impl Pairs<'_> {
    fn into_map(self) -> Map<String, Value> {
        self.0
            .into_iter()
            .map(|(k, v)| (k.into_owned(), Value::String(v.into_owned())))
            .collect()
    }
}

impl IntoValue for Pairs<'_> {
    fn into_value(self) -> Value {
        Value::Object(self.into_map())
    }
}

/// A scalar shape: which JSON scalars it accepts.
pub(super) trait Scalar<'de>: Sized + IntoValue {
    fn from_str(_: Cow<'de, str>) -> Option<Self> {
        None
    }
    fn from_u64(_: u64) -> Option<Self> {
        None
    }
    fn from_i64(_: i64) -> Option<Self> {
        None
    }
    fn from_null() -> Option<Self> {
        None
    }
}

/// A string.
impl<'de> Scalar<'de> for Cow<'de, str> {
    fn from_str(s: Cow<'de, str>) -> Option<Self> {
        Some(s)
    }
}

/// A string or `null`.
impl<'de> Scalar<'de> for Option<Cow<'de, str>> {
    fn from_str(s: Cow<'de, str>) -> Option<Self> {
        Some(Some(s))
    }
    fn from_null() -> Option<Self> {
        Some(None)
    }
}

/// An integer >= 0 or `null` (a column size).
impl Scalar<'_> for Option<u64> {
    fn from_u64(n: u64) -> Option<Self> {
        Some(Some(n))
    }
    fn from_null() -> Option<Self> {
        Some(None)
    }
}

/// An integer >= 0.
impl Scalar<'_> for u64 {
    fn from_u64(n: u64) -> Option<Self> {
        Some(n)
    }
}

/// An integer that fits an `i64`, or `null` (a size limit).
impl Scalar<'_> for Option<i64> {
    fn from_u64(n: u64) -> Option<Self> {
        i64::try_from(n).ok().map(Some)
    }
    fn from_i64(n: i64) -> Option<Self> {
        Some(Some(n))
    }
    fn from_null() -> Option<Self> {
        Some(None)
    }
}

impl IntoValue for i64 {
    fn into_value(self) -> Value {
        Value::from(self)
    }
}

/// Reads one value as `Lean<T>`: `Lean::<T>::seed()`.
pub(super) struct LeanSeed<T>(PhantomData<T>);

impl<T> Lean<T> {
    pub fn seed() -> LeanSeed<T> {
        LeanSeed(PhantomData)
    }
}

/// The value of a non-matching scalar, as `serde_json` would have read it.
macro_rules! other_scalars {
    ($($method:ident: $ty:ty),*) => {$(
        fn $method<E: de::Error>(self, v: $ty) -> Result<Self::Value, E> {
            Ok(other(Value::from(v)))
        }
    )*};
}

/// A list or an object where a scalar was expected, read whole as a `Value`.
macro_rules! other_containers {
    () => {
        fn visit_seq<A: SeqAccess<'de>>(self, seq: A) -> Result<Self::Value, A::Error> {
            Value::deserialize(de::value::SeqAccessDeserializer::new(seq)).map(other)
        }
        fn visit_map<A: MapAccess<'de>>(self, map: A) -> Result<Self::Value, A::Error> {
            Value::deserialize(de::value::MapAccessDeserializer::new(map)).map(other)
        }
    };
}

impl<'de, T: Scalar<'de>> DeserializeSeed<'de> for LeanSeed<T> {
    type Value = Lean<T>;
    fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<Lean<T>, D::Error> {
        d.deserialize_any(self)
    }
}

impl<'de, T: Scalar<'de>> Visitor<'de> for LeanSeed<T> {
    type Value = Lean<T>;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a JSON value")
    }

    other_scalars!(visit_bool: bool, visit_f64: f64);
    other_containers!();

    fn visit_i64<E: de::Error>(self, n: i64) -> Result<Lean<T>, E> {
        Ok(T::from_i64(n).map_or(other(Value::from(n)), Lean::Typed))
    }

    fn visit_borrowed_str<E: de::Error>(self, s: &'de str) -> Result<Lean<T>, E> {
        Ok(T::from_str(Cow::Borrowed(s)).map_or_else(|| other(Value::from(s)), Lean::Typed))
    }
    fn visit_str<E: de::Error>(self, s: &str) -> Result<Lean<T>, E> {
        let owned = || Cow::Owned(s.to_owned());
        Ok(T::from_str(owned()).map_or_else(|| other(Value::from(s)), Lean::Typed))
    }
    fn visit_u64<E: de::Error>(self, n: u64) -> Result<Lean<T>, E> {
        Ok(T::from_u64(n).map_or(other(Value::from(n)), Lean::Typed))
    }
    fn visit_unit<E: de::Error>(self) -> Result<Lean<T>, E> {
        Ok(T::from_null().map_or(other(Value::Null), Lean::Typed))
    }
}

/// Reads a list of `T`s: `Lean::Other` holds the whole value when it is not a list or an
/// element is not a `T` (the elements before that one written back as they were read).
pub(super) struct ListSeed<T>(PhantomData<T>);

impl<T> ListSeed<T> {
    pub fn new() -> Self {
        ListSeed(PhantomData)
    }
}

impl<'de, T: Scalar<'de>> DeserializeSeed<'de> for ListSeed<T> {
    type Value = Lean<Vec<T>>;
    fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<Lean<Vec<T>>, D::Error> {
        d.deserialize_any(self)
    }
}

impl<'de, T: Scalar<'de>> Visitor<'de> for ListSeed<T> {
    type Value = Lean<Vec<T>>;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a JSON value")
    }

    other_scalars!(visit_bool: bool, visit_i64: i64, visit_u64: u64, visit_f64: f64, visit_str: &str);
    fn visit_unit<E: de::Error>(self) -> Result<Self::Value, E> {
        Ok(other(Value::Null))
    }
    fn visit_map<A: MapAccess<'de>>(self, map: A) -> Result<Self::Value, A::Error> {
        Value::deserialize(de::value::MapAccessDeserializer::new(map)).map(other)
    }

    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Self::Value, A::Error> {
        let mut items = Vec::new();
        while let Some(item) = seq.next_element_seed(Lean::<T>::seed())? {
            match item {
                Lean::Typed(t) => items.push(t),
                Lean::Other(odd) => {
                    let mut values: Vec<Value> = items.into_iter().map(T::into_value).collect();
                    values.push(*odd);
                    while let Some(v) = seq.next_element::<Value>()? {
                        values.push(v);
                    }
                    return Ok(other(Value::Array(values)));
                }
            }
        }
        Ok(Lean::Typed(items))
    }
}

/// Reads an object of strings into [`Pairs`]; a repeated key keeps its first place and its
/// last value, as a JSON object read into a map does.
pub(super) struct PairsSeed;

impl<'de> DeserializeSeed<'de> for PairsSeed {
    type Value = Lean<Pairs<'de>>;
    fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<Self::Value, D::Error> {
        d.deserialize_any(self)
    }
}

impl<'de> Visitor<'de> for PairsSeed {
    type Value = Lean<Pairs<'de>>;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a JSON value")
    }

    other_scalars!(visit_bool: bool, visit_i64: i64, visit_u64: u64, visit_f64: f64, visit_str: &str);
    fn visit_unit<E: de::Error>(self) -> Result<Self::Value, E> {
        Ok(other(Value::Null))
    }
    fn visit_seq<A: SeqAccess<'de>>(self, seq: A) -> Result<Self::Value, A::Error> {
        Value::deserialize(de::value::SeqAccessDeserializer::new(seq)).map(other)
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Self::Value, A::Error> {
        let mut pairs = Pairs::default();
        while let Some(key) = map.next_key_seed(Lean::<Cow<'de, str>>::seed())? {
            // Keys of a JSON object are always strings.
            let Lean::Typed(key) = key else {
                return Err(de::Error::custom("object key is not a string"));
            };
            match map.next_value_seed(Lean::<Cow<'de, str>>::seed())? {
                Lean::Typed(value) => match pairs.0.iter_mut().find(|(k, _)| *k == key) {
                    Some(slot) => slot.1 = value,
                    None => pairs.0.push((key, value)),
                },
                Lean::Other(odd) => {
                    let mut rest = pairs.into_map();
                    rest.insert(key.into_owned(), *odd);
                    while let Some((k, v)) = map.next_entry::<String, Value>()? {
                        rest.insert(k, v);
                    }
                    return Ok(other(Value::Object(rest)));
                }
            }
        }
        Ok(Lean::Typed(pairs))
    }
}
