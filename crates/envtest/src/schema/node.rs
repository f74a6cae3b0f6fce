//! The `openAPIV3Schema` of a CRD as a typed tree (Go's `JSONSchemaProps`).
//!
//! Parsing never fails: a keyword of the wrong JSON type is recorded in
//! `decode_errors` (the CRD validator turns those into causes) and otherwise
//! treated as absent, so arbitrary input cannot panic anything downstream.

use std::collections::BTreeMap;

use regex::Regex;
use serde_json::{Map, Value};

use super::fielderr::{BadValue, FieldError, FieldPath};

/// `additionalProperties`: a boolean or a schema.
#[derive(Debug, Clone)]
pub(crate) enum AdditionalProperties {
    Bool(bool),
    Schema(Box<Schema>),
}

/// One `x-kubernetes-validations` rule.
#[derive(Debug, Clone, Default)]
pub(crate) struct Rule {
    pub rule: String,
    pub message: String,
    pub message_expression: String,
    pub reason: Option<String>,
    pub field_path: String,
    pub optional_old_self: Option<bool>,
}

/// One schema node.
#[derive(Debug, Clone, Default)]
pub(crate) struct Schema {
    pub type_: String,
    pub format: String,
    pub title: String,
    pub description: String,
    pub default: Option<Value>,
    pub example: Option<Value>,
    pub external_docs: bool,
    pub nullable: bool,
    pub maximum: Option<f64>,
    pub exclusive_maximum: bool,
    pub minimum: Option<f64>,
    pub exclusive_minimum: bool,
    pub max_length: Option<i64>,
    pub min_length: Option<i64>,
    pub pattern: String,
    pub pattern_re: Option<Result<Regex, String>>,
    pub max_items: Option<i64>,
    pub min_items: Option<i64>,
    pub unique_items: bool,
    pub multiple_of: Option<f64>,
    pub max_properties: Option<i64>,
    pub min_properties: Option<i64>,
    pub required: Vec<String>,
    pub enum_: Vec<Value>,
    pub has_enum: bool,
    pub items: Option<Box<Schema>>,
    /// `items` given as an array of schemas (not supported).
    pub items_array: Option<Vec<Schema>>,
    pub all_of: Vec<Schema>,
    pub one_of: Vec<Schema>,
    pub any_of: Vec<Schema>,
    pub not: Option<Box<Schema>>,
    pub properties: BTreeMap<String, Schema>,
    pub has_properties: bool,
    pub additional_properties: Option<AdditionalProperties>,
    pub x_preserve_unknown_fields: Option<bool>,
    pub x_embedded_resource: bool,
    pub x_int_or_string: bool,
    pub x_list_map_keys: Vec<String>,
    pub x_list_type: Option<String>,
    pub x_map_type: Option<String>,
    pub x_validations: Vec<Rule>,
    // Unsupported keywords (rejected by the CRD validator).
    pub id: String,
    pub schema_uri: String,
    pub ref_: Option<String>,
    pub pattern_properties: bool,
    pub dependencies: bool,
    pub additional_items: bool,
    pub definitions: bool,
    /// Keywords of the wrong JSON type.
    pub decode_errors: Vec<FieldError>,
}

impl Schema {
    /// Parses a schema; `path` locates it for decode errors.
    pub(crate) fn parse(v: &Value, path: &FieldPath) -> Schema {
        let mut s = Schema::default();
        let Some(m) = v.as_object() else {
            s.decode_errors.push(FieldError::invalid(
                path,
                BadValue::of(v),
                "must be an object",
            ));
            return s;
        };
        let mut p = Parser {
            m,
            path,
            errs: Vec::new(),
        };
        s.type_ = p.string("type");
        s.format = p.string("format");
        s.title = p.string("title");
        s.description = p.string("description");
        s.default = p.value("default");
        s.example = p.value("example");
        s.external_docs = m.get("externalDocs").is_some_and(|v| !v.is_null());
        s.nullable = p.boolean("nullable");
        s.maximum = p.number("maximum");
        s.exclusive_maximum = p.boolean("exclusiveMaximum");
        s.minimum = p.number("minimum");
        s.exclusive_minimum = p.boolean("exclusiveMinimum");
        s.max_length = p.integer("maxLength");
        s.min_length = p.integer("minLength");
        s.pattern = p.string("pattern");
        if !s.pattern.is_empty() {
            s.pattern_re = Some(Regex::new(&s.pattern).map_err(|e| go_regex_error(&e)));
        }
        s.max_items = p.integer("maxItems");
        s.min_items = p.integer("minItems");
        s.unique_items = p.boolean("uniqueItems");
        s.multiple_of = p.number("multipleOf");
        s.max_properties = p.integer("maxProperties");
        s.min_properties = p.integer("minProperties");
        s.required = p.strings("required");
        if let Some(e) = m.get("enum") {
            match e {
                Value::Array(a) => {
                    s.enum_ = a.clone();
                    s.has_enum = true;
                }
                Value::Null => {}
                other => p.wrong("enum", other, "must be an array"),
            }
        }
        match m.get("items") {
            None | Some(Value::Null) => {}
            Some(Value::Array(a)) => {
                let ip = path.child("items");
                s.items_array = Some(
                    a.iter()
                        .enumerate()
                        .map(|(i, x)| Schema::parse(x, &ip.index(i)))
                        .collect(),
                );
            }
            Some(other) => s.items = Some(Box::new(Schema::parse(other, &path.child("items")))),
        }
        s.all_of = p.schemas("allOf");
        s.one_of = p.schemas("oneOf");
        s.any_of = p.schemas("anyOf");
        if let Some(n) = m.get("not").filter(|v| !v.is_null()) {
            s.not = Some(Box::new(Schema::parse(n, &path.child("not"))));
        }
        match m.get("properties") {
            None | Some(Value::Null) => {}
            Some(Value::Object(props)) => {
                s.has_properties = true;
                let pp = path.child("properties");
                for (k, v) in props {
                    s.properties.insert(k.clone(), Schema::parse(v, &pp.key(k)));
                }
            }
            Some(other) => p.wrong("properties", other, "must be an object"),
        }
        match m.get("additionalProperties") {
            None | Some(Value::Null) => {}
            Some(Value::Bool(b)) => s.additional_properties = Some(AdditionalProperties::Bool(*b)),
            Some(other) => {
                s.additional_properties = Some(AdditionalProperties::Schema(Box::new(
                    Schema::parse(other, &path.child("additionalProperties")),
                )))
            }
        }
        match m.get("x-kubernetes-preserve-unknown-fields") {
            None | Some(Value::Null) => {}
            Some(Value::Bool(b)) => s.x_preserve_unknown_fields = Some(*b),
            Some(other) => p.wrong(
                "x-kubernetes-preserve-unknown-fields",
                other,
                "must be a boolean",
            ),
        }
        s.x_embedded_resource = p.boolean("x-kubernetes-embedded-resource");
        s.x_int_or_string = p.boolean("x-kubernetes-int-or-string");
        s.x_list_map_keys = p.strings("x-kubernetes-list-map-keys");
        s.x_list_type = p.opt_string("x-kubernetes-list-type");
        s.x_map_type = p.opt_string("x-kubernetes-map-type");
        match m.get("x-kubernetes-validations") {
            None | Some(Value::Null) => {}
            Some(Value::Array(rules)) => {
                let vp = path.child("x-kubernetes-validations");
                for (i, r) in rules.iter().enumerate() {
                    s.x_validations
                        .push(parse_rule(r, &vp.index(i), &mut p.errs));
                }
            }
            Some(other) => p.wrong("x-kubernetes-validations", other, "must be an array"),
        }
        s.id = p.string("id");
        s.schema_uri = p.string("$schema");
        s.ref_ = p.opt_string("$ref");
        s.pattern_properties = m
            .get("patternProperties")
            .is_some_and(|v| v.as_object().is_some_and(|o| !o.is_empty()));
        s.dependencies = m.get("dependencies").is_some_and(|v| !v.is_null());
        s.additional_items = m.get("additionalItems").is_some_and(|v| !v.is_null());
        s.definitions = m
            .get("definitions")
            .is_some_and(|v| v.as_object().is_some_and(|o| !o.is_empty()));
        s.decode_errors = p.errs;
        s
    }

    /// All decode errors of this node and its children.
    pub(crate) fn all_decode_errors(&self, out: &mut Vec<FieldError>) {
        out.extend(self.decode_errors.iter().cloned());
        self.for_each_child(&mut |c| c.all_decode_errors(out));
    }

    fn for_each_child(&self, f: &mut dyn FnMut(&Schema)) {
        if let Some(i) = &self.items {
            f(i);
        }
        for i in self.items_array.iter().flatten() {
            f(i);
        }
        for c in self.all_of.iter().chain(&self.one_of).chain(&self.any_of) {
            f(c);
        }
        if let Some(n) = &self.not {
            f(n);
        }
        for c in self.properties.values() {
            f(c);
        }
        if let Some(AdditionalProperties::Schema(a)) = &self.additional_properties {
            f(a);
        }
    }

    /// Whether any node satisfies `pred` (Go's `SchemaHas`).
    pub(crate) fn has(&self, pred: &dyn Fn(&Schema) -> bool) -> bool {
        if pred(self) {
            return true;
        }
        let mut found = false;
        self.for_each_child(&mut |c| {
            if !found && c.has(pred) {
                found = true;
            }
        });
        found
    }

    pub(crate) fn preserve_unknown(&self) -> bool {
        self.x_preserve_unknown_fields == Some(true)
    }

    /// The schema of additional properties, when given as a schema.
    pub(crate) fn additional_schema(&self) -> Option<&Schema> {
        match &self.additional_properties {
            Some(AdditionalProperties::Schema(s)) => Some(s),
            _ => None,
        }
    }

    /// Whether additional properties are declared at all (`true` or a schema).
    pub(crate) fn has_additional(&self) -> bool {
        self.additional_properties.is_some()
    }
}

struct Parser<'a> {
    m: &'a Map<String, Value>,
    path: &'a FieldPath,
    errs: Vec<FieldError>,
}

impl Parser<'_> {
    fn wrong(&mut self, key: &str, v: &Value, detail: &str) {
        self.errs.push(FieldError::invalid(
            &self.path.child(key),
            BadValue::of(v),
            detail,
        ));
    }

    fn opt_string(&mut self, key: &str) -> Option<String> {
        match self.m.get(key) {
            None | Some(Value::Null) => None,
            Some(Value::String(s)) => Some(s.clone()),
            Some(other) => {
                self.wrong(key, other, "must be a string");
                None
            }
        }
    }

    fn string(&mut self, key: &str) -> String {
        self.opt_string(key).unwrap_or_default()
    }

    fn value(&mut self, key: &str) -> Option<Value> {
        match self.m.get(key) {
            None | Some(Value::Null) => None,
            Some(v) => Some(v.clone()),
        }
    }

    fn boolean(&mut self, key: &str) -> bool {
        match self.m.get(key) {
            None | Some(Value::Null) => false,
            Some(Value::Bool(b)) => *b,
            Some(other) => {
                self.wrong(key, other, "must be a boolean");
                false
            }
        }
    }

    fn number(&mut self, key: &str) -> Option<f64> {
        match self.m.get(key) {
            None | Some(Value::Null) => None,
            Some(Value::Number(n)) => n.as_f64(),
            Some(other) => {
                self.wrong(key, other, "must be a number");
                None
            }
        }
    }

    fn integer(&mut self, key: &str) -> Option<i64> {
        match self.m.get(key) {
            None | Some(Value::Null) => None,
            Some(Value::Number(n)) if n.as_i64().is_some() => n.as_i64(),
            Some(other) => {
                self.wrong(key, other, "must be an integer");
                None
            }
        }
    }

    fn strings(&mut self, key: &str) -> Vec<String> {
        match self.m.get(key) {
            None | Some(Value::Null) => Vec::new(),
            Some(Value::Array(a)) if a.iter().all(Value::is_string) => a
                .iter()
                .filter_map(|x| x.as_str().map(str::to_string))
                .collect(),
            Some(other) => {
                self.wrong(key, other, "must be an array of strings");
                Vec::new()
            }
        }
    }

    fn schemas(&mut self, key: &str) -> Vec<Schema> {
        match self.m.get(key) {
            None | Some(Value::Null) => Vec::new(),
            Some(Value::Array(a)) => {
                let p = self.path.child(key);
                a.iter()
                    .enumerate()
                    .map(|(i, x)| Schema::parse(x, &p.index(i)))
                    .collect()
            }
            Some(other) => {
                self.wrong(key, other, "must be an array");
                Vec::new()
            }
        }
    }
}

fn parse_rule(v: &Value, path: &FieldPath, errs: &mut Vec<FieldError>) -> Rule {
    let mut r = Rule::default();
    let Some(m) = v.as_object() else {
        errs.push(FieldError::invalid(
            path,
            BadValue::of(v),
            "must be an object",
        ));
        return r;
    };
    let mut p = Parser {
        m,
        path,
        errs: Vec::new(),
    };
    r.rule = p.string("rule");
    r.message = p.string("message");
    r.message_expression = p.string("messageExpression");
    r.reason = p.opt_string("reason");
    r.field_path = p.string("fieldPath");
    r.optional_old_self = match m.get("optionalOldSelf") {
        Some(Value::Bool(b)) => Some(*b),
        None | Some(Value::Null) => None,
        Some(other) => {
            p.wrong("optionalOldSelf", other, "must be a boolean");
            None
        }
    };
    errs.extend(p.errs);
    r
}

/// A regex error in the words Go's `regexp` would use where they are close.
/// The regex crate's message spans several lines; a cause needs one.
fn go_regex_error(e: &regex::Error) -> String {
    let text = e.to_string();
    let last = text
        .lines()
        .rev()
        .find(|l| !l.trim().is_empty())
        .unwrap_or("");
    format!(
        "error parsing regexp: {}",
        last.trim_start_matches("error: ").trim()
    )
}
