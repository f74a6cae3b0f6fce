//! Field paths and sets of them, as kube-apiserver records ownership in
//! `managedFields` (the `FieldsV1` encoding of structured-merge-diff).
//!
//! A path is a sequence of elements: a field name (`f:spec`), a list item
//! identified by its key fields (`k:{"name":"app"}`), a set member identified
//! by its value (`v:"example.com/hold"`) or a position (`i:0`). A [`Set`] is a
//! tree of such elements in which a node may itself be a member (`.` in
//! `FieldsV1`) and may have children.

use std::cmp::Ordering;
use std::collections::{BTreeMap, BTreeSet};

use serde_json::{Map, Value};

use crate::gofmt;

/// One step of a field path.
#[derive(Debug, Clone)]
pub(super) enum PathElement {
    /// A field of an object (struct field or map key).
    Field(String),
    /// An item of a list of objects, identified by its key fields (sorted by name).
    Key(Vec<(String, Value)>),
    /// An item of a set, identified by its value.
    Value(Value),
    /// An item of a list identified by position only.
    Index(usize),
}

impl PathElement {
    pub(super) fn field(name: &str) -> PathElement {
        PathElement::Field(name.to_string())
    }

    fn rank(&self) -> u8 {
        match self {
            PathElement::Field(_) => 0,
            PathElement::Key(_) => 1,
            PathElement::Value(_) => 2,
            PathElement::Index(_) => 3,
        }
    }

    /// The `FieldsV1` key of this element (`f:name`, `k:{...}`, `v:...`, `i:N`).
    pub(super) fn to_fields_key(&self) -> String {
        match self {
            PathElement::Field(name) => format!("f:{name}"),
            PathElement::Key(fields) => {
                let body = fields
                    .iter()
                    .map(|(name, value)| {
                        format!("{}:{}", gofmt::json_string(name), gofmt::json(value))
                    })
                    .collect::<Vec<_>>()
                    .join(",");
                format!("k:{{{body}}}")
            }
            PathElement::Value(value) => format!("v:{}", gofmt::json(value)),
            PathElement::Index(i) => format!("i:{i}"),
        }
    }

    /// Parses a `FieldsV1` key. `Ok(None)` for an unknown element type, which
    /// the real server skips.
    pub(super) fn from_fields_key(key: &str) -> Result<Option<PathElement>, String> {
        let (kind, rest) = match (key.get(..1), key.get(1..2), key.get(2..)) {
            (Some(kind), Some(":"), Some(rest)) => (kind, rest),
            _ if key.len() < 2 => return Err(format!("key must be 2 characters long: {key}")),
            _ => return Err(format!("missing colon: {key}")),
        };
        match kind {
            "f" => Ok(Some(PathElement::Field(rest.to_string()))),
            "v" => serde_json::from_str::<Value>(rest)
                .map(|v| Some(PathElement::Value(v)))
                .map_err(|e| format!("parsing value element {rest:?}: {e}")),
            "k" => {
                let parsed: Value = serde_json::from_str(rest)
                    .map_err(|e| format!("parsing key element {rest:?}: {e}"))?;
                let Value::Object(map) = parsed else {
                    return Err(format!("key element {rest:?} is not an object"));
                };
                let mut fields: Vec<(String, Value)> = map.into_iter().collect();
                fields.sort_by(|a, b| a.0.cmp(&b.0));
                Ok(Some(PathElement::Key(fields)))
            }
            "i" => rest
                .parse::<usize>()
                .map(|i| Some(PathElement::Index(i)))
                .map_err(|e| format!("parsing index element {rest:?}: {e}")),
            _ => Ok(None),
        }
    }
}

/// The conflict-message form of a path element: `.name`, `[name="app"]`, `[=value]`, `[0]`.
impl std::fmt::Display for PathElement {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            PathElement::Field(name) => write!(f, ".{name}"),
            PathElement::Key(fields) => {
                let parts = fields
                    .iter()
                    .map(|(name, value)| format!("{name}={}", smd_to_string(value)))
                    .collect::<Vec<_>>();
                write!(f, "[{}]", parts.join(","))
            }
            PathElement::Value(value) => write!(f, "[={}]", smd_to_string(value)),
            PathElement::Index(i) => write!(f, "[{i}]"),
        }
    }
}

/// How structured-merge-diff prints a value inside a path.
fn smd_to_string(value: &Value) -> String {
    match value {
        Value::Null => "null".to_string(),
        Value::String(s) => gofmt::quote(s),
        Value::Number(n) => gofmt::number(n),
        Value::Bool(b) => b.to_string(),
        Value::Array(items) => format!(
            "[{}]",
            items
                .iter()
                .map(smd_to_string)
                .collect::<Vec<_>>()
                .join(",")
        ),
        Value::Object(map) => map
            .iter()
            .map(|(k, v)| format!("{k}={}", smd_to_string(v)))
            .collect::<String>(),
    }
}

impl PartialEq for PathElement {
    fn eq(&self, other: &Self) -> bool {
        self.cmp(other) == Ordering::Equal
    }
}

impl Eq for PathElement {}

impl PartialOrd for PathElement {
    fn partial_cmp(&self, other: &Self) -> Option<Ordering> {
        Some(self.cmp(other))
    }
}

/// The order structured-merge-diff sorts elements in (and so `FieldsV1` keys):
/// fields, then keys, then values, then indices.
impl Ord for PathElement {
    fn cmp(&self, other: &Self) -> Ordering {
        match (self, other) {
            (PathElement::Field(a), PathElement::Field(b)) => a.cmp(b),
            (PathElement::Key(a), PathElement::Key(b)) => compare_field_lists(a, b),
            (PathElement::Value(a), PathElement::Value(b)) => compare_values(a, b),
            (PathElement::Index(a), PathElement::Index(b)) => a.cmp(b),
            _ => self.rank().cmp(&other.rank()),
        }
    }
}

fn compare_field_lists(a: &[(String, Value)], b: &[(String, Value)]) -> Ordering {
    for (x, y) in a.iter().zip(b.iter()) {
        let ord = x.0.cmp(&y.0).then_with(|| compare_values(&x.1, &y.1));
        if ord != Ordering::Equal {
            return ord;
        }
    }
    a.len().cmp(&b.len())
}

fn value_rank(v: &Value) -> u8 {
    match v {
        Value::Number(_) => 0,
        Value::String(_) => 1,
        Value::Bool(_) => 2,
        Value::Array(_) => 3,
        Value::Object(_) => 4,
        Value::Null => 5,
    }
}

/// A total order over JSON values (structured-merge-diff's): numbers (ints and
/// floats compared numerically), strings, booleans, lists, maps, null.
pub(super) fn compare_values(a: &Value, b: &Value) -> Ordering {
    match (a, b) {
        (Value::Number(x), Value::Number(y)) => compare_numbers(x, y),
        (Value::String(x), Value::String(y)) => x.cmp(y),
        (Value::Bool(x), Value::Bool(y)) => x.cmp(y),
        (Value::Array(x), Value::Array(y)) => {
            for (p, q) in x.iter().zip(y.iter()) {
                let ord = compare_values(p, q);
                if ord != Ordering::Equal {
                    return ord;
                }
            }
            x.len().cmp(&y.len())
        }
        (Value::Object(x), Value::Object(y)) => compare_maps(x, y),
        (Value::Null, Value::Null) => Ordering::Equal,
        _ => value_rank(a).cmp(&value_rank(b)),
    }
}

fn compare_numbers(x: &serde_json::Number, y: &serde_json::Number) -> Ordering {
    if let (Some(a), Some(b)) = (x.as_i64(), y.as_i64()) {
        return a.cmp(&b);
    }
    if let (Some(a), Some(b)) = (x.as_u64(), y.as_u64()) {
        return a.cmp(&b);
    }
    let a = x.as_f64().unwrap_or(0.0);
    let b = y.as_f64().unwrap_or(0.0);
    a.partial_cmp(&b).unwrap_or(Ordering::Equal)
}

fn compare_maps(x: &Map<String, Value>, y: &Map<String, Value>) -> Ordering {
    let keys: BTreeSet<&String> = x.keys().chain(y.keys()).collect();
    for key in keys {
        match (x.get(key), y.get(key)) {
            (None, Some(_)) => return Ordering::Greater,
            (Some(_), None) => return Ordering::Less,
            (Some(a), Some(b)) => {
                let ord = compare_values(a, b);
                if ord != Ordering::Equal {
                    return ord;
                }
            }
            (None, None) => {}
        }
    }
    Ordering::Equal
}

/// Equality as structured-merge-diff sees it (numbers compared numerically).
pub(super) fn values_equal(a: &Value, b: &Value) -> bool {
    match (a, b) {
        (Value::Object(x), Value::Object(y)) => {
            x.len() == y.len()
                && x.iter()
                    .all(|(k, v)| y.get(k).is_some_and(|w| values_equal(v, w)))
        }
        (Value::Array(x), Value::Array(y)) => {
            x.len() == y.len() && x.iter().zip(y.iter()).all(|(v, w)| values_equal(v, w))
        }
        _ => compare_values(a, b) == Ordering::Equal,
    }
}

/// A field path.
pub(super) type Path = Vec<PathElement>;

/// `.spec.containers[name="app"].image`.
pub(super) fn path_string(path: &[PathElement]) -> String {
    path.iter().map(|pe| pe.to_string()).collect()
}

/// A set of field paths, stored as a tree.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub(super) struct Set {
    members: BTreeSet<PathElement>,
    /// Never holds an empty set.
    children: BTreeMap<PathElement, Set>,
}

impl Set {
    pub(super) fn new() -> Set {
        Set::default()
    }

    pub(super) fn is_empty(&self) -> bool {
        self.members.is_empty() && self.children.is_empty()
    }

    pub(super) fn insert(&mut self, path: &[PathElement]) {
        match path {
            [] => {}
            [last] => {
                self.members.insert(last.clone());
            }
            [first, rest @ ..] => self.children.entry(first.clone()).or_default().insert(rest),
        }
    }

    /// Whether `path` itself is a member.
    pub(super) fn has(&self, path: &[PathElement]) -> bool {
        match path {
            [] => false,
            [last] => self.members.contains(last),
            [first, rest @ ..] => self.children.get(first).is_some_and(|c| c.has(rest)),
        }
    }

    /// The paths below `pe`, with `pe` left off.
    pub(super) fn child(&self, pe: &PathElement) -> Option<&Set> {
        self.children.get(pe)
    }

    pub(super) fn union(&self, other: &Set) -> Set {
        let mut out = self.clone();
        out.members.extend(other.members.iter().cloned());
        for (pe, child) in &other.children {
            let merged = match out.children.get(pe) {
                Some(mine) => mine.union(child),
                None => child.clone(),
            };
            out.children.insert(pe.clone(), merged);
        }
        out
    }

    pub(super) fn intersection(&self, other: &Set) -> Set {
        let members = self.members.intersection(&other.members).cloned().collect();
        let mut children = BTreeMap::new();
        for (pe, child) in &self.children {
            if let Some(theirs) = other.children.get(pe) {
                let both = child.intersection(theirs);
                if !both.is_empty() {
                    children.insert(pe.clone(), both);
                }
            }
        }
        Set { members, children }
    }

    /// Members of `self` that are not members of `other` (node by node).
    pub(super) fn difference(&self, other: &Set) -> Set {
        let members = self.members.difference(&other.members).cloned().collect();
        let mut children = BTreeMap::new();
        for (pe, child) in &self.children {
            let rest = match other.children.get(pe) {
                Some(theirs) => child.difference(theirs),
                None => child.clone(),
            };
            if !rest.is_empty() {
                children.insert(pe.clone(), rest);
            }
        }
        Set { members, children }
    }

    /// Like [`Set::difference`], but a member of `other` also removes
    /// everything below it.
    pub(super) fn recursive_difference(&self, other: &Set) -> Set {
        let members = self.members.difference(&other.members).cloned().collect();
        let mut children = BTreeMap::new();
        for (pe, child) in &self.children {
            if other.members.contains(pe) {
                continue;
            }
            let rest = match other.children.get(pe) {
                Some(theirs) => child.recursive_difference(theirs),
                None => child.clone(),
            };
            if !rest.is_empty() {
                children.insert(pe.clone(), rest);
            }
        }
        Set { members, children }
    }

    /// Only the paths at or below `pe` (the `status` of a status subresource).
    pub(super) fn restricted_to(&self, pe: &PathElement) -> Set {
        let mut out = Set::new();
        if self.members.contains(pe) {
            out.members.insert(pe.clone());
        }
        if let Some(child) = self.children.get(pe) {
            out.children.insert(pe.clone(), child.clone());
        }
        out
    }

    /// Makes every field-name node that has children a member too (the real
    /// server does this for struct fields when deciding what an applier removes).
    pub(super) fn ensure_named_fields_are_members(&self) -> Set {
        let mut members = self.members.clone();
        let mut children = BTreeMap::new();
        for (pe, child) in &self.children {
            if matches!(pe, PathElement::Field(_)) {
                members.insert(pe.clone());
            }
            children.insert(pe.clone(), child.ensure_named_fields_are_members());
        }
        Set { members, children }
    }

    /// Every member path: a node's members first, then its children's, in order.
    pub(super) fn paths(&self) -> Vec<Path> {
        let mut out = Vec::new();
        self.collect_paths(&mut Vec::new(), &mut out);
        out
    }

    fn collect_paths(&self, prefix: &mut Path, out: &mut Vec<Path>) {
        for pe in &self.members {
            let mut path = prefix.clone();
            path.push(pe.clone());
            out.push(path);
        }
        for (pe, child) in &self.children {
            prefix.push(pe.clone());
            child.collect_paths(prefix, out);
            prefix.pop();
        }
    }

    /// The `FieldsV1` JSON object of this set.
    pub(super) fn to_fields_v1(&self) -> Value {
        Value::Object(self.emit(false))
    }

    fn emit(&self, include_self: bool) -> Map<String, Value> {
        let mut out = Map::new();
        if include_self {
            out.insert(".".to_string(), Value::Object(Map::new()));
        }
        let mut members = self.members.iter().peekable();
        let mut children = self.children.iter().peekable();
        loop {
            let take_member = match (members.peek(), children.peek()) {
                (None, None) => break,
                (Some(_), None) => true,
                (None, Some(_)) => false,
                (Some(m), Some((c, _))) => *m < *c,
            };
            if take_member {
                if let Some(pe) = members.next() {
                    out.insert(pe.to_fields_key(), Value::Object(Map::new()));
                }
                continue;
            }
            if let Some((pe, child)) = children.next() {
                let is_member = self.members.contains(pe);
                if is_member {
                    members.next();
                }
                out.insert(pe.to_fields_key(), Value::Object(child.emit(is_member)));
            }
        }
        out
    }

    /// Parses a `FieldsV1` object.
    pub(super) fn from_fields_v1(value: &Value) -> Result<Set, String> {
        let (set, _) = read_fields(value, 0)?;
        Ok(set)
    }
}

fn read_fields(value: &Value, depth: usize) -> Result<(Set, bool), String> {
    if depth > super::MAX_DEPTH {
        return Err("fieldsV1 nested too deeply".to_string());
    }
    let Value::Object(map) = value else {
        return Err(format!(
            "fieldsV1 must be an object, found {}",
            gofmt::json(value)
        ));
    };
    let mut set = Set::new();
    let mut is_member = false;
    for (key, sub) in map {
        if key == "." {
            is_member = true;
            continue;
        }
        let Some(pe) = PathElement::from_fields_key(key)? else {
            continue;
        };
        let (grandchildren, child_is_member) = read_fields(sub, depth + 1)?;
        if child_is_member {
            set.members.insert(pe.clone());
        }
        if !grandchildren.is_empty() {
            set.children.insert(pe, grandchildren);
        }
    }
    // A node with nothing below it is a leaf member (`"f:x": {}`).
    if set.is_empty() {
        is_member = true;
    }
    Ok((set, is_member))
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn f(name: &str) -> PathElement {
        PathElement::field(name)
    }

    #[test]
    fn fields_v1_round_trip_keeps_the_recorded_shape() {
        let recorded = json!({
            "f:spec": {
                "f:ports": {
                    ".": {},
                    "k:{\"port\":80,\"protocol\":\"TCP\"}": {".": {}, "f:port": {}, "f:protocol": {}}
                },
                "f:selector": {}
            },
            "f:metadata": {"f:finalizers": {".": {}, "v:\"example.com/hold\"": {}}}
        });
        let set = Set::from_fields_v1(&recorded).expect("valid fieldsV1");
        assert!(set.has(&[f("spec"), f("selector")]));
        assert!(set.has(&[f("spec"), f("ports")]));
        assert!(!set.has(&[f("spec")]));
        let encoded = set.to_fields_v1();
        assert_eq!(encoded, recorded);
        // Keys come out sorted as the real server sorts them.
        let keys: Vec<&String> = encoded
            .as_object()
            .map(|m| m.keys().collect())
            .unwrap_or_default();
        assert_eq!(keys, vec!["f:metadata", "f:spec"]);
    }

    #[test]
    fn key_elements_sort_fields_by_name_and_print_like_go() {
        let pe = PathElement::from_fields_key("k:{\"protocol\":\"TCP\",\"port\":80}")
            .expect("parses")
            .expect("known element");
        assert_eq!(pe.to_fields_key(), "k:{\"port\":80,\"protocol\":\"TCP\"}");
        assert_eq!(pe.to_string(), "[port=80,protocol=\"TCP\"]");
        assert_eq!(
            path_string(&[f("data"), f("k1")]),
            ".data.k1",
            "conflict paths start with a dot"
        );
    }

    #[test]
    fn element_order_is_fields_keys_values_indices() {
        let mut all = [
            PathElement::Index(0),
            PathElement::Value(json!("a")),
            PathElement::Key(vec![("name".into(), json!("x"))]),
            f("z"),
            f("a"),
        ];
        all.sort();
        assert_eq!(
            all.iter().map(|p| p.to_fields_key()).collect::<Vec<_>>(),
            vec!["f:a", "f:z", "k:{\"name\":\"x\"}", "v:\"a\"", "i:0"]
        );
        assert_eq!(compare_values(&json!(1), &json!(1.0)), Ordering::Equal);
        assert_eq!(compare_values(&json!(2), &json!("1")), Ordering::Less);
    }

    #[test]
    fn set_algebra() {
        let mut a = Set::new();
        a.insert(&[f("data"), f("k1")]);
        a.insert(&[f("data"), f("k2")]);
        let mut b = Set::new();
        b.insert(&[f("data"), f("k2")]);
        b.insert(&[f("data")]);
        assert_eq!(a.difference(&b).paths(), vec![vec![f("data"), f("k1")]]);
        assert!(a.recursive_difference(&b).is_empty());
        assert_eq!(a.intersection(&b).paths(), vec![vec![f("data"), f("k2")]]);
        let u = a.union(&b);
        assert!(u.has(&[f("data")]) && u.has(&[f("data"), f("k1")]));
        assert!(a.ensure_named_fields_are_members().has(&[f("data")]));
        assert_eq!(
            u.to_fields_v1(),
            json!({"f:data": {".": {}, "f:k1": {}, "f:k2": {}}})
        );
    }

    #[test]
    fn malformed_fields_are_errors_and_unknown_kinds_are_skipped() {
        assert!(Set::from_fields_v1(&json!({"f:a": 1})).is_err());
        assert!(Set::from_fields_v1(&json!({"x": {}})).is_err());
        assert!(Set::from_fields_v1(&json!({"k:[1]": {}})).is_err());
        let set = Set::from_fields_v1(&json!({"z:thing": {}, "f:a": {}})).expect("valid");
        assert_eq!(set.paths(), vec![vec![f("a")]]);
    }
}
