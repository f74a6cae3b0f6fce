//! The four walks structured-merge-diff makes over typed objects, written
//! against [`Shape`]: comparing two objects (what changed, per field),
//! listing the fields a value sets, merging an applied configuration into a
//! live object, and removing a set of fields from an object.

use std::collections::{BTreeMap, BTreeSet, VecDeque};

use serde_json::{Map, Value};

use super::MAX_DEPTH;
use super::fieldpath::{Path, PathElement, Set, values_equal};
use super::shape::{Shape, item_element};
use crate::typeinfo::ListType;

/// What kind of node a value is, `None` for absent or `null`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Kind {
    Map,
    List,
    Scalar,
}

fn kind_of(v: Option<&Value>) -> Option<Kind> {
    match v {
        None | Some(Value::Null) => None,
        Some(Value::Object(_)) => Some(Kind::Map),
        Some(Value::Array(_)) => Some(Kind::List),
        Some(_) => Some(Kind::Scalar),
    }
}

/// The node kind of a pair; values of different kinds are compared as leaves.
fn pair_kind(lhs: Option<&Value>, rhs: Option<&Value>) -> Kind {
    match (kind_of(lhs), kind_of(rhs)) {
        (Some(a), Some(b)) if a != b => Kind::Scalar,
        (Some(k), _) | (_, Some(k)) => k,
        (None, None) => Kind::Scalar,
    }
}

fn as_map(v: Option<&Value>) -> Option<&Map<String, Value>> {
    v.and_then(Value::as_object)
}

fn as_list(v: Option<&Value>) -> Option<&Vec<Value>> {
    v.and_then(Value::as_array)
}

fn too_deep() -> String {
    "object nested too deeply".to_string()
}

/// Fields added, changed and removed from one object to the next.
#[derive(Debug, Default, Clone)]
pub(super) struct Comparison {
    pub added: Set,
    pub modified: Set,
    pub removed: Set,
}

impl Comparison {
    pub(super) fn filter(&self, f: impl Fn(&Set) -> Set) -> Comparison {
        Comparison {
            added: f(&self.added),
            modified: f(&self.modified),
            removed: f(&self.removed),
        }
    }

    pub(super) fn changed(&self) -> Set {
        self.added.union(&self.modified)
    }
}

/// Walks a pair or a single value, tracking the type path (field names only)
/// and the field path.
struct Walker<'a> {
    shape: Shape<'a>,
    tpath: Vec<String>,
    fpath: Path,
}

impl<'a> Walker<'a> {
    fn new(shape: Shape<'a>) -> Walker<'a> {
        Walker {
            shape,
            tpath: Vec::new(),
            fpath: Vec::new(),
        }
    }

    fn check_depth(&self) -> Result<(), String> {
        if self.fpath.len() > MAX_DEPTH || self.tpath.len() > MAX_DEPTH {
            return Err(too_deep());
        }
        Ok(())
    }

    fn list_elements<'v>(
        &self,
        list_type: &ListType,
        items: &'v [Value],
    ) -> Result<Vec<(PathElement, &'v Value)>, String> {
        items
            .iter()
            .enumerate()
            .map(|(i, item)| {
                item_element(list_type, item, i)
                    .map(|pe| (pe, item))
                    .map_err(|e| {
                        format!(
                            "{}: element {i}: {e}",
                            super::fieldpath::path_string(&self.fpath)
                        )
                    })
            })
            .collect()
    }

    // ----- compare -----

    fn compare(
        &mut self,
        lhs: Option<&Value>,
        rhs: Option<&Value>,
        out: &mut Comparison,
    ) -> Result<(), String> {
        self.check_depth()?;
        match pair_kind(lhs, rhs) {
            Kind::Scalar => {
                self.compare_leaf(lhs, rhs, out);
                Ok(())
            }
            Kind::Map => {
                let (lm, rm) = (as_map(lhs), as_map(rhs));
                let empty = lm.is_none_or(Map::is_empty) && rm.is_none_or(Map::is_empty);
                if empty || self.shape.map_is_atomic(&self.tpath) {
                    self.compare_leaf(lhs, rhs, out);
                    return Ok(());
                }
                let mut keys: Vec<&String> = lm.map(|m| m.keys().collect()).unwrap_or_default();
                if let Some(rm) = rm {
                    keys.extend(
                        rm.keys()
                            .filter(|k| lm.is_none_or(|lm| !lm.contains_key(*k))),
                    );
                }
                for key in keys {
                    self.tpath.push(key.clone());
                    self.fpath.push(PathElement::Field(key.clone()));
                    let result = self.compare(
                        lm.and_then(|m| m.get(key)),
                        rm.and_then(|m| m.get(key)),
                        out,
                    );
                    self.tpath.pop();
                    self.fpath.pop();
                    result?;
                }
                self.compare_node_end(lhs, rhs, out);
                Ok(())
            }
            Kind::List => {
                let (ll, rl) = (as_list(lhs), as_list(rhs));
                let empty = ll.is_none_or(Vec::is_empty) && rl.is_none_or(Vec::is_empty);
                let list_type = self.shape.list_type(&self.tpath);
                if empty || list_type == ListType::Atomic {
                    self.compare_leaf(lhs, rhs, out);
                    return Ok(());
                }
                self.compare_items(&list_type, ll, rl, out)?;
                self.compare_node_end(lhs, rhs, out);
                Ok(())
            }
        }
    }

    fn compare_leaf(&self, lhs: Option<&Value>, rhs: Option<&Value>, out: &mut Comparison) {
        match (lhs, rhs) {
            (None, _) => out.added.insert(&self.fpath),
            (_, None) => out.removed.insert(&self.fpath),
            (Some(l), Some(r)) if !values_equal(l, r) => out.modified.insert(&self.fpath),
            _ => {}
        }
    }

    fn compare_node_end(&self, lhs: Option<&Value>, rhs: Option<&Value>, out: &mut Comparison) {
        if lhs.is_none() {
            out.added.insert(&self.fpath);
        } else if rhs.is_none() {
            out.removed.insert(&self.fpath);
        }
    }

    fn compare_items(
        &mut self,
        list_type: &ListType,
        ll: Option<&Vec<Value>>,
        rl: Option<&Vec<Value>>,
        out: &mut Comparison,
    ) -> Result<(), String> {
        let lhs = self.list_elements(list_type, ll.map(Vec::as_slice).unwrap_or(&[]))?;
        let rhs = self.list_elements(list_type, rl.map(Vec::as_slice).unwrap_or(&[]))?;
        let mut order: Vec<PathElement> = Vec::new();
        let mut lvalues: BTreeMap<PathElement, Vec<&Value>> = BTreeMap::new();
        for (pe, v) in &lhs {
            let entry = lvalues.entry(pe.clone()).or_default();
            if entry.is_empty() {
                order.push(pe.clone());
            }
            entry.push(v);
        }
        let mut rvalues: BTreeMap<PathElement, Vec<&Value>> = BTreeMap::new();
        for (pe, v) in &rhs {
            let entry = rvalues.entry(pe.clone()).or_default();
            if entry.is_empty() && !lvalues.contains_key(pe) {
                order.push(pe.clone());
            }
            entry.push(v);
        }
        for pe in order {
            let l = lvalues.get(&pe).map(Vec::as_slice).unwrap_or(&[]);
            let r = rvalues.get(&pe).map(Vec::as_slice).unwrap_or(&[]);
            self.fpath.push(pe);
            let result = match (l.len(), r.len()) {
                (0..=1, 0..=1) => self.compare(l.first().copied(), r.first().copied(), out),
                (2.., 2..) => {
                    let same = l.len() == r.len()
                        && l.iter().zip(r.iter()).all(|(a, b)| values_equal(a, b));
                    if !same {
                        out.modified.insert(&self.fpath);
                    }
                    Ok(())
                }
                (2.., _) => {
                    let res = match r.first() {
                        Some(r0) => self.compare(None, Some(r0), out),
                        None => Ok(()),
                    };
                    out.removed.insert(&self.fpath);
                    res
                }
                (_, _) => {
                    let res = match l.first() {
                        Some(l0) => self.compare(Some(l0), None, out),
                        None => Ok(()),
                    };
                    out.added.insert(&self.fpath);
                    res
                }
            };
            self.fpath.pop();
            result?;
        }
        Ok(())
    }

    // ----- field set -----

    fn field_set(&mut self, value: &Value, out: &mut Set) -> Result<(), String> {
        self.check_depth()?;
        match value {
            Value::Object(map) => {
                if self.shape.map_is_atomic(&self.tpath) {
                    out.insert(&self.fpath);
                    return Ok(());
                }
                for (key, child) in map {
                    self.tpath.push(key.clone());
                    self.fpath.push(PathElement::Field(key.clone()));
                    let result = self.field_set(child, out);
                    let empty = child.is_null() || child.as_object().is_some_and(Map::is_empty);
                    if empty {
                        out.insert(&self.fpath);
                    }
                    self.tpath.pop();
                    self.fpath.pop();
                    result?;
                }
                Ok(())
            }
            Value::Array(items) => {
                let list_type = self.shape.list_type(&self.tpath);
                if list_type == ListType::Atomic {
                    out.insert(&self.fpath);
                    return Ok(());
                }
                let elements = self.list_elements(&list_type, items)?;
                let mut seen = BTreeSet::new();
                let mut duplicates = BTreeSet::new();
                for (pe, _) in &elements {
                    if !seen.insert(pe.clone()) && duplicates.insert(pe.clone()) {
                        self.fpath.push(pe.clone());
                        out.insert(&self.fpath);
                        self.fpath.pop();
                    }
                }
                for (pe, item) in elements {
                    if duplicates.contains(&pe) {
                        continue;
                    }
                    self.fpath.push(pe);
                    let result = self.field_set(item, out);
                    out.insert(&self.fpath);
                    self.fpath.pop();
                    result?;
                }
                Ok(())
            }
            _ => {
                out.insert(&self.fpath);
                Ok(())
            }
        }
    }

    // ----- merge (apply) -----

    fn merge(&mut self, lhs: Option<&Value>, rhs: Option<&Value>) -> Result<Option<Value>, String> {
        self.check_depth()?;
        let leaf = || rhs.or(lhs).cloned();
        match pair_kind(lhs, rhs) {
            Kind::Scalar => Ok(leaf()),
            Kind::Map => {
                let (lm, rm) = (as_map(lhs), as_map(rhs));
                let empty = lm.is_none_or(Map::is_empty) && rm.is_none_or(Map::is_empty);
                if empty || self.shape.map_is_atomic(&self.tpath) {
                    return Ok(leaf());
                }
                let mut keys: Vec<&String> = lm.map(|m| m.keys().collect()).unwrap_or_default();
                if let Some(rm) = rm {
                    keys.extend(
                        rm.keys()
                            .filter(|k| lm.is_none_or(|lm| !lm.contains_key(*k))),
                    );
                }
                let mut out = Map::new();
                for key in keys {
                    self.tpath.push(key.clone());
                    self.fpath.push(PathElement::Field(key.clone()));
                    let merged =
                        self.merge(lm.and_then(|m| m.get(key)), rm.and_then(|m| m.get(key)));
                    self.tpath.pop();
                    self.fpath.pop();
                    if let Some(v) = merged? {
                        out.insert(key.clone(), v);
                    }
                }
                Ok((!out.is_empty()).then_some(Value::Object(out)))
            }
            Kind::List => {
                let (ll, rl) = (as_list(lhs), as_list(rhs));
                let empty = ll.is_none_or(Vec::is_empty) && rl.is_none_or(Vec::is_empty);
                let list_type = self.shape.list_type(&self.tpath);
                if empty || list_type == ListType::Atomic {
                    return Ok(leaf());
                }
                self.merge_items(
                    &list_type,
                    ll.map(Vec::as_slice).unwrap_or(&[]),
                    rl.map(Vec::as_slice).unwrap_or(&[]),
                )
            }
        }
    }

    /// Live items keep their places; applied items shared with live take the
    /// applied order; new applied items go where the applied list puts them.
    fn merge_items(
        &mut self,
        list_type: &ListType,
        lhs: &[Value],
        rhs: &[Value],
    ) -> Result<Option<Value>, String> {
        let rhs_elems = self.list_elements(list_type, rhs)?;
        let mut observed_rhs: BTreeMap<PathElement, &Value> = BTreeMap::new();
        for (pe, v) in &rhs_elems {
            if observed_rhs.insert(pe.clone(), v).is_some() {
                return Err(format!(
                    "{}: duplicate entries for key {pe}",
                    super::fieldpath::path_string(&self.fpath)
                ));
            }
        }
        let lhs_elems = self.list_elements(list_type, lhs)?;
        static NULL: Value = Value::Null;
        let mut observed_lhs: BTreeMap<PathElement, &Value> = BTreeMap::new();
        for (pe, v) in &lhs_elems {
            if observed_lhs.contains_key(pe) {
                // Duplicated in live: the item is known but has no single value.
                observed_lhs.insert(pe.clone(), &NULL);
            } else {
                observed_lhs.insert(pe.clone(), v);
            }
        }
        let mut shared: VecDeque<&PathElement> = rhs_elems
            .iter()
            .map(|(pe, _)| pe)
            .filter(|pe| observed_lhs.contains_key(*pe))
            .collect();
        let mut next_shared = shared.pop_front();
        let mut merged_rhs: BTreeSet<PathElement> = BTreeSet::new();
        let mut out = Vec::with_capacity(lhs.len().max(rhs.len()));
        let (llen, rlen) = (lhs_elems.len(), rhs_elems.len());
        let (mut li, mut ri) = (0usize, 0usize);
        let mut steps = 0usize;
        while li < llen || ri < rlen {
            steps += 1;
            if steps > 2 * (llen + rlen) + 2 {
                return Err("list merge did not terminate".to_string());
            }
            if let (Some((lpe, _)), Some((rpe, _))) = (lhs_elems.get(li), rhs_elems.get(ri)) {
                if lpe == rpe {
                    merged_rhs.insert(lpe.clone());
                    let item = self.merge_item(
                        lpe,
                        observed_lhs.get(lpe).copied(),
                        observed_rhs.get(lpe).copied(),
                    )?;
                    out.extend(item);
                    li += 1;
                    ri += 1;
                    next_shared = shared.pop_front();
                    continue;
                }
                if observed_rhs.contains_key(lpe) && next_shared.is_some_and(|n| n != lpe) {
                    li += 1;
                    continue;
                }
            }
            if let Some((lpe, lval)) = lhs_elems.get(li) {
                if !observed_rhs.contains_key(lpe) {
                    let item = self.merge_item(lpe, Some(lval), None)?;
                    out.extend(item);
                    li += 1;
                    continue;
                } else if merged_rhs.contains(lpe) {
                    li += 1;
                }
            }
            if let Some((rpe, rval)) = rhs_elems.get(ri) {
                merged_rhs.insert(rpe.clone());
                let item = self.merge_item(rpe, observed_lhs.get(rpe).copied(), Some(rval))?;
                out.extend(item);
                ri += 1;
                if next_shared.is_some_and(|n| n == rpe) {
                    next_shared = shared.pop_front();
                }
            }
        }
        Ok((!out.is_empty()).then_some(Value::Array(out)))
    }

    fn merge_item(
        &mut self,
        pe: &PathElement,
        lhs: Option<&Value>,
        rhs: Option<&Value>,
    ) -> Result<Option<Value>, String> {
        self.fpath.push(pe.clone());
        let merged = self.merge(lhs, rhs);
        self.fpath.pop();
        merged
    }

    // ----- remove -----

    /// `value` without the members of `set`; containers emptied by the
    /// removal become `null`, as in the real server.
    fn remove(&mut self, value: &Value, set: &Set) -> Value {
        if self.check_depth().is_err() {
            return value.clone();
        }
        match value {
            Value::Object(map) => {
                if map.is_empty() || self.shape.map_is_atomic(&self.tpath) {
                    return value.clone();
                }
                let mut out = Map::new();
                for (key, child) in map {
                    let pe = PathElement::Field(key.clone());
                    if set.has(std::slice::from_ref(&pe)) {
                        continue;
                    }
                    let kept = match set.child(&pe) {
                        Some(sub) => {
                            self.tpath.push(key.clone());
                            self.fpath.push(pe);
                            let kept = self.remove(child, sub);
                            self.tpath.pop();
                            self.fpath.pop();
                            kept
                        }
                        None => child.clone(),
                    };
                    out.insert(key.clone(), kept);
                }
                if out.is_empty() {
                    Value::Null
                } else {
                    Value::Object(out)
                }
            }
            Value::Array(items) => {
                let list_type = self.shape.list_type(&self.tpath);
                if items.is_empty() || list_type == ListType::Atomic {
                    return value.clone();
                }
                let mut out = Vec::with_capacity(items.len());
                for (i, item) in items.iter().enumerate() {
                    let Ok(pe) = item_element(&list_type, item, i) else {
                        out.push(item.clone());
                        continue;
                    };
                    if set.has(std::slice::from_ref(&pe)) {
                        continue;
                    }
                    match set.child(&pe) {
                        Some(sub) => {
                            self.fpath.push(pe);
                            out.push(self.remove(item, sub));
                            self.fpath.pop();
                        }
                        None => out.push(item.clone()),
                    }
                }
                if out.is_empty() {
                    Value::Null
                } else {
                    Value::Array(out)
                }
            }
            _ => value.clone(),
        }
    }
}

/// Field-by-field differences from `lhs` to `rhs` (either may be absent).
pub(super) fn compare(
    shape: Shape<'_>,
    lhs: Option<&Value>,
    rhs: Option<&Value>,
) -> Result<Comparison, String> {
    let mut out = Comparison::default();
    Walker::new(shape).compare(lhs, rhs, &mut out)?;
    Ok(out)
}

/// Every field `value` sets (what an applier owns).
pub(super) fn field_set(shape: Shape<'_>, value: &Value) -> Result<Set, String> {
    let mut out = Set::new();
    Walker::new(shape).field_set(value, &mut out)?;
    Ok(out)
}

/// Merges an applied configuration into a live object.
pub(super) fn merge(
    shape: Shape<'_>,
    live: Option<&Value>,
    applied: &Value,
) -> Result<Value, String> {
    Ok(Walker::new(shape)
        .merge(live, Some(applied))?
        .unwrap_or_else(|| Value::Object(Map::new())))
}

/// `value` without the members of `set` (and everything below them).
pub(super) fn remove(shape: Shape<'_>, value: &Value, set: &Set) -> Value {
    Walker::new(shape).remove(value, set)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::typeinfo::Untyped;
    use serde_json::json;

    struct Containers;
    impl crate::typeinfo::TypeInfo for Containers {
        fn list_type(&self, path: &[&str]) -> ListType {
            match path {
                ["spec", "containers"] => ListType::Map(vec!["name".into()]),
                ["spec", "ports"] => ListType::Map(vec!["port".into(), "protocol".into()]),
                ["tags"] => ListType::Set,
                _ => ListType::Atomic,
            }
        }
        fn map_is_atomic(&self, path: &[&str]) -> bool {
            path == ["spec", "selector"]
        }
    }

    fn f(n: &str) -> PathElement {
        PathElement::field(n)
    }

    #[test]
    fn compare_marks_new_subtrees_node_by_node() {
        let shape = Shape::new(&Containers);
        let old = json!({"spec": {"containers": null}});
        let new = json!({"spec": {"containers": [{"name": "a", "image": "x", "resources": {}}], "selector": {"a": "b"}}});
        let cmp = compare(shape, Some(&old), Some(&new)).expect("compares");
        assert_eq!(
            cmp.added.to_fields_v1(),
            json!({"f:spec": {
                "f:containers": {"k:{\"name\":\"a\"}": {".": {}, "f:image": {}, "f:name": {}, "f:resources": {}}},
                "f:selector": {}
            }})
        );
        assert!(cmp.modified.is_empty() && cmp.removed.is_empty());
    }

    #[test]
    fn compare_reports_modified_leaves_and_removed_items() {
        let shape = Shape::new(&Containers);
        let old = json!({"spec": {"containers": [{"name": "a", "image": "x"}, {"name": "b", "image": "y"}]}});
        let new = json!({"spec": {"containers": [{"name": "a", "image": "z"}]}});
        let cmp = compare(shape, Some(&old), Some(&new)).expect("compares");
        let key_a = PathElement::Key(vec![("name".into(), json!("a"))]);
        assert!(
            cmp.modified
                .has(&[f("spec"), f("containers"), key_a, f("image")])
        );
        let key_b = PathElement::Key(vec![("name".into(), json!("b"))]);
        assert!(
            cmp.removed
                .has(&[f("spec"), f("containers"), key_b.clone()])
        );
        assert!(
            cmp.removed
                .has(&[f("spec"), f("containers"), key_b, f("image")])
        );
    }

    #[test]
    fn field_set_owns_leaves_items_and_empty_maps() {
        let shape = Shape::new(&Containers);
        let applied =
            json!({"spec": {"ports": [{"port": 80}], "extra": {}, "n": null}, "tags": ["a"]});
        let set = field_set(shape, &applied).expect("valid");
        assert_eq!(
            set.to_fields_v1(),
            json!({
                "f:spec": {
                    "f:extra": {}, "f:n": {},
                    "f:ports": {"k:{\"port\":80,\"protocol\":\"TCP\"}": {".": {}, "f:port": {}}}
                },
                "f:tags": {"v:\"a\"": {}}
            })
        );
        let err = field_set(shape, &json!({"spec": {"containers": [{"image": "x"}]}})).unwrap_err();
        assert!(err.contains("omits key field \"name\""), "{err}");
    }

    #[test]
    fn merge_keeps_live_order_and_applied_values() {
        let shape = Shape::new(&Containers);
        let live = json!({"spec": {"containers": [{"name": "x", "image": "1"}, {"name": "a", "image": "2"}]}, "keep": 1});
        let applied = json!({"spec": {"containers": [{"name": "y"}, {"name": "a", "image": "3"}]}});
        let merged = merge(shape, Some(&live), &applied).expect("merges");
        assert_eq!(
            merged,
            json!({"spec": {"containers": [{"name": "x", "image": "1"}, {"name": "y"}, {"name": "a", "image": "3"}]}, "keep": 1})
        );
        // Shared items take the applied order.
        let live = json!({"tags": ["a", "b"]});
        let merged = merge(shape, Some(&live), &json!({"tags": ["b", "a"]})).expect("merges");
        assert_eq!(merged, json!({"tags": ["b", "a"]}));
        let err = merge(shape, None, &json!({"tags": ["a", "a"]})).unwrap_err();
        assert!(err.contains("duplicate entries"), "{err}");
    }

    #[test]
    fn remove_drops_members_and_nulls_emptied_containers() {
        let shape = Shape::new(&Untyped);
        let mut set = Set::new();
        set.insert(&[f("data"), f("a")]);
        set.insert(&[f("gone")]);
        let out = remove(
            shape,
            &json!({"data": {"a": 1}, "gone": {"x": 1}, "kept": 2}),
            &set,
        );
        assert_eq!(out, json!({"data": null, "kept": 2}));
    }
}
