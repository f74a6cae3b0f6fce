//! Go type names for decode error messages (`of type []v1.Container`).
//!
//! The k8s-openapi types are probed: a value's `Deserialize` implementation is
//! run against a deserializer that only records what it is asked for (a
//! struct named `Container`, a string, a map of ...), which names the Go type
//! the real server would print.

use std::cell::RefCell;
use std::fmt;

use serde::de::{self, DeserializeSeed, Deserializer, MapAccess, SeqAccess, Visitor};
use serde_json::Value;

use super::plain::{DeError, StrDe};

/// The JSON kind Go's `UnmarshalTypeError` prints (`number 1.5` when a number
/// does not fit an integer type).
pub(crate) fn go_json_kind(value: &Value, go_type: &str) -> String {
    match value {
        Value::Number(n) if go_type.starts_with("int") || go_type.starts_with("uint") => {
            format!("number {n}")
        }
        other => crate::gofmt::json_kind(other).into(),
    }
}

/// Go's name for a k8s-openapi struct.
pub(crate) fn struct_type(name: &str) -> String {
    match name {
        "IntOrString" => "intstr.IntOrString".into(),
        "Quantity" => "resource.Quantity".into(),
        "RawExtension" => "runtime.RawExtension".into(),
        _ => format!("v1.{name}"),
    }
}

/// Go's name for what a serde visitor says it expects.
pub(crate) fn from_expected(want: &str) -> String {
    match want {
        "a string" | "a borrowed string" | "string" | "a character" => "string".into(),
        "a boolean" => "bool".into(),
        "i8" | "i16" | "i32" | "i64" | "u8" | "u16" | "u32" | "u64" => {
            let (sign, bits) = want.split_at(1);
            format!("{}int{bits}", if sign == "u" { "u" } else { "" })
        }
        "f32" => "float32".into(),
        "f64" => "float64".into(),
        // intstr.IntOrString decodes a non-string into its int32.
        "IntOrString" => "int32".into(),
        "Quantity" => "resource.Quantity".into(),
        "a sequence" => "[]interface {}".into(),
        "a map" => "map[string]interface {}".into(),
        "a base64-encoded string" => "[]uint8".into(),
        other if other.starts_with(|c: char| c.is_ascii_uppercase()) => struct_type(other),
        other => other.to_string(),
    }
}

/// `[]<element>` for a list visitor.
pub(crate) fn probe_seq<'de, V: Visitor<'de>>(visitor: V) -> String {
    let found = RefCell::new(None);
    let _ = visitor.visit_seq(ProbeSeq { found: &found });
    match found.into_inner() {
        Some(elem) => format!("[]{elem}"),
        None => "[]interface {}".into(),
    }
}

/// `map[string]<value>` for a map visitor.
pub(crate) fn probe_map<'de, V: Visitor<'de>>(visitor: V) -> String {
    let found = RefCell::new(None);
    let _ = visitor.visit_map(ProbeMap {
        found: &found,
        done: false,
    });
    match found.into_inner() {
        Some(elem) => format!("map[string]{elem}"),
        None => "map[string]interface {}".into(),
    }
}

#[derive(Debug)]
struct Stop;

impl fmt::Display for Stop {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("probe")
    }
}

impl std::error::Error for Stop {}

impl de::Error for Stop {
    fn custom<T: fmt::Display>(_msg: T) -> Self {
        Stop
    }
}

struct ProbeSeq<'f> {
    found: &'f RefCell<Option<String>>,
}

impl<'de> SeqAccess<'de> for ProbeSeq<'_> {
    type Error = Stop;

    fn next_element_seed<T: DeserializeSeed<'de>>(
        &mut self,
        seed: T,
    ) -> Result<Option<T::Value>, Stop> {
        seed.deserialize(Probe { found: self.found })?;
        Err(Stop)
    }
}

struct ProbeMap<'f> {
    found: &'f RefCell<Option<String>>,
    done: bool,
}

impl<'de> MapAccess<'de> for ProbeMap<'_> {
    type Error = Stop;

    fn next_key_seed<K: DeserializeSeed<'de>>(
        &mut self,
        seed: K,
    ) -> Result<Option<K::Value>, Stop> {
        if self.done {
            return Err(Stop);
        }
        self.done = true;
        seed.deserialize(StrDe("k")).map(Some).map_err(|_| Stop)
    }

    fn next_value_seed<V: DeserializeSeed<'de>>(&mut self, seed: V) -> Result<V::Value, Stop> {
        seed.deserialize(Probe { found: self.found })?;
        Err(Stop)
    }
}

struct Probe<'f> {
    found: &'f RefCell<Option<String>>,
}

impl Probe<'_> {
    fn record<T>(&self, name: String) -> Result<T, Stop> {
        *self.found.borrow_mut() = Some(name);
        Err(Stop)
    }
}

struct Show<'v, V>(&'v V);

impl<'de, V: Visitor<'de>> fmt::Display for Show<'_, V> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        self.0.expecting(f)
    }
}

impl<'de> Deserializer<'de> for Probe<'_> {
    type Error = Stop;

    fn deserialize_any<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, Stop> {
        let name = from_expected(&Show(&visitor).to_string());
        self.record(name)
    }

    fn deserialize_bool<V: Visitor<'de>>(self, _visitor: V) -> Result<V::Value, Stop> {
        self.record("bool".into())
    }

    fn deserialize_i32<V: Visitor<'de>>(self, _visitor: V) -> Result<V::Value, Stop> {
        self.record("int32".into())
    }

    fn deserialize_i64<V: Visitor<'de>>(self, _visitor: V) -> Result<V::Value, Stop> {
        self.record("int64".into())
    }

    fn deserialize_f64<V: Visitor<'de>>(self, _visitor: V) -> Result<V::Value, Stop> {
        self.record("float64".into())
    }

    fn deserialize_str<V: Visitor<'de>>(self, _visitor: V) -> Result<V::Value, Stop> {
        self.record("string".into())
    }

    fn deserialize_string<V: Visitor<'de>>(self, _visitor: V) -> Result<V::Value, Stop> {
        self.record("string".into())
    }

    fn deserialize_option<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, Stop> {
        if Show(&visitor).to_string() == "a base64-encoded string" {
            return self.record("[]uint8".into());
        }
        visitor.visit_some(self)
    }

    fn deserialize_newtype_struct<V: Visitor<'de>>(
        self,
        name: &'static str,
        _visitor: V,
    ) -> Result<V::Value, Stop> {
        self.record(struct_type(name))
    }

    fn deserialize_seq<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, Stop> {
        let inner = probe_seq(visitor);
        self.record(inner)
    }

    fn deserialize_map<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, Stop> {
        let inner = probe_map(visitor);
        self.record(inner)
    }

    fn deserialize_struct<V: Visitor<'de>>(
        self,
        name: &'static str,
        _fields: &'static [&'static str],
        _visitor: V,
    ) -> Result<V::Value, Stop> {
        self.record(struct_type(name))
    }

    serde::forward_to_deserialize_any! {
        i8 i16 u8 u16 u32 u64 i128 u128 f32 char bytes byte_buf unit unit_struct
        tuple tuple_struct enum identifier ignored_any
    }
}

impl From<DeError> for Stop {
    fn from(_: DeError) -> Self {
        Stop
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use k8s_openapi::api::core::v1::{Container, PodSpec};
    use std::collections::BTreeMap;

    fn seq_of<T: for<'de> serde::Deserialize<'de>>() -> String {
        struct V<T>(std::marker::PhantomData<T>);
        impl<'de, T: serde::Deserialize<'de>> Visitor<'de> for V<T> {
            type Value = Vec<T>;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("a sequence")
            }
            fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Self::Value, A::Error> {
                let mut out = Vec::new();
                while let Some(x) = seq.next_element()? {
                    out.push(x);
                }
                Ok(out)
            }
        }
        probe_seq(V::<T>(std::marker::PhantomData))
    }

    #[test]
    fn names_go_types() {
        assert_eq!(seq_of::<Container>(), "[]v1.Container");
        assert_eq!(seq_of::<String>(), "[]string");
        assert_eq!(seq_of::<BTreeMap<String, String>>(), "[]map[string]string");
        assert_eq!(seq_of::<PodSpec>(), "[]v1.PodSpec");
        assert_eq!(from_expected("i32"), "int32");
        assert_eq!(from_expected("u64"), "uint64");
    }
}
