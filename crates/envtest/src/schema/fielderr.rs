//! Field paths and field errors rendered the way kube-apiserver (v1.32, the
//! version the transcripts were recorded from) renders `field.Error`s.
//!
//! Go prints bad values with `%v` for numbers and booleans, `%q` for strings
//! and `%#v` for anything else; the helpers here reproduce those forms so the
//! messages match the recorded ones byte for byte.

use serde_json::Value;

use crate::error::Cause;
use crate::gofmt;

/// A `field.Path`. `None` is Go's nil path, printed `<nil>`.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub(crate) struct FieldPath(Option<String>);

impl FieldPath {
    /// The nil path.
    pub(crate) fn nil() -> Self {
        FieldPath(None)
    }

    pub(crate) fn new(name: &str) -> Self {
        FieldPath(Some(name.to_string()))
    }

    /// Appends a named child (`a.b`).
    pub(crate) fn child(&self, name: &str) -> Self {
        match &self.0 {
            None => FieldPath(Some(name.to_string())),
            Some(s) => FieldPath(Some(format!("{s}.{name}"))),
        }
    }

    /// Appends a subscript (`a[key]`).
    pub(crate) fn key(&self, key: &str) -> Self {
        match &self.0 {
            None => FieldPath(Some(format!("[{key}]"))),
            Some(s) => FieldPath(Some(format!("{s}[{key}]"))),
        }
    }

    pub(crate) fn index(&self, i: usize) -> Self {
        self.key(&i.to_string())
    }

    /// Prefixes a path string that was rendered relative to a nil root.
    pub(crate) fn join_relative(&self, relative: &str) -> String {
        match (&self.0, relative) {
            (None, r) => r.to_string(),
            (Some(s), "") | (Some(s), "<nil>") => s.clone(),
            (Some(s), r) if r.starts_with('[') => format!("{s}{r}"),
            (Some(s), r) => format!("{s}.{r}"),
        }
    }
}

impl std::fmt::Display for FieldPath {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match &self.0 {
            None => f.write_str("<nil>"),
            Some(s) => f.write_str(s),
        }
    }
}

/// The kind of a field error (`field.ErrorType`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum ErrKind {
    Required,
    Forbidden,
    TooLong,
    Invalid,
    TypeInvalid,
    NotSupported,
    Duplicate,
    TooMany,
}

impl ErrKind {
    fn reason(self) -> &'static str {
        match self {
            ErrKind::Required => "FieldValueRequired",
            ErrKind::Forbidden => "FieldValueForbidden",
            ErrKind::TooLong => "FieldValueTooLong",
            ErrKind::Invalid => "FieldValueInvalid",
            ErrKind::TypeInvalid => "FieldValueTypeInvalid",
            ErrKind::NotSupported => "FieldValueNotSupported",
            ErrKind::Duplicate => "FieldValueDuplicate",
            ErrKind::TooMany => "FieldValueTooMany",
        }
    }

    fn text(self) -> &'static str {
        match self {
            ErrKind::Required => "Required value",
            ErrKind::Forbidden => "Forbidden",
            ErrKind::TooLong => "Too long",
            ErrKind::Invalid | ErrKind::TypeInvalid => "Invalid value",
            ErrKind::NotSupported => "Unsupported value",
            ErrKind::Duplicate => "Duplicate value",
            ErrKind::TooMany => "Too many",
        }
    }
}

/// The bad value of a field error, already in the shape Go prints it.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum BadValue {
    /// Not printed at all (`field.OmitValueType`).
    Omit,
    /// Printed as is (numbers, booleans, `%#v` renderings).
    Raw(String),
    /// Printed with `%q`.
    Str(String),
}

impl BadValue {
    /// How `field.Error` prints a JSON value taken from an object.
    pub(crate) fn of(v: &Value) -> BadValue {
        match v {
            Value::String(s) => BadValue::Str(s.clone()),
            // `field.Error` turns nil into the string "null" before quoting it.
            Value::Null => BadValue::Str("null".to_string()),
            Value::Bool(b) => BadValue::Raw(b.to_string()),
            Value::Number(n) => BadValue::Raw(gofmt::number(n)),
            other => BadValue::Raw(gofmt::sharp_v(other)),
        }
    }

    pub(crate) fn str(s: &str) -> BadValue {
        BadValue::Str(s.to_string())
    }
}

/// One `field.Error`.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct FieldError {
    pub kind: ErrKind,
    pub field: String,
    pub value: BadValue,
    pub detail: String,
}

impl FieldError {
    fn with(kind: ErrKind, field: &FieldPath, value: BadValue, detail: &str) -> Self {
        FieldError {
            kind,
            field: field.to_string(),
            value,
            detail: detail.to_string(),
        }
    }

    pub(crate) fn required(field: &FieldPath, detail: &str) -> Self {
        Self::with(ErrKind::Required, field, BadValue::str(""), detail)
    }

    pub(crate) fn forbidden(field: &FieldPath, detail: &str) -> Self {
        Self::with(ErrKind::Forbidden, field, BadValue::str(""), detail)
    }

    pub(crate) fn invalid(field: &FieldPath, value: BadValue, detail: &str) -> Self {
        Self::with(ErrKind::Invalid, field, value, detail)
    }

    pub(crate) fn type_invalid(field: &FieldPath, value: BadValue, detail: &str) -> Self {
        Self::with(ErrKind::TypeInvalid, field, value, detail)
    }

    pub(crate) fn duplicate(field: &FieldPath, value: BadValue) -> Self {
        Self::with(ErrKind::Duplicate, field, value, "")
    }

    /// `field.NotSupported`: the supported values are quoted with `%q`.
    pub(crate) fn not_supported(field: &FieldPath, value: BadValue, supported: &[String]) -> Self {
        let detail = if supported.is_empty() {
            String::new()
        } else {
            format!(
                "supported values: {}",
                supported
                    .iter()
                    .map(|s| gofmt::quote(s))
                    .collect::<Vec<_>>()
                    .join(", ")
            )
        };
        Self::with(ErrKind::NotSupported, field, value, &detail)
    }

    /// `field.TooLongMaxLength` (v1.32: the same as `field.TooLong`).
    pub(crate) fn too_long(field: &FieldPath, value: BadValue, max: i64) -> Self {
        let detail = if max >= 0 {
            format!("may not be more than {max} bytes")
        } else {
            "value is too long".to_string()
        };
        Self::with(ErrKind::TooLong, field, value, &detail)
    }

    /// `field.TooMany`.
    pub(crate) fn too_many(field: &FieldPath, actual: i64, max: i64) -> Self {
        let detail = if max >= 0 {
            format!("must have at most {max} items")
        } else {
            "has too many items".to_string()
        };
        let value = if actual >= 0 {
            BadValue::Raw(actual.to_string())
        } else {
            BadValue::Omit
        };
        Self::with(ErrKind::TooMany, field, value, &detail)
    }

    /// `ErrorBody()`: the message without the field.
    pub(crate) fn body(&self) -> String {
        let mut s = match self.kind {
            ErrKind::Required | ErrKind::Forbidden | ErrKind::TooLong => {
                self.kind.text().to_string()
            }
            _ => match &self.value {
                BadValue::Omit => self.kind.text().to_string(),
                BadValue::Raw(v) => format!("{}: {v}", self.kind.text()),
                BadValue::Str(v) => format!("{}: {}", self.kind.text(), gofmt::quote(v)),
            },
        };
        if !self.detail.is_empty() {
            s.push_str(": ");
            s.push_str(&self.detail);
        }
        s
    }

    /// `Error()`: `field: body`.
    pub(crate) fn error_string(&self) -> String {
        format!("{}: {}", self.field, self.body())
    }

    pub(crate) fn into_cause(self) -> Cause {
        let message = self.body();
        Cause::new(self.kind.reason(), self.field, message)
    }
}

pub(crate) fn into_causes(errs: Vec<FieldError>) -> Vec<Cause> {
    errs.into_iter().map(FieldError::into_cause).collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn paths_render_like_go() {
        let p = FieldPath::new("spec")
            .child("validation")
            .child("openAPIV3Schema");
        assert_eq!(
            p.child("properties").key("spec").child("type").to_string(),
            "spec.validation.openAPIV3Schema.properties[spec].type"
        );
        assert_eq!(FieldPath::nil().to_string(), "<nil>");
        assert_eq!(FieldPath::nil().child("type").to_string(), "type");
        assert_eq!(FieldPath::nil().key("a").to_string(), "[a]");
        assert_eq!(
            p.join_relative("properties[a].type"),
            format!("{p}.properties[a].type")
        );
    }

    #[test]
    fn bodies_match_v124() {
        let e = FieldError::invalid(&FieldPath::new("x"), BadValue::of(&json!(0)), "d");
        assert_eq!(e.body(), "Invalid value: 0: d");
        let e = FieldError::required(&FieldPath::new("x"), "");
        assert_eq!(e.body(), "Required value");
        let e = FieldError::invalid(&FieldPath::new("x"), BadValue::of(&Value::Null), "d");
        assert_eq!(e.body(), "Invalid value: \"null\": d");
    }
}
