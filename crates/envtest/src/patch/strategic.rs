//! Strategic merge patch for built-in kinds, following kube-apiserver's
//! `strategicpatch` package: lists merged per the field's patch strategy,
//! the `$patch`, `$retainKeys`, `$setElementOrder/` and
//! `$deleteFromPrimitiveList/` directives, and its element order.

use serde_json::{Map, Value};

use super::gosort::slice_stable;
use super::shape::Shape;
use super::{MAX_DEPTH, exceeds_depth};
use crate::error::{ApiError, ApiResult, Details};
use crate::gofmt::{self, go_v};
use crate::typeinfo::{PatchStrategy, TypeInfo};

const DIRECTIVE: &str = "$patch";
const RETAIN_KEYS: &str = "$retainKeys";
const DELETE_FROM_PRIMITIVE_LIST: &str = "$deleteFromPrimitiveList";
const SET_ELEMENT_ORDER: &str = "$setElementOrder";

/// How the real server classifies strategic-merge-patch failures.
#[derive(Debug)]
enum SmpError {
    /// 400 with the message.
    BadRequest(&'static str),
    /// The generic 422.
    Invalid,
    /// Anything else reaches the client as a 500 without a reason.
    Internal(String),
}

impl From<SmpError> for ApiError {
    fn from(e: SmpError) -> ApiError {
        match e {
            SmpError::BadRequest(msg) => ApiError::bad_request(msg),
            SmpError::Invalid => ApiError::new(
                422,
                "Invalid",
                "the server rejected our request due to an error in our request",
            )
            .with_details(Details::default()),
            SmpError::Internal(msg) => ApiError::new(500, "", msg),
        }
    }
}

type SmpResult<T> = Result<T, SmpError>;

const BAD_PRIMITIVE_LIST: SmpError = SmpError::BadRequest("invalid patch format of primitive list");
const BAD_RETAIN_KEYS: SmpError = SmpError::BadRequest("invalid patch format of retainKeys");
const BAD_SET_ELEMENT_ORDER: SmpError =
    SmpError::BadRequest("invalid patch format of setElementOrder list");

fn no_merge_key(map: &Map<String, Value>, key: &str) -> SmpError {
    SmpError::Internal(format!(
        "map: {} does not contain declared merge key: {key}",
        go_v(&Value::Object(map.clone()))
    ))
}

fn bad_arg_type(expected: &str, actual: &Value) -> SmpError {
    let actual = match actual {
        Value::Null => "%!s(<nil>)",
        other => gofmt::go_type(other),
    };
    SmpError::Internal(format!("expected a {expected}, but received a {actual}"))
}

fn bad_patch_type(directive: &Value, map: &Map<String, Value>) -> SmpError {
    SmpError::Internal(format!(
        "unknown patch type: {} in map: {}",
        go_v(directive),
        go_v(&Value::Object(map.clone()))
    ))
}

/// The Go type of a decoded value, for "same type" checks (ints and floats differ).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum GoType {
    Nil,
    Bool,
    Int,
    Float,
    String,
    Slice,
    Map,
}

fn go_type(v: &Value) -> GoType {
    match v {
        Value::Null => GoType::Nil,
        Value::Bool(_) => GoType::Bool,
        Value::Number(n) if n.is_i64() => GoType::Int,
        Value::Number(_) => GoType::Float,
        Value::String(_) => GoType::String,
        Value::Array(_) => GoType::Slice,
        Value::Object(_) => GoType::Map,
    }
}

/// Go's `==` on two decoded values: same type and value; maps and slices never
/// compare equal here (Go would panic).
fn go_eq(a: Option<&Value>, b: Option<&Value>) -> bool {
    match (a, b) {
        (None, None) => true,
        (Some(x), Some(y)) => {
            go_type(x) == go_type(y) && !matches!(x, Value::Array(_) | Value::Object(_)) && x == y
        }
        (None, Some(Value::Null)) | (Some(Value::Null), None) => true,
        _ => false,
    }
}

pub(super) fn apply(doc: &Value, body: &[u8], types: &dyn TypeInfo) -> ApiResult<Value> {
    let patch = match gofmt::parse_json(body).map_err(ApiError::bad_request)? {
        Value::Object(map) => map,
        Value::Null => Map::new(),
        other => {
            return Err(ApiError::bad_request(gofmt::unmarshal_type_error(
                &other,
                "map[string]interface {}",
            )));
        }
    };
    let Value::Object(original) = doc else {
        return Err(ApiError::new(
            500,
            "",
            "the patched object is not an object",
        ));
    };
    if exceeds_depth(doc) {
        return Err(ApiError::new(
            500,
            "",
            "the patched object is nested too deeply",
        ));
    }
    let mut merger = Merger {
        shape: Shape::new(types),
        path: Vec::new(),
    };
    let merged = Value::Object(merger.merge_map(original.clone(), patch)?);
    if exceeds_depth(&merged) {
        return Err(SmpError::Invalid.into());
    }
    Ok(merged)
}

struct Merger<'a> {
    shape: Shape<'a>,
    /// Field names from the root, list positions left out.
    path: Vec<String>,
}

impl Merger<'_> {
    fn strategy(&self, key: &str) -> PatchStrategy {
        let mut path = self.path.clone();
        path.push(key.to_string());
        self.shape.patch_strategy(&path)
    }

    fn descend<T>(&mut self, key: &str, f: impl FnOnce(&mut Self) -> SmpResult<T>) -> SmpResult<T> {
        if self.path.len() > MAX_DEPTH {
            return Err(SmpError::Internal("patch nested too deeply".into()));
        }
        self.path.push(key.to_string());
        let out = f(self);
        self.path.pop();
        out
    }

    fn merge_map(
        &mut self,
        mut original: Map<String, Value>,
        mut patch: Map<String, Value>,
    ) -> SmpResult<Map<String, Value>> {
        if let Some(directive) = patch.get(DIRECTIVE).cloned() {
            return match directive.as_str() {
                Some("replace") => {
                    patch.remove(DIRECTIVE);
                    Ok(patch)
                }
                Some("delete") => Ok(Map::new()),
                _ => Err(bad_patch_type(&directive, &patch)),
            };
        }
        apply_retain_keys(&mut original, &mut patch)?;
        self.merge_set_element_order(&mut original, &mut patch)?;

        for (key, patch_value) in patch {
            let (key, is_delete_list) = match key.strip_prefix(DELETE_FROM_PRIMITIVE_LIST) {
                Some(rest) => match rest.strip_prefix('/') {
                    Some(list_key) => (list_key.to_string(), true),
                    None => return Err(BAD_PRIMITIVE_LIST),
                },
                None => (key, false),
            };
            if patch_value.is_null() {
                original.remove(&key);
                continue;
            }
            let Some(current) = original.get(&key) else {
                if !is_delete_list {
                    take_patch_value(&mut original, key, patch_value);
                }
                continue;
            };
            if go_type(current) != go_type(&patch_value) {
                if !is_delete_list {
                    take_patch_value(&mut original, key, patch_value);
                }
                continue;
            }
            match (current, patch_value) {
                (Value::Object(cur), Value::Object(p)) => {
                    let cur = cur.clone();
                    let merged = self.descend(&key, |m| m.merge_map(cur, p))?;
                    original.insert(key, Value::Object(merged));
                }
                (Value::Array(cur), Value::Array(p)) => {
                    let cur = cur.clone();
                    let strategy = self.strategy(&key);
                    let merged =
                        self.descend(&key, |m| m.merge_list(cur, p, &strategy, is_delete_list))?;
                    original.insert(key, Value::Array(merged));
                }
                (_, p) => match remove_directives(p) {
                    Some(v) => {
                        original.insert(key, v);
                    }
                    None => {
                        original.remove(&key);
                    }
                },
            }
        }
        Ok(original)
    }

    /// A list field: merged when its strategy says so (or for a deletion
    /// list), replaced by the patch otherwise.
    fn merge_list(
        &mut self,
        original: Vec<Value>,
        patch: Vec<Value>,
        strategy: &PatchStrategy,
        is_delete_list: bool,
    ) -> SmpResult<Vec<Value>> {
        match strategy {
            PatchStrategy::MergeByKey(key) => {
                self.merge_slice(original, patch, Some(key), is_delete_list)
            }
            PatchStrategy::MergeScalars => self.merge_slice(original, patch, None, is_delete_list),
            PatchStrategy::Replace if is_delete_list => {
                self.merge_slice(original, patch, None, true)
            }
            PatchStrategy::Replace => Ok(patch),
        }
    }

    fn merge_slice(
        &mut self,
        original: Vec<Value>,
        patch: Vec<Value>,
        merge_key: Option<&str>,
        is_delete_list: bool,
    ) -> SmpResult<Vec<Value>> {
        if original.is_empty() && patch.is_empty() {
            return Ok(original);
        }
        let kind = slice_element_type(&[&original, &patch])?;
        let (server_order, patch, merged) = if kind != GoType::Map {
            if is_delete_list {
                return Ok(delete_from_slice(original, &patch));
            }
            let mut both = original.clone();
            both.extend(patch.iter().cloned());
            (original, patch, deduplicate_scalars(both))
        } else {
            let Some(key) = merge_key else {
                let name = self.path.last().cloned().unwrap_or_default();
                return Err(SmpError::Internal(format!(
                    "cannot merge lists without merge key for {name}"
                )));
            };
            let (original, patch) = merge_special_elements(original, patch, key)?;
            let merged = self.merge_without_special_elements(original.clone(), &patch, key)?;
            (original, patch, merged)
        };
        let (patch_items, server_only) = match (kind, merge_key) {
            (GoType::Map, Some(key)) => partition_maps(merged, &patch, key)?,
            _ => partition_primitives(merged, &patch),
        };
        normalize_element_order(
            patch_items,
            server_only,
            &patch,
            &server_order,
            merge_key,
            kind,
        )
    }

    fn merge_without_special_elements(
        &mut self,
        mut original: Vec<Value>,
        patch: &[Value],
        key: &str,
    ) -> SmpResult<Vec<Value>> {
        for item in patch {
            let Value::Object(item_map) = item else {
                return Err(bad_arg_type("map[string]interface {}", item));
            };
            let Some(wanted) = item_map.get(key) else {
                return Err(no_merge_key(item_map, key));
            };
            match find_by_key(&original, key, wanted)? {
                Some(index) => {
                    let current = match original.get(index) {
                        Some(Value::Object(m)) => m.clone(),
                        _ => Map::new(),
                    };
                    let merged = self.merge_map(current, item_map.clone())?;
                    if let Some(slot) = original.get_mut(index) {
                        *slot = Value::Object(merged);
                    }
                }
                None => original.push(item.clone()),
            }
        }
        Ok(original)
    }

    /// `$setElementOrder/<field>`: merges that list (if patched) and orders
    /// it: the directive's order, then patch order, then live order.
    fn merge_set_element_order(
        &mut self,
        original: &mut Map<String, Value>,
        patch: &mut Map<String, Value>,
    ) -> SmpResult<()> {
        let keys: Vec<String> = patch
            .keys()
            .filter(|k| k.starts_with(SET_ELEMENT_ORDER))
            .cloned()
            .collect();
        for directive_key in keys {
            let Some(order_value) = patch.remove(&directive_key) else {
                continue;
            };
            let Value::Array(order) = order_value else {
                return Err(bad_arg_type("[]interface {}", &order_value));
            };
            let list_key = directive_key
                .strip_prefix(SET_ELEMENT_ORDER)
                .and_then(|rest| rest.strip_prefix('/'))
                .ok_or(BAD_SET_ELEMENT_ORDER)?
                .to_string();
            let original_list = match original.get(&list_key) {
                None => None,
                Some(Value::Array(items)) => Some(items.clone()),
                Some(other) => return Err(bad_arg_type("[]interface {}", other)),
            };
            let patch_list = match patch.get(&list_key) {
                None => None,
                Some(Value::Array(items)) => Some(items.clone()),
                Some(other) => return Err(bad_arg_type("[]interface {}", other)),
            };
            let strategy = self.strategy(&list_key);
            let merge_key = match &strategy {
                PatchStrategy::MergeByKey(k) => Some(k.clone()),
                _ => None,
            };
            validate_patch_with_order(patch_list.as_deref(), &order, merge_key.as_deref())?;
            let merged = match (&original_list, &patch_list) {
                (Some(o), None) => o.clone(),
                (None, Some(p)) => match remove_directives(Value::Array(p.clone())) {
                    Some(Value::Array(items)) => items,
                    _ => continue,
                },
                (Some(o), Some(p)) => {
                    let (o, p) = (o.clone(), p.clone());
                    self.descend(&list_key, |m| m.merge_list(o, p, &strategy, false))?
                }
                (None, None) => continue,
            };
            let (patch_items, server_only) = match &merge_key {
                Some(key) => partition_maps(merged, &order, key)?,
                None => partition_primitives(merged, &order),
            };
            let empty = Vec::new();
            let original_items = original_list.as_ref().unwrap_or(&empty);
            let patch_items_all = patch_list.as_ref().unwrap_or(&empty);
            let kind = slice_element_type(&[original_items, patch_items_all])?;
            let both = normalize_element_order(
                patch_items,
                server_only,
                &order,
                original_items,
                merge_key.as_deref(),
                kind,
            )?;
            original.insert(list_key.clone(), Value::Array(both));
            patch.remove(&list_key);
        }
        Ok(())
    }
}

/// A patch value for a field the original lacks (or has with another type).
fn take_patch_value(original: &mut Map<String, Value>, key: String, mut value: Value) {
    discard_nulls(&mut value);
    match remove_directives(value) {
        Some(v) => {
            original.insert(key, v);
        }
        None => {
            original.remove(&key);
        }
    }
}

fn discard_nulls(value: &mut Value) {
    match value {
        Value::Object(map) => {
            map.retain(|_, v| !v.is_null());
            map.values_mut().for_each(discard_nulls);
        }
        Value::Array(items) => items.iter_mut().for_each(discard_nulls),
        _ => {}
    }
}

/// Drops objects carrying `$patch` (and their entries), recursively.
fn remove_directives(value: Value) -> Option<Value> {
    match value {
        Value::Object(map) => {
            if map.contains_key(DIRECTIVE) {
                return None;
            }
            Some(Value::Object(
                map.into_iter()
                    .filter_map(|(k, v)| remove_directives(v).map(|v| (k, v)))
                    .collect(),
            ))
        }
        Value::Array(items) => Some(Value::Array(
            items.into_iter().filter_map(remove_directives).collect(),
        )),
        other => Some(other),
    }
}

/// `$retainKeys`: keys of the original not listed are cleared; the patch
/// may only set listed keys.
fn apply_retain_keys(
    original: &mut Map<String, Value>,
    patch: &mut Map<String, Value>,
) -> SmpResult<()> {
    let Some(retain) = patch.remove(RETAIN_KEYS) else {
        return Ok(());
    };
    let Value::Array(retain) = retain else {
        return Err(BAD_RETAIN_KEYS);
    };
    let listed = |k: &str| retain.iter().any(|r| r.as_str() == Some(k));
    for (k, v) in patch.iter() {
        if v.is_null()
            || k.starts_with(DELETE_FROM_PRIMITIVE_LIST)
            || k.starts_with(SET_ELEMENT_ORDER)
        {
            continue;
        }
        if !listed(k) {
            return Err(BAD_RETAIN_KEYS);
        }
    }
    original.retain(|k, _| listed(k));
    Ok(())
}

fn slice_element_type(slices: &[&Vec<Value>]) -> SmpResult<GoType> {
    let mut found: Option<GoType> = None;
    for item in slices.iter().flat_map(|s| s.iter()) {
        let t = go_type(item);
        match found {
            None => {
                if t == GoType::Slice {
                    return Err(SmpError::Invalid);
                }
                if t == GoType::Nil {
                    return Err(SmpError::Internal(
                        "runtime error: invalid memory address or nil pointer dereference".into(),
                    ));
                }
                found = Some(t);
            }
            Some(prev) if prev != t => {
                let all = slices
                    .iter()
                    .map(|s| go_v(&Value::Array((*s).clone())))
                    .collect::<Vec<_>>()
                    .join(" ");
                return Err(SmpError::Internal(format!(
                    "list element types are not identical: [{all}]"
                )));
            }
            Some(_) => {}
        }
    }
    found.ok_or_else(|| SmpError::Internal("no elements in any of the given slices".into()))
}

fn delete_from_slice(current: Vec<Value>, to_delete: &[Value]) -> Vec<Value> {
    current
        .into_iter()
        .filter(|v| !to_delete.iter().any(|d| go_eq(Some(d), Some(v))))
        .collect()
}

/// Go's in-place deduplication, which moves the last element into each hole.
fn deduplicate_scalars(mut s: Vec<Value>) -> Vec<Value> {
    let mut i = 0;
    while i + 1 < s.len() {
        let mut j = i + 1;
        while j < s.len() {
            if go_eq(s.get(i), s.get(j)) {
                let last = s.len() - 1;
                s.swap(j, last);
                s.truncate(last);
                continue;
            }
            j += 1;
        }
        i += 1;
    }
    s
}

fn find_by_key(list: &[Value], key: &str, wanted: &Value) -> SmpResult<Option<usize>> {
    for (i, item) in list.iter().enumerate() {
        let Value::Object(map) = item else {
            return Err(SmpError::Internal(format!(
                "value for key {i} is not a map"
            )));
        };
        if let Some(v) = map.get(key)
            && go_eq(Some(v), Some(wanted))
        {
            return Ok(Some(i));
        }
    }
    Ok(None)
}

/// Applies `$patch: delete` and `$patch: replace` items of a patch list.
fn merge_special_elements(
    mut original: Vec<Value>,
    patch: Vec<Value>,
    key: &str,
) -> SmpResult<(Vec<Value>, Vec<Value>)> {
    let mut plain = Vec::new();
    let mut replace = false;
    for item in patch {
        let Value::Object(map) = &item else {
            return Err(bad_arg_type("map[string]interface {}", &item));
        };
        match map.get(DIRECTIVE) {
            None => plain.push(item),
            Some(directive) => match directive.as_str() {
                Some("delete") => {
                    let Some(wanted) = map.get(key) else {
                        return Err(no_merge_key(map, key));
                    };
                    while let Some(i) = find_by_key(&original, key, wanted)? {
                        original.remove(i);
                    }
                }
                Some("replace") => replace = true,
                Some("merge") => {
                    return Err(SmpError::Internal(
                        "merging lists cannot yet be specified in the patch".into(),
                    ));
                }
                _ => return Err(bad_patch_type(directive, map)),
            },
        }
    }
    if replace {
        return Ok((plain, Vec::new()));
    }
    Ok((original, plain))
}

fn partition_primitives(merged: Vec<Value>, by: &[Value]) -> (Vec<Value>, Vec<Value>) {
    merged
        .into_iter()
        .partition(|v| by.iter().any(|b| go_eq(Some(b), Some(v))))
}

fn partition_maps(
    merged: Vec<Value>,
    by: &[Value],
    key: &str,
) -> SmpResult<(Vec<Value>, Vec<Value>)> {
    let mut in_patch = Vec::new();
    let mut server_only = Vec::new();
    for item in merged {
        let Value::Object(map) = &item else {
            return Err(bad_arg_type("map[string]interface {}", &item));
        };
        let Some(wanted) = map.get(key) else {
            return Err(no_merge_key(map, key));
        };
        if find_by_key(by, key, wanted)?.is_some() {
            in_patch.push(item);
        } else {
            server_only.push(item);
        }
    }
    Ok((in_patch, server_only))
}

fn validate_merge_keys(key: &str, lists: &[&[Value]]) -> SmpResult<()> {
    for item in lists.iter().flat_map(|l| l.iter()) {
        let Value::Object(map) = item else {
            return Err(bad_arg_type("map[string]interface {}", item));
        };
        if !map.contains_key(key) {
            return Err(no_merge_key(map, key));
        }
    }
    Ok(())
}

/// The position of `item` in `list`, by merge key for maps, by value otherwise.
fn index_of(list: &[Value], item: &Value, merge_key: Option<&str>, kind: GoType) -> Option<usize> {
    let get = |v: &Value| -> Option<Value> {
        match (kind, merge_key) {
            (GoType::Map, Some(key)) => v.as_object().and_then(|m| m.get(key)).cloned(),
            (GoType::Map, None) => None,
            _ => Some(v.clone()),
        }
    };
    let wanted = get(item);
    list.iter()
        .position(|v| go_eq(get(v).as_ref(), wanted.as_ref()))
}

fn normalize_slice_order(
    mut to_sort: Vec<Value>,
    order: &[Value],
    merge_key: Option<&str>,
    kind: GoType,
) -> SmpResult<Vec<Value>> {
    let mut to_delete = Vec::new();
    if kind == GoType::Map {
        validate_merge_keys(merge_key.unwrap_or(""), &[&to_sort, order])?;
        let (keep, delete): (Vec<Value>, Vec<Value>) = to_sort
            .into_iter()
            .partition(|v| v.get(DIRECTIVE).and_then(Value::as_str) != Some("delete"));
        to_sort = keep;
        to_delete = delete;
    }
    slice_stable(&mut to_sort, |a, b| {
        match (
            index_of(order, a, merge_key, kind),
            index_of(order, b, merge_key, kind),
        ) {
            (Some(i), Some(j)) => i < j,
            _ => true,
        }
    });
    to_sort.extend(to_delete);
    Ok(to_sort)
}

/// Patch items in patch order, server-only items in live order, the two
/// interleaved by their positions in the live list.
fn normalize_element_order(
    patch_items: Vec<Value>,
    server_only: Vec<Value>,
    patch_order: &[Value],
    server_order: &[Value],
    merge_key: Option<&str>,
    kind: GoType,
) -> SmpResult<Vec<Value>> {
    let right = normalize_slice_order(patch_items, patch_order, merge_key, kind)?;
    let left = normalize_slice_order(server_only, server_order, merge_key, kind)?;
    let mut out = Vec::with_capacity(left.len() + right.len());
    let mut left = left.into_iter().peekable();
    let mut right = right.into_iter().peekable();
    loop {
        let take_left = match (left.peek(), right.peek()) {
            (None, None) => break,
            (Some(_), None) => true,
            (None, Some(_)) => false,
            (Some(l), Some(r)) => matches!(
                (
                    index_of(server_order, l, merge_key, kind),
                    index_of(server_order, r, merge_key, kind),
                ),
                (Some(i), Some(j)) if i < j
            ),
        };
        let next = if take_left { left.next() } else { right.next() };
        out.extend(next);
    }
    Ok(out)
}

/// Checks that a patch list follows the order of its `$setElementOrder` list.
fn validate_patch_with_order(
    patch: Option<&[Value]>,
    order: &[Value],
    merge_key: Option<&str>,
) -> SmpResult<()> {
    let patch = patch.unwrap_or(&[]);
    if order.is_empty() || patch.is_empty() {
        return Ok(());
    }
    let non_delete: Vec<&Value> = match merge_key {
        Some(_) => {
            let mut out = Vec::new();
            for item in patch {
                if !item.is_object() {
                    return Err(bad_arg_type("map[string]interface {}", item));
                }
                if item.get(DIRECTIVE).and_then(Value::as_str) != Some("delete") {
                    out.push(item);
                }
            }
            out
        }
        None => patch.iter().collect(),
    };
    let (mut pi, mut oi) = (0usize, 0usize);
    while let (Some(p), Some(o)) = (non_delete.get(pi), order.get(oi)) {
        if p.get(DIRECTIVE).is_some() && p.is_object() {
            pi += 1;
            continue;
        }
        let equal = match merge_key {
            None => go_eq(Some(p), Some(o)),
            Some(key) => {
                let (Value::Object(pm), Value::Object(om)) = (p, o) else {
                    return Err(bad_arg_type(
                        "map[string]interface {}",
                        if p.is_object() { o } else { p },
                    ));
                };
                let pv = pm.get(key).ok_or_else(|| no_merge_key(pm, key))?;
                let ov = om.get(key).ok_or_else(|| no_merge_key(om, key))?;
                go_eq(Some(pv), Some(ov))
            }
        };
        if equal {
            pi += 1;
        }
        oi += 1;
    }
    if pi < non_delete.len() && oi >= order.len() {
        return Err(SmpError::Internal(format!(
            "The order in patch list:\n{}\n doesn't match {SET_ELEMENT_ORDER} list:\n{}\n",
            go_v(&Value::Array(patch.to_vec())),
            go_v(&Value::Array(order.to_vec()))
        )));
    }
    Ok(())
}
