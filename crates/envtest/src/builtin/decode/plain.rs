//! The decoder's error type and its plain-string deserializer: shared by
//! the decoder (de.rs) and the probe of Go type names (gotype.rs), which
//! both sit above this module.

use std::fmt;

use serde::de::{self, Deserializer, Visitor};

/// Errors raised while walking; `Mismatch` is placed (given its Go context)
/// by the innermost deserializer that sees it.
#[derive(Debug)]
pub(crate) enum DeError {
    Mismatch { want: String },
    Final(String),
}

impl fmt::Display for DeError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            DeError::Mismatch { want } => write!(f, "unexpected value, expected {want}"),
            DeError::Final(msg) => f.write_str(msg),
        }
    }
}

impl std::error::Error for DeError {}

impl de::Error for DeError {
    fn custom<T: fmt::Display>(msg: T) -> Self {
        DeError::Final(msg.to_string())
    }

    fn invalid_type(_unexp: de::Unexpected<'_>, exp: &dyn de::Expected) -> Self {
        DeError::Mismatch {
            want: exp.to_string(),
        }
    }

    fn invalid_value(_unexp: de::Unexpected<'_>, exp: &dyn de::Expected) -> Self {
        DeError::Mismatch {
            want: exp.to_string(),
        }
    }
}

/// A plain string (keys and canonicalised scalars).
pub(crate) struct StrDe<'s>(pub &'s str);

impl<'de> Deserializer<'de> for StrDe<'_> {
    type Error = DeError;

    fn deserialize_any<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, DeError> {
        visitor.visit_str(self.0)
    }

    fn deserialize_option<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, DeError> {
        visitor.visit_some(self)
    }

    fn deserialize_newtype_struct<V: Visitor<'de>>(
        self,
        _name: &'static str,
        visitor: V,
    ) -> Result<V::Value, DeError> {
        visitor.visit_newtype_struct(self)
    }

    serde::forward_to_deserialize_any! {
        bool i8 i16 i32 i64 i128 u8 u16 u32 u64 u128 f32 f64 char str string
        bytes byte_buf unit unit_struct seq tuple
        tuple_struct map struct enum identifier ignored_any
    }
}
