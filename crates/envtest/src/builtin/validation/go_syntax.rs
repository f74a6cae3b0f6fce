//! Go's `%#v` rendering of the values some field errors print
//! (`map[string]string{"app":"other"}`, `[]string{"a", "b"}`).

use rand::Rng;
use serde_json::Value;

use crate::error::Cause;

/// `map[string]string{...}` with keys sorted, as `fmt` prints maps.
pub(crate) fn string_map(value: Option<&Value>) -> String {
    let Some(map) = value.and_then(Value::as_object) else {
        return "map[string]string(nil)".to_string();
    };
    let mut entries: Vec<(&String, &Value)> = map.iter().collect();
    entries.sort_by(|a, b| a.0.cmp(b.0));
    let body: Vec<String> = entries
        .iter()
        .map(|(k, v)| format!("{:?}:{:?}", k, v.as_str().unwrap_or("")))
        .collect();
    format!("map[string]string{{{}}}", body.join(", "))
}

/// `[]string{"a", "b"}`, or `[]string(nil)` for an absent list.
pub(crate) fn string_slice(values: Option<&[String]>) -> String {
    match values {
        None => "[]string(nil)".to_string(),
        Some(values) => format!(
            "[]string{{{}}}",
            values
                .iter()
                .map(|v| format!("{v:?}"))
                .collect::<Vec<_>>()
                .join(", ")
        ),
    }
}

/// The strings of a JSON list (non-strings skipped).
pub(crate) fn strings(value: Option<&Value>) -> Option<Vec<String>> {
    value.and_then(Value::as_array).map(|items| {
        items
            .iter()
            .filter_map(|v| v.as_str().map(str::to_string))
            .collect()
    })
}

/// A pointer as Go prints it; the address is made up, as it is meaningless.
pub(crate) fn pointer(type_name: &str, is_nil: bool) -> String {
    if is_nil {
        return format!("(*{type_name})(nil)");
    }
    let addr: u32 = rand::rng().random_range(0x10_0000..0xff_ffff);
    format!("(*{type_name})(0xc000{addr:06x})")
}

/// A `FieldValueInvalid` cause whose value is already rendered.
pub(crate) fn invalid_raw(field: impl Into<String>, rendered: &str, detail: &str) -> Cause {
    Cause::new(
        "FieldValueInvalid",
        field,
        format!("Invalid value: {rendered}: {detail}"),
    )
}

/// `FieldValueTooLong`: `Too long: may not be more than N bytes`.
pub(crate) fn too_long(field: impl Into<String>, max: usize) -> Cause {
    Cause::new(
        "FieldValueTooLong",
        field,
        format!("Too long: may not be more than {max} bytes"),
    )
}

/// `field is immutable` for a changed value.
pub(crate) fn immutable(field: impl Into<String>, rendered: &str) -> Cause {
    invalid_raw(field, rendered, "field is immutable")
}

/// Go's `%#v` of a `resource.Quantity` parsed from `text` whose cached
/// string is `canonical` (what field errors print for a quantity).
pub(super) fn go_quantity(text: &str, canonical: &str) -> String {
    let trimmed = text.trim();
    let split = trimmed
        .find(|c: char| !(c.is_ascii_digit() || c == '.' || c == '+' || c == '-'))
        .unwrap_or(trimmed.len());
    let (number, suffix) = trimmed.split_at(split);
    let (whole, fraction) = number.split_once('.').unwrap_or((number, ""));
    let digits: i64 = format!("{whole}{fraction}")
        .trim_start_matches('+')
        .parse()
        .unwrap_or(0);
    let binary = |power: u32| digits.checked_mul(1i64 << (10 * power));
    let decimal = |exp: i32| Some((digits, exp - fraction.len() as i32));
    let (amount, format) = match suffix {
        "Ki" => (binary(1).map(|v| (v, 0)), "BinarySI"),
        "Mi" => (binary(2).map(|v| (v, 0)), "BinarySI"),
        "Gi" => (binary(3).map(|v| (v, 0)), "BinarySI"),
        "Ti" => (binary(4).map(|v| (v, 0)), "BinarySI"),
        "n" => (decimal(-9), "DecimalSI"),
        "u" => (decimal(-6), "DecimalSI"),
        "m" => (decimal(-3), "DecimalSI"),
        "" => (decimal(0), "DecimalSI"),
        "k" => (decimal(3), "DecimalSI"),
        "M" => (decimal(6), "DecimalSI"),
        "G" => (decimal(9), "DecimalSI"),
        "T" => (decimal(12), "DecimalSI"),
        _ => (decimal(0), "DecimalExponent"),
    };
    let (value, scale) = amount.unwrap_or((0, 0));
    format!(
        "resource.Quantity{{i:resource.int64Amount{{value:{value}, scale:{scale}}}, d:resource.infDecAmount{{Dec:(*inf.Dec)(nil)}}, s:{canonical:?}, Format:{format:?}}}"
    )
}
