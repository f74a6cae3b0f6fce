//! A `serde` deserializer over a parsed JSON value that behaves like the Go
//! decoder kube-apiserver uses (`sigs.k8s.io/json` in strict mode):
//!
//! - keys a struct does not declare are recorded with the path the real
//!   server prints (`spec.containers[0].bogus`), depth-first in document
//!   order, deduplicated, at most 100;
//! - a value of the wrong type fails with Go's `json: cannot unmarshal ...`
//!   text, naming the innermost struct and the field path as Go does;
//! - `null` for a non-optional value leaves the zero value (Go ignores it);
//! - Secret bytes, `Time`, `MicroTime` and `Quantity` are parsed with Go's
//!   rules and messages, and handed on in canonical form;
//! - empty maps and lists are remembered so that the round trip can omit them
//!   as Go's `omitempty` does.

use std::cell::RefCell;
use std::collections::HashSet;
use std::fmt;

use serde::de::{DeserializeSeed, Deserializer, MapAccess, SeqAccess, Visitor};
use serde_json::{Map, Value};

use super::gotime;
use super::gotype::{self, go_json_kind};
pub(crate) use super::plain::{DeError, StrDe};
use crate::quantity::Quantity;

/// Go's limit on accumulated strict errors.
const MAX_UNKNOWN: usize = 100;

/// One step of a path inside the decoded document.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub(crate) enum Seg {
    Key(String),
    Index(usize),
}

/// What the walk learnt besides the typed value.
#[derive(Debug, Default)]
pub(crate) struct Report {
    /// Unknown-field paths in the order the Go decoder reports them.
    pub unknown: Vec<String>,
    seen: HashSet<String>,
    /// Paths of maps and lists that were present but empty (Go omits them).
    pub empty_collections: Vec<Vec<Seg>>,
}

/// Go's error context: the innermost struct holding the current field and
/// the JSON names of the struct fields from the root (list positions and map
/// keys left out).
#[derive(Debug, Clone, Default)]
struct GoContext {
    struct_name: String,
    fields: String,
}

/// Deserializes one value of the document.
pub(crate) struct ValueDe<'a, 'r> {
    value: &'a Value,
    report: &'r RefCell<Report>,
    path: Vec<Seg>,
    go: GoContext,
}

impl<'a, 'r> ValueDe<'a, 'r> {
    pub(crate) fn root(value: &'a Value, report: &'r RefCell<Report>) -> Self {
        ValueDe {
            value,
            report,
            path: Vec::new(),
            go: GoContext::default(),
        }
    }

    fn child(&self, value: &'a Value, seg: Seg, go: GoContext) -> ValueDe<'a, 'r> {
        let mut path = self.path.clone();
        path.push(seg);
        ValueDe {
            value,
            report: self.report,
            path,
            go,
        }
    }

    /// The path as the strict decoder prints it: `spec.containers[0].bogus`.
    fn strict_path(path: &[Seg]) -> String {
        let mut out = String::new();
        for seg in path {
            match seg {
                Seg::Key(k) => {
                    if !out.is_empty() {
                        out.push('.');
                    }
                    out.push_str(k);
                }
                Seg::Index(i) => {
                    out.push('[');
                    out.push_str(&i.to_string());
                    out.push(']');
                }
            }
        }
        out
    }

    fn record_unknown(&self, key: &str) {
        let mut path = self.path.clone();
        path.push(Seg::Key(key.to_string()));
        let text = Self::strict_path(&path);
        let mut report = self.report.borrow_mut();
        if report.unknown.len() >= MAX_UNKNOWN || report.seen.contains(&text) {
            return;
        }
        report.seen.insert(text.clone());
        report.unknown.push(text);
    }

    fn record_empty(&self) {
        self.report
            .borrow_mut()
            .empty_collections
            .push(self.path.clone());
    }

    /// Turns a type mismatch raised at this value into Go's message.
    fn place(&self, err: DeError, go_type: impl FnOnce() -> String) -> DeError {
        match err {
            DeError::Mismatch { want } => {
                let go_type = {
                    let probed = go_type();
                    if probed.is_empty() {
                        gotype::from_expected(&want)
                    } else {
                        probed
                    }
                };
                let got = go_json_kind(self.value, &go_type);
                DeError::Final(if self.go.struct_name.is_empty() {
                    format!("json: cannot unmarshal {got} into Go value of type {go_type}")
                } else {
                    format!(
                        "json: cannot unmarshal {got} into Go struct field {}.{} of type {go_type}",
                        self.go.struct_name, self.go.fields
                    )
                })
            }
            other => other,
        }
    }

    fn place_plain(&self, err: DeError) -> DeError {
        self.place(err, String::new)
    }

    fn visit_number<'de, V: Visitor<'de>>(
        n: &serde_json::Number,
        visitor: V,
    ) -> Result<V::Value, DeError> {
        if let Some(u) = n.as_u64() {
            visitor.visit_u64(u)
        } else if let Some(i) = n.as_i64() {
            visitor.visit_i64(i)
        } else {
            visitor.visit_f64(n.as_f64().unwrap_or(0.0))
        }
    }

    /// Go leaves the zero value when it meets `null` for a non-pointer value.
    fn zero_or<'de, V: Visitor<'de>>(
        &self,
        visitor: V,
        zero: impl FnOnce(V) -> Result<V::Value, DeError>,
        otherwise: impl FnOnce(V) -> Result<V::Value, DeError>,
    ) -> Result<V::Value, DeError> {
        if self.value.is_null() {
            zero(visitor).map_err(|e| self.place_plain(e))
        } else {
            otherwise(visitor).map_err(|e| self.place_plain(e))
        }
    }

    /// `metav1.Time` / `MicroTime`: Go's `time.Parse` with their layouts.
    fn time(&self, micro: bool) -> Result<String, DeError> {
        match self.value {
            Value::String(s) => gotime::parse(s, micro).map_err(DeError::Final),
            _ => Err(self.place(
                DeError::Mismatch {
                    want: "a string".into(),
                },
                || "string".into(),
            )),
        }
    }
}

/// Renders what a visitor expects, to recognise the k8s-openapi wrapper types.
struct Expecting<'v, V>(&'v V);

impl<'de, V: Visitor<'de>> fmt::Display for Expecting<'_, V> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        self.0.expecting(f)
    }
}

/// Compares what a visitor expects with `text` without allocating (this runs
/// for every optional field).
fn expects<'de, V: Visitor<'de>>(visitor: &V, text: &str) -> bool {
    struct Compare<'t> {
        rest: &'t str,
        equal: bool,
    }
    impl fmt::Write for Compare<'_> {
        fn write_str(&mut self, s: &str) -> fmt::Result {
            match self.rest.strip_prefix(s) {
                Some(rest) if self.equal => self.rest = rest,
                _ => self.equal = false,
            }
            Ok(())
        }
    }
    let mut compare = Compare {
        rest: text,
        equal: true,
    };
    let _ = fmt::write(&mut compare, format_args!("{}", Expecting(visitor)));
    compare.equal && compare.rest.is_empty()
}

impl<'de, 'r> Deserializer<'de> for ValueDe<'de, 'r> {
    type Error = DeError;

    fn deserialize_any<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, DeError> {
        let result = match self.value {
            Value::Null => visitor.visit_unit(),
            Value::Bool(b) => visitor.visit_bool(*b),
            Value::Number(n) => Self::visit_number(n, visitor),
            Value::String(s) => visitor.visit_borrowed_str(s),
            Value::Array(items) => visitor.visit_seq(Seq::new(&self, items)),
            Value::Object(map) => visitor.visit_map(Entries::new(&self, map, None)),
        };
        result.map_err(|e| self.place_plain(e))
    }

    fn deserialize_bool<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, DeError> {
        self.zero_or(
            visitor,
            |v| v.visit_bool(false),
            |v| match self.value {
                Value::Bool(b) => v.visit_bool(*b),
                _ => Err(DeError::Mismatch {
                    want: "a boolean".into(),
                }),
            },
        )
    }

    fn deserialize_i8<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, DeError> {
        self.deserialize_i64(visitor)
    }
    fn deserialize_i16<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, DeError> {
        self.deserialize_i64(visitor)
    }
    fn deserialize_i32<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, DeError> {
        self.deserialize_i64(visitor)
    }
    fn deserialize_i64<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, DeError> {
        self.zero_or(
            visitor,
            |v| v.visit_i64(0),
            |v| match self.value {
                Value::Number(n) => Self::visit_number(n, v),
                _ => Err(DeError::Mismatch {
                    want: Expecting(&v).to_string(),
                }),
            },
        )
    }
    fn deserialize_u8<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, DeError> {
        self.deserialize_i64(visitor)
    }
    fn deserialize_u16<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, DeError> {
        self.deserialize_i64(visitor)
    }
    fn deserialize_u32<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, DeError> {
        self.deserialize_i64(visitor)
    }
    fn deserialize_u64<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, DeError> {
        self.deserialize_i64(visitor)
    }
    fn deserialize_f32<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, DeError> {
        self.deserialize_f64(visitor)
    }
    fn deserialize_f64<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, DeError> {
        self.zero_or(
            visitor,
            |v| v.visit_f64(0.0),
            |v| match self.value {
                Value::Number(n) => v.visit_f64(n.as_f64().unwrap_or(0.0)),
                _ => Err(DeError::Mismatch {
                    want: Expecting(&v).to_string(),
                }),
            },
        )
    }

    fn deserialize_char<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, DeError> {
        self.deserialize_str(visitor)
    }

    fn deserialize_str<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, DeError> {
        self.zero_or(
            visitor,
            |v| v.visit_borrowed_str(""),
            |v| match self.value {
                Value::String(s) => v.visit_borrowed_str(s),
                _ => Err(DeError::Mismatch {
                    want: "a string".into(),
                }),
            },
        )
    }

    fn deserialize_string<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, DeError> {
        self.deserialize_str(visitor)
    }

    fn deserialize_bytes<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, DeError> {
        self.deserialize_str(visitor)
    }

    fn deserialize_byte_buf<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, DeError> {
        self.deserialize_str(visitor)
    }

    fn deserialize_option<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, DeError> {
        // Secret data and webhook CA bundles: Go's []byte decoding.
        if expects(&visitor, "a base64-encoded string") {
            return match self.value {
                Value::Null => visitor.visit_none(),
                Value::String(s) => match super::gobase64::decode(s) {
                    Ok(bytes) => {
                        let canonical = super::gobase64::encode(&bytes);
                        visitor.visit_some(StrDe(&canonical))
                    }
                    Err(offset) => Err(DeError::Final(format!(
                        "illegal base64 data at input byte {offset}"
                    ))),
                },
                _ => Err(self.place(
                    DeError::Mismatch {
                        want: "[]uint8".into(),
                    },
                    || "[]uint8".into(),
                )),
            };
        }
        match self.value {
            Value::Null => visitor.visit_none(),
            _ => visitor.visit_some(self),
        }
    }

    fn deserialize_unit<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, DeError> {
        visitor.visit_unit()
    }

    fn deserialize_unit_struct<V: Visitor<'de>>(
        self,
        _name: &'static str,
        visitor: V,
    ) -> Result<V::Value, DeError> {
        visitor.visit_unit()
    }

    fn deserialize_newtype_struct<V: Visitor<'de>>(
        self,
        name: &'static str,
        visitor: V,
    ) -> Result<V::Value, DeError> {
        match name {
            "Time" | "MicroTime" => {
                if self.value.is_null() {
                    // Only reachable inside lists; Go keeps the zero time.
                    return visitor.visit_newtype_struct(StrDe("0001-01-01T00:00:00Z"));
                }
                let text = self.time(name == "MicroTime")?;
                visitor.visit_newtype_struct(StrDe(&text))
            }
            "Quantity" => {
                let raw = match self.value {
                    Value::String(s) => s.trim().to_string(),
                    Value::Number(n) => n.to_string(),
                    Value::Null => "0".to_string(),
                    other => other.to_string(),
                };
                let q = Quantity::parse(&raw)
                    .map_err(|_| DeError::Final(crate::quantity::FORMAT_ERROR.to_string()))?;
                visitor.visit_newtype_struct(StrDe(&q.canonical()))
            }
            _ => visitor
                .visit_newtype_struct(ValueDe {
                    value: self.value,
                    report: self.report,
                    path: self.path.clone(),
                    go: self.go.clone(),
                })
                .map_err(|e| self.place_plain(e)),
        }
    }

    fn deserialize_seq<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, DeError> {
        match self.value {
            Value::Array(items) => {
                if items.is_empty() {
                    self.record_empty();
                }
                visitor
                    .visit_seq(Seq::new(&self, items))
                    .map_err(|e| self.place_plain(e))
            }
            Value::Null => visitor
                .visit_seq(Seq::new(&self, &[]))
                .map_err(|e| self.place_plain(e)),
            _ => {
                let ty = gotype::probe_seq(visitor);
                Err(self.place(
                    DeError::Mismatch {
                        want: "a sequence".into(),
                    },
                    || ty,
                ))
            }
        }
    }

    fn deserialize_tuple<V: Visitor<'de>>(
        self,
        _len: usize,
        visitor: V,
    ) -> Result<V::Value, DeError> {
        self.deserialize_seq(visitor)
    }

    fn deserialize_tuple_struct<V: Visitor<'de>>(
        self,
        _name: &'static str,
        _len: usize,
        visitor: V,
    ) -> Result<V::Value, DeError> {
        self.deserialize_seq(visitor)
    }

    fn deserialize_map<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, DeError> {
        static EMPTY: std::sync::OnceLock<Map<String, Value>> = std::sync::OnceLock::new();
        match self.value {
            Value::Object(map) => {
                if map.is_empty() {
                    self.record_empty();
                }
                visitor
                    .visit_map(Entries::new(&self, map, None))
                    .map_err(|e| self.place_plain(e))
            }
            Value::Null => visitor
                .visit_map(Entries::new(&self, EMPTY.get_or_init(Map::new), None))
                .map_err(|e| self.place_plain(e)),
            _ => {
                let ty = gotype::probe_map(visitor);
                Err(self.place(
                    DeError::Mismatch {
                        want: "a map".into(),
                    },
                    || ty,
                ))
            }
        }
    }

    fn deserialize_struct<V: Visitor<'de>>(
        self,
        name: &'static str,
        fields: &'static [&'static str],
        visitor: V,
    ) -> Result<V::Value, DeError> {
        static EMPTY: std::sync::OnceLock<Map<String, Value>> = std::sync::OnceLock::new();
        let map = match self.value {
            Value::Object(map) => map,
            Value::Null => EMPTY.get_or_init(Map::new),
            _ => {
                return Err(self.place(
                    DeError::Mismatch {
                        want: name.to_string(),
                    },
                    || gotype::struct_type(name),
                ));
            }
        };
        visitor
            .visit_map(Entries::new(&self, map, Some((name, fields))))
            .map_err(|e| self.place_plain(e))
    }

    fn deserialize_enum<V: Visitor<'de>>(
        self,
        _name: &'static str,
        _variants: &'static [&'static str],
        visitor: V,
    ) -> Result<V::Value, DeError> {
        self.deserialize_any(visitor)
    }

    fn deserialize_identifier<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, DeError> {
        self.deserialize_str(visitor)
    }

    fn deserialize_ignored_any<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, DeError> {
        visitor.visit_unit()
    }
}

/// A list being walked.
struct Seq<'a, 'p, 'r> {
    parent: &'p ValueDe<'a, 'r>,
    items: std::iter::Enumerate<std::slice::Iter<'a, Value>>,
}

impl<'a, 'p, 'r> Seq<'a, 'p, 'r> {
    fn new(parent: &'p ValueDe<'a, 'r>, items: &'a [Value]) -> Self {
        Seq {
            parent,
            items: items.iter().enumerate(),
        }
    }
}

impl<'de> SeqAccess<'de> for Seq<'de, '_, '_> {
    type Error = DeError;

    fn next_element_seed<T: DeserializeSeed<'de>>(
        &mut self,
        seed: T,
    ) -> Result<Option<T::Value>, DeError> {
        match self.items.next() {
            None => Ok(None),
            Some((i, item)) => {
                let de = self
                    .parent
                    .child(item, Seg::Index(i), self.parent.go.clone());
                seed.deserialize(de).map(Some)
            }
        }
    }
}

/// An object being walked, as a struct (`known` set) or a map.
struct Entries<'a, 'p, 'r> {
    parent: &'p ValueDe<'a, 'r>,
    entries: serde_json::map::Iter<'a>,
    known: Option<(&'static str, &'static [&'static str])>,
    current: Option<(&'a String, &'a Value)>,
}

impl<'a, 'p, 'r> Entries<'a, 'p, 'r> {
    fn new(
        parent: &'p ValueDe<'a, 'r>,
        map: &'a Map<String, Value>,
        known: Option<(&'static str, &'static [&'static str])>,
    ) -> Self {
        Entries {
            parent,
            entries: map.iter(),
            known,
            current: None,
        }
    }
}

impl<'de> MapAccess<'de> for Entries<'de, '_, '_> {
    type Error = DeError;

    fn next_key_seed<K: DeserializeSeed<'de>>(
        &mut self,
        seed: K,
    ) -> Result<Option<K::Value>, DeError> {
        let Some((key, value)) = self.entries.next() else {
            return Ok(None);
        };
        self.current = Some((key, value));
        if let Some((_, fields)) = self.known
            && !fields.contains(&key.as_str())
        {
            self.parent.record_unknown(key);
        }
        seed.deserialize(StrDe(key)).map(Some)
    }

    fn next_value_seed<V: DeserializeSeed<'de>>(&mut self, seed: V) -> Result<V::Value, DeError> {
        let Some((key, value)) = self.current.take() else {
            return Err(DeError::Final("value requested before key".into()));
        };
        let go = match self.known {
            Some((name, fields)) if fields.contains(&key.as_str()) => {
                let parent = &self.parent.go;
                GoContext {
                    struct_name: name.to_string(),
                    fields: if parent.fields.is_empty() {
                        key.clone()
                    } else {
                        format!("{}.{key}", parent.fields)
                    },
                }
            }
            _ => self.parent.go.clone(),
        };
        let de = self.parent.child(value, Seg::Key(key.clone()), go);
        seed.deserialize(de)
    }
}
