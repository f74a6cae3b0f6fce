//! Validation of a custom resource against its `openAPIV3Schema`, as
//! kube-openapi's schema validator does it (the validator kube-apiserver
//! uses), with its messages (`spec.size in body should be greater than or
//! equal to 1`), its order of checks, and the conversion of its results
//! into field errors.

use serde_json::Value;

use super::fielderr::{BadValue, FieldError, FieldPath};
use super::formats;
use super::node::{AdditionalProperties, Schema};
use crate::gofmt;

/// Which check failed (kube-openapi error codes).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Code {
    InvalidType,
    Required,
    TooLong,
    TooShort,
    Pattern,
    Enum,
    MultipleOf,
    Max,
    Min,
    Unique,
    MaxItems,
    MinItems,
    TooFewProperties,
    TooManyProperties,
    UnallowedProperty,
    MultipleOfMustBePositive,
}

/// One error of the validator.
#[derive(Debug, Clone)]
enum VErr {
    Validation {
        code: Code,
        name: String,
        /// `err.Value`; `None` is Go's nil.
        value: Option<BadValue>,
        /// `err.Valid` (limits of length/items checks).
        valid: Option<i64>,
        /// `err.Values` (enum).
        values: Vec<Value>,
        message: String,
    },
    /// Errors that are not `*errors.Validation` (anyOf/oneOf/allOf/not).
    Plain(String),
}

impl VErr {
    fn message(&self) -> &str {
        match self {
            VErr::Validation { message, .. } => message,
            VErr::Plain(m) => m,
        }
    }
}

#[derive(Debug, Default)]
struct VResult {
    errors: Vec<VErr>,
    match_count: usize,
}

impl VResult {
    fn add(&mut self, e: VErr) {
        // Identical messages are reported once.
        if !self.errors.iter().any(|x| x.message() == e.message()) {
            self.errors.push(e);
        }
    }

    fn merge(&mut self, other: VResult) {
        for e in other.errors {
            self.add(e);
        }
        self.match_count += other.match_count;
    }

    fn is_valid(&self) -> bool {
        self.errors.is_empty()
    }

    fn one(e: VErr) -> VResult {
        VResult {
            errors: vec![e],
            match_count: 0,
        }
    }
}

const IN: &str = "body";

fn verr(code: Code, name: &str, value: Option<BadValue>, message: String) -> VErr {
    VErr::Validation {
        code,
        name: name.to_string(),
        value,
        valid: None,
        values: Vec::new(),
        message,
    }
}

fn invalid_type(name: &str, type_name: &str, data_type: &str) -> VErr {
    verr(
        Code::InvalidType,
        name,
        Some(BadValue::str(data_type)),
        format!(
            "{name} in {IN} must be of type {type_name}: {}",
            gofmt::quote(data_type)
        ),
    )
}

/// Validates `data` against `s`; errors are reported under `fld_path`
/// (nil for a whole object, `...default` for a default value).
pub(crate) fn validate_value(s: &Schema, data: &Value, fld_path: &FieldPath) -> Vec<FieldError> {
    validate_update(s, data, None, fld_path)
}

/// Validates `data` as an update of `old` with kube-apiserver's validation
/// ratcheting (v1.30+): errors of a node whose value equals its old value
/// (deep equality) are dropped, so an object that became invalid under a
/// newer schema can still be changed elsewhere. Old values are matched
/// through object properties, map values and the items of
/// `x-kubernetes-list-type: map` lists (by their keys); other list items
/// only ratchet with their whole list.
pub(crate) fn validate_update(
    s: &Schema,
    data: &Value,
    old: Option<&Value>,
    fld_path: &FieldPath,
) -> Vec<FieldError> {
    let result = validate_node(s, data, old, "");
    result
        .errors
        .into_iter()
        .map(|e| to_field_error(e, fld_path))
        .collect()
}

fn to_field_error(e: VErr, fld_path: &FieldPath) -> FieldError {
    match e {
        VErr::Plain(message) => FieldError::invalid(fld_path, BadValue::str(""), &message),
        VErr::Validation {
            code,
            name,
            value,
            valid,
            values,
            message,
        } => {
            let path = if !name.is_empty() && name != "." {
                fld_path.child(name.trim_start_matches('.'))
            } else {
                fld_path.clone()
            };
            let value_or_empty = value.clone().unwrap_or_else(|| BadValue::str(""));
            match code {
                Code::Required => FieldError::required(&path, ""),
                Code::Enum => {
                    let supported: Vec<String> = values
                        .iter()
                        .map(|v| match v {
                            Value::String(s) => s.clone(),
                            other => gofmt::json(other),
                        })
                        .collect();
                    let v = value.unwrap_or_else(|| BadValue::Str("null".into()));
                    FieldError::not_supported(&path, v, &supported)
                }
                Code::TooLong => FieldError::too_long(&path, value_or_empty, valid.unwrap_or(-1)),
                Code::MaxItems | Code::TooManyProperties => {
                    let actual = match &value {
                        Some(BadValue::Raw(r)) => r.parse::<i64>().unwrap_or(-1),
                        _ => -1,
                    };
                    FieldError::too_many(&path, actual, valid.unwrap_or(-1))
                }
                Code::InvalidType => FieldError::type_invalid(&path, value_or_empty, &message),
                _ => FieldError::invalid(&path, value_or_empty, &message),
            }
        }
    }
}

/// JSON types of the schema as kube-openapi sees them (int-or-string is both).
fn schema_types(s: &Schema) -> Vec<&str> {
    if s.x_int_or_string {
        vec!["integer", "string"]
    } else if s.type_.is_empty() {
        Vec::new()
    } else {
        vec![s.type_.as_str()]
    }
}

/// The format after kube-apiserver strips formats it does not support.
pub(crate) fn effective_format(s: &Schema) -> &str {
    if s.format.is_empty() {
        return "";
    }
    let t = if s.x_int_or_string {
        ""
    } else {
        s.type_.as_str()
    };
    let keep = match t {
        "" | "string" => !s.x_int_or_string && formats::is_supported(&s.format),
        "integer" => s.format == "int32" || s.format == "int64",
        "number" => s.format == "float" || s.format == "double",
        _ => false,
    };
    if keep { &s.format } else { "" }
}

enum Num {
    Int(i64),
    Float(f64),
}

/// A JSON number as Go decodes it (int64 when it fits, else float64).
fn num(v: &Value) -> Option<Num> {
    let n = v.as_number()?;
    if let Some(i) = n.as_i64() {
        Some(Num::Int(i))
    } else {
        n.as_f64().map(Num::Float)
    }
}

fn data_type(v: &Value) -> &'static str {
    match v {
        Value::Bool(_) => "boolean",
        Value::String(_) => "string",
        Value::Number(n) if n.as_i64().is_some() => "integer",
        Value::Number(_) => "number",
        Value::Array(_) => "array",
        Value::Object(_) => "object",
        Value::Null => "null",
    }
}

fn data_format(v: &Value) -> &'static str {
    match v {
        Value::Number(n) if n.as_i64().is_some() => "int64",
        Value::Number(_) => "float64",
        _ => "",
    }
}

/// `swag.IsFloat64AJSONInteger`.
pub(crate) fn is_json_integer(f: f64) -> bool {
    const MAX: f64 = 9007199254740992.0; // 2^53
    if !f.is_finite() || !(-MAX..=MAX).contains(&f) {
        return false;
    }
    let diff = (f - f.round()).abs();
    diff == 0.0 || diff < 1e-9 * f.abs().max(1.0)
}

fn validate_node(s: &Schema, data: &Value, old: Option<&Value>, path: &str) -> VResult {
    let result = check_node(s, data, old, path);
    if !result.is_valid() && old.is_some_and(|o| unchanged(s, data, o)) {
        return VResult {
            errors: Vec::new(),
            match_count: result.match_count,
        };
    }
    result
}

fn check_node(s: &Schema, data: &Value, old: Option<&Value>, path: &str) -> VResult {
    let mut result = VResult::default();
    let types = schema_types(s);
    let format = effective_format(s);
    if data.is_null() {
        if !types.is_empty() || !format.is_empty() {
            result.merge(type_check(&types, format, s.nullable, data, path));
        }
        result.merge(enum_check(s, data, path));
        return result;
    }
    let run = |r: VResult, result: &mut VResult| {
        result.merge(r);
        result.match_count += 1;
    };
    if !types.is_empty() || !format.is_empty() {
        run(
            type_check(&types, format, s.nullable, data, path),
            &mut result,
        );
    }
    run(props_check(s, data, path), &mut result);
    if let Value::String(str_data) = data {
        run(string_check(s, str_data, path), &mut result);
        if formats::is_known(format) {
            run(format_check(format, str_data, path), &mut result);
        }
    }
    if let Some(n) = num(data) {
        run(number_check(s, &n, path), &mut result);
    }
    if let Value::Array(items) = data {
        run(slice_check(s, items, old, path), &mut result);
    }
    run(enum_check(s, data, path), &mut result);
    if let Value::Object(m) = data {
        run(object_check(s, m, old, path), &mut result);
    }
    result.match_count += 1;
    result
}

fn type_check(types: &[&str], format: &str, nullable: bool, data: &Value, path: &str) -> VResult {
    let mut ok = VResult {
        errors: Vec::new(),
        match_count: 1,
    };
    if data.is_null() {
        if !types.is_empty() && !types.contains(&"null") && !nullable {
            return VResult::one(invalid_type(path, &types.join(","), "null"));
        }
        return ok;
    }
    let sch_type = data_type(data);
    let fmt = data_format(data);
    let contains = |t: &str| types.contains(&t);
    let is_float_int =
        sch_type == "number" && data.as_f64().is_some_and(is_json_integer) && contains("integer");
    let is_int_float = sch_type == "integer" && contains("number");
    let is_str_or_slice = data.is_string() || data.is_array();
    let format_matches = contains(sch_type) || fmt == format || is_float_int || is_int_float;
    if !(is_str_or_slice || format.is_empty() || format_matches) {
        return VResult::one(invalid_type(path, format, fmt));
    }
    let numeric = contains("number") || contains("integer");
    if is_str_or_slice && !numeric && !format.is_empty() {
        return ok;
    }
    if !(contains(sch_type) || is_float_int || is_int_float) {
        return VResult::one(invalid_type(path, &types.join(","), sch_type));
    }
    ok.match_count = 1;
    ok
}

fn props_check(s: &Schema, data: &Value, path: &str) -> VResult {
    // Nothing below anyOf, oneOf, allOf or not ratchets on its own (only
    // with the whole node, in validate_node).

    let mut main = VResult::default();
    if !s.any_of.is_empty() {
        let mut best: Option<VResult> = None;
        let mut first_success: Option<VResult> = None;
        let mut succeeded = false;
        for sub in &s.any_of {
            let r = validate_node(sub, data, None, path);
            if r.is_valid() {
                best = None;
                succeeded = true;
                first_success = Some(r);
                break;
            }
            if best.as_ref().is_none_or(|b| r.match_count > b.match_count) {
                best = Some(r);
            }
        }
        if !succeeded {
            main.add(VErr::Plain(format!(
                "{} must validate at least one schema (anyOf)",
                gofmt::quote(path)
            )));
        }
        if let Some(b) = best {
            main.merge(b);
        } else if let Some(f) = first_success {
            main.merge(f);
        }
    }
    if !s.one_of.is_empty() {
        let mut best: Option<VResult> = None;
        let mut first_success: Option<VResult> = None;
        let mut validated = 0usize;
        for sub in &s.one_of {
            let r = validate_node(sub, data, None, path);
            if r.is_valid() {
                validated += 1;
                best = None;
                if first_success.is_none() {
                    first_success = Some(r);
                }
                continue;
            }
            if validated == 0 && best.as_ref().is_none_or(|b| r.match_count > b.match_count) {
                best = Some(r);
            }
        }
        if validated != 1 {
            let extra = if validated == 0 {
                "Found none valid".to_string()
            } else {
                format!("Found {validated} valid alternatives")
            };
            main.add(VErr::Plain(format!(
                "{} must validate one and only one schema (oneOf). {extra}",
                gofmt::quote(path)
            )));
            if let Some(b) = best {
                main.merge(b);
            }
        } else if let Some(f) = first_success {
            main.merge(f);
        }
    }
    if !s.all_of.is_empty() {
        let mut validated = 0usize;
        for sub in &s.all_of {
            let r = validate_node(sub, data, None, path);
            if r.is_valid() {
                validated += 1;
            }
            main.merge(r);
        }
        if validated != s.all_of.len() {
            let extra = if validated == 0 {
                ". None validated"
            } else {
                ""
            };
            main.add(VErr::Plain(format!(
                "{} must validate all the schemas (allOf){extra}",
                gofmt::quote(path)
            )));
        }
    }
    if let Some(not) = &s.not
        && validate_node(not, data, None, path).is_valid()
    {
        main.add(VErr::Plain(format!(
            "{} must not validate the schema (not)",
            gofmt::quote(path)
        )));
    }
    main.match_count += 1;
    main
}

fn string_check(s: &Schema, data: &str, path: &str) -> VResult {
    let len = data.chars().count() as i64;
    let value = Some(BadValue::str(data));
    if let Some(max) = s.max_length
        && len > max
    {
        return VResult::one(VErr::Validation {
            code: Code::TooLong,
            name: path.to_string(),
            value,
            valid: Some(max),
            values: Vec::new(),
            message: format!("{path} in {IN} should be at most {max} chars long"),
        });
    }
    if let Some(min) = s.min_length
        && len < min
    {
        return VResult::one(VErr::Validation {
            code: Code::TooShort,
            name: path.to_string(),
            value,
            valid: Some(min),
            values: Vec::new(),
            message: format!("{path} in {IN} should be at least {min} chars long"),
        });
    }
    match &s.pattern_re {
        Some(Ok(re)) if !re.is_match(data) => VResult::one(verr(
            Code::Pattern,
            path,
            value,
            format!("{path} in {IN} should match '{}'", s.pattern),
        )),
        Some(Err(e)) => VResult::one(verr(
            Code::Pattern,
            path,
            value,
            format!(
                "{path} in {IN} should match '{}, but pattern is invalid: {e}'",
                s.pattern
            ),
        )),
        _ => VResult::default(),
    }
}

fn format_check(format: &str, data: &str, path: &str) -> VResult {
    if formats::validates(format, data) {
        return VResult::default();
    }
    VResult::one(verr(
        Code::InvalidType,
        path,
        Some(BadValue::str(data)),
        format!(
            "{path} in {IN} must be of type {format}: {}",
            gofmt::quote(data)
        ),
    ))
}

fn num_value(n: &Num) -> BadValue {
    match n {
        Num::Int(i) => BadValue::Raw(i.to_string()),
        Num::Float(f) => BadValue::Raw(gofmt::float(*f)),
    }
}

fn number_check(s: &Schema, n: &Num, path: &str) -> VResult {
    let mut res = VResult::default();
    let mut multiple = VResult::default();
    let mut minimum = VResult::default();
    let mut maximum = VResult::default();
    let value = Some(num_value(n));
    if let Some(factor) = s.multiple_of {
        if factor <= 0.0 {
            multiple.add(verr(
                Code::MultipleOfMustBePositive,
                path,
                Some(BadValue::Raw(gofmt::float(factor))),
                format!(
                    "factor MultipleOf declared for {path} must be positive: {}",
                    gofmt::float(factor)
                ),
            ));
        } else {
            match n {
                Num::Int(i) => {
                    let f = factor as i64;
                    if f != 0 && i.checked_rem(f).is_some_and(|r| r != 0) {
                        multiple.add(verr(
                            Code::MultipleOf,
                            path,
                            value.clone(),
                            format!("{path} in {IN} should be a multiple of {f}"),
                        ));
                    } else if f == 0 {
                        multiple.add(verr(
                            Code::MultipleOfMustBePositive,
                            path,
                            Some(BadValue::Raw("0".into())),
                            format!("factor MultipleOf declared for {path} must be positive: 0"),
                        ));
                    }
                }
                Num::Float(d) => {
                    let mult = if factor < 1.0 {
                        1.0 / factor * d
                    } else {
                        d / factor
                    };
                    if !is_json_integer(mult) {
                        multiple.add(verr(
                            Code::MultipleOf,
                            path,
                            value.clone(),
                            format!(
                                "{path} in {IN} should be a multiple of {}",
                                gofmt::float(factor)
                            ),
                        ));
                    }
                }
            }
        }
    }
    if let Some(max) = s.maximum {
        let excl = s.exclusive_maximum;
        let (fails, shown) = match n {
            Num::Int(i) => {
                let m = max as i64;
                ((!excl && *i > m) || (excl && *i >= m), m.to_string())
            }
            Num::Float(d) => (
                (!excl && *d > max) || (excl && *d >= max),
                gofmt::float(max),
            ),
        };
        if fails {
            let op = if excl {
                "less than"
            } else {
                "less than or equal to"
            };
            maximum.add(verr(
                Code::Max,
                path,
                value.clone(),
                format!("{path} in {IN} should be {op} {shown}"),
            ));
        }
    }
    if let Some(min) = s.minimum {
        let excl = s.exclusive_minimum;
        let (fails, shown) = match n {
            Num::Int(i) => {
                let m = min as i64;
                ((!excl && *i < m) || (excl && *i <= m), m.to_string())
            }
            Num::Float(d) => (
                (!excl && *d < min) || (excl && *d <= min),
                gofmt::float(min),
            ),
        };
        if fails {
            let op = if excl {
                "greater than"
            } else {
                "greater than or equal to"
            };
            minimum.add(verr(
                Code::Min,
                path,
                value.clone(),
                format!("{path} in {IN} should be {op} {shown}"),
            ));
        }
    }
    res.merge(multiple);
    res.merge(minimum);
    res.merge(maximum);
    res.match_count += 1;
    res
}

fn slice_check(s: &Schema, items: &[Value], old: Option<&Value>, path: &str) -> VResult {
    let mut result = VResult::default();
    if let Some(item_schema) = &s.items {
        for (i, item) in items.iter().enumerate() {
            let old_item = correlated_item(s, item, old);
            result.merge(validate_node(
                item_schema,
                item,
                old_item,
                &format!("{path}[{i}]"),
            ));
        }
    }
    let size = items.len() as i64;
    if let Some(min) = s.min_items
        && size < min
    {
        result.add(VErr::Validation {
            code: Code::MinItems,
            name: path.to_string(),
            value: Some(BadValue::Raw(size.to_string())),
            valid: Some(min),
            values: Vec::new(),
            message: format!("{path} in {IN} should have at least {min} items"),
        });
    }
    if let Some(max) = s.max_items
        && size > max
    {
        result.add(VErr::Validation {
            code: Code::MaxItems,
            name: path.to_string(),
            value: Some(BadValue::Raw(size.to_string())),
            valid: Some(max),
            values: Vec::new(),
            message: format!("{path} in {IN} should have at most {max} items"),
        });
    }
    if s.unique_items {
        let dup = items
            .iter()
            .enumerate()
            .any(|(i, a)| items[..i].iter().any(|b| go_deep_equal(a, b)));
        if dup {
            result.add(verr(
                Code::Unique,
                path,
                None,
                format!("{path} in {IN} shouldn't contain duplicates"),
            ));
        }
    }
    result.match_count += 1;
    result
}

/// `reflect.DeepEqual` of two decoded JSON values (int64 and float64 differ).
fn go_deep_equal(a: &Value, b: &Value) -> bool {
    match (a, b) {
        (Value::Number(x), Value::Number(y)) => match (x.as_i64(), y.as_i64()) {
            (Some(i), Some(j)) => i == j,
            (None, None) => x.as_f64() == y.as_f64(),
            _ => false,
        },
        (Value::Array(x), Value::Array(y)) => {
            x.len() == y.len() && x.iter().zip(y).all(|(p, q)| go_deep_equal(p, q))
        }
        (Value::Object(x), Value::Object(y)) => {
            x.len() == y.len()
                && x.iter()
                    .all(|(k, v)| y.get(k).is_some_and(|w| go_deep_equal(v, w)))
        }
        (x, y) => x == y,
    }
}

/// Whether `data` matches `enum_value` the way kube-openapi decides it:
/// the data is converted to the enum value's Go type first.
fn enum_matches(data: &Value, enum_value: &Value) -> bool {
    match (data, enum_value) {
        (Value::Null, _) | (_, Value::Null) => false,
        (Value::Number(d), Value::Number(e)) => match (num(data), e.as_i64()) {
            // Converting a float64 to int64 truncates.
            (Some(Num::Float(f)), Some(ei)) => f.is_finite() && f.trunc() as i64 == ei,
            (Some(Num::Int(i)), Some(ei)) => i == ei,
            (Some(Num::Int(i)), None) => e.as_f64() == Some(i as f64),
            (Some(Num::Float(f)), None) => e.as_f64() == Some(f),
            (None, _) => d == e,
        },
        // An integer converts to the string of that code point.
        (Value::Number(d), Value::String(e)) => match d.as_i64() {
            Some(i) => {
                let c = u32::try_from(i)
                    .ok()
                    .and_then(char::from_u32)
                    .unwrap_or('\u{fffd}');
                e.as_str() == c.to_string()
            }
            None => false,
        },
        (a, b) => go_deep_equal(a, b),
    }
}

fn enum_check(s: &Schema, data: &Value, path: &str) -> VResult {
    if s.enum_.is_empty() || s.enum_.iter().any(|e| enum_matches(data, e)) {
        return VResult::default();
    }
    let listed = s
        .enum_
        .iter()
        .map(go_enum_elem)
        .collect::<Vec<_>>()
        .join(" ");
    VResult::one(VErr::Validation {
        code: Code::Enum,
        name: path.to_string(),
        value: if data.is_null() {
            None
        } else {
            Some(BadValue::of(data))
        },
        valid: None,
        values: s.enum_.clone(),
        message: format!("{path} in {IN} should be one of [{listed}]"),
    })
}

/// `%v` of an enum element inside `[]interface{}`.
fn go_enum_elem(v: &Value) -> String {
    match v {
        Value::String(s) => s.clone(),
        Value::Null => "<nil>".to_string(),
        Value::Number(n) => gofmt::number(n),
        other => other.to_string(),
    }
}

/// Whether a value equals its old value as ratcheting judges it: map lists
/// item by item through their keys (in any order), other lists as a whole,
/// object fields through their schema (a field without one never equals).
pub(crate) fn unchanged(s: &Schema, new: &Value, old: &Value) -> bool {
    match (new, old) {
        (Value::Array(items), Value::Array(old_items)) => {
            if items.len() != old_items.len() {
                return false;
            }
            let Some(item_schema) = s.items.as_deref() else {
                return go_deep_equal(new, old);
            };
            if s.x_list_type.as_deref() != Some("map") || s.x_list_map_keys.is_empty() {
                return go_deep_equal(new, old);
            }
            items.iter().all(|item| {
                correlated_item(s, item, Some(old)).is_some_and(|o| unchanged(item_schema, item, o))
            })
        }
        (Value::Object(m), Value::Object(old_m)) => {
            m.len() == old_m.len()
                && m.iter().all(|(k, v)| {
                    let child = s
                        .properties
                        .get(k.as_str())
                        .or_else(|| s.additional_schema());
                    match (child, old_m.get(k)) {
                        (Some(child), Some(o)) => unchanged(child, v, o),
                        _ => false,
                    }
                })
        }
        _ => go_deep_equal(new, old),
    }
}

/// The old item a new list item is compared with: only the items of map
/// lists correlate (by their keys).
pub(crate) fn correlated_item<'a>(
    s: &Schema,
    item: &Value,
    old: Option<&'a Value>,
) -> Option<&'a Value> {
    if s.x_list_type.as_deref() != Some("map") || s.x_list_map_keys.is_empty() {
        return None;
    }
    let key = |v: &Value| {
        s.x_list_map_keys
            .iter()
            .map(|k| v.get(k).cloned())
            .collect::<Vec<_>>()
    };
    let wanted = key(item);
    old?.as_array()?.iter().find(|o| key(o) == wanted)
}

fn object_check(
    s: &Schema,
    m: &serde_json::Map<String, Value>,
    old: Option<&Value>,
    path: &str,
) -> VResult {
    let mut res = VResult::default();
    let old_field = |k: &str| old.and_then(|o| o.get(k));
    let num_keys = m.len() as i64;
    if let Some(min) = s.min_properties
        && num_keys < min
    {
        res.add(VErr::Validation {
            code: Code::TooFewProperties,
            name: path.to_string(),
            value: Some(BadValue::Raw(num_keys.to_string())),
            valid: Some(min),
            values: Vec::new(),
            message: format!("{path} in {IN} should have at least {min} properties"),
        });
    }
    if let Some(max) = s.max_properties
        && num_keys > max
    {
        res.add(VErr::Validation {
            code: Code::TooManyProperties,
            name: path.to_string(),
            value: Some(BadValue::Raw(num_keys.to_string())),
            valid: Some(max),
            values: Vec::new(),
            message: format!("{path} in {IN} should have at most {max} properties"),
        });
    }
    let mut keys: Vec<&String> = m.keys().collect();
    keys.sort();
    match &s.additional_properties {
        Some(AdditionalProperties::Bool(false)) => {
            for k in &keys {
                if !s.properties.contains_key(k.as_str()) {
                    res.add(verr(
                        Code::UnallowedProperty,
                        path,
                        Some(BadValue::str(k)),
                        format!("{path}.{k} in {IN} is a forbidden property"),
                    ));
                }
            }
        }
        Some(AdditionalProperties::Schema(a)) => {
            for k in &keys {
                if !s.properties.contains_key(k.as_str()) {
                    res.merge(validate_node(
                        a,
                        &m[k.as_str()],
                        old_field(k),
                        &format!("{path}.{k}"),
                    ));
                }
            }
        }
        _ => {}
    }
    for (name, p) in &s.properties {
        if let Some(v) = m.get(name) {
            let r_name = if path.is_empty() {
                name.clone()
            } else {
                format!("{path}.{name}")
            };
            res.merge(validate_node(p, v, old_field(name), &r_name));
        }
    }
    for k in &s.required {
        if !m.contains_key(k) {
            res.add(verr(
                Code::Required,
                &format!("{path}.{k}"),
                None,
                format!("{path}.{k} in {IN} is required"),
            ));
        }
    }
    res
}
