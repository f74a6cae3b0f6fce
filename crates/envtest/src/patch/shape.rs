//! The shape of an object as the ownership walkers see it: a kind's
//! [`TypeInfo`] plus the `metadata` semantics every kind shares, and how list
//! items are identified.

use serde_json::Value;

use super::fieldpath::PathElement;
use crate::typeinfo::{ListType, PatchStrategy, TypeInfo};

/// A kind's [`TypeInfo`] with ObjectMeta's rules applied first, so that
/// finalizers, ownerReferences and labels behave the same for every kind
/// whatever table describes the rest.
#[derive(Clone, Copy)]
pub(super) struct Shape<'a> {
    types: &'a dyn TypeInfo,
}

fn with_refs<R>(path: &[String], f: impl FnOnce(&[&str]) -> R) -> R {
    let refs: Vec<&str> = path.iter().map(String::as_str).collect();
    f(&refs)
}

impl<'a> Shape<'a> {
    pub(super) fn new(types: &'a dyn TypeInfo) -> Shape<'a> {
        Shape { types }
    }

    pub(super) fn list_type(&self, path: &[String]) -> ListType {
        with_refs(path, |p| match p {
            ["metadata", "finalizers"] => ListType::Set,
            ["metadata", "ownerReferences"] => ListType::Map(vec!["uid".to_string()]),
            ["metadata", "managedFields"] => ListType::Atomic,
            _ => self.types.list_type(p),
        })
    }

    pub(super) fn map_is_atomic(&self, path: &[String]) -> bool {
        with_refs(path, |p| match p {
            // OwnerReference is `structType=atomic`.
            ["metadata", "ownerReferences"] => true,
            ["metadata"] | ["metadata", "labels"] | ["metadata", "annotations"] => false,
            _ => self.types.map_is_atomic(p),
        })
    }

    pub(super) fn patch_strategy(&self, path: &[String]) -> PatchStrategy {
        with_refs(path, |p| match p {
            ["metadata", "finalizers"] => PatchStrategy::MergeScalars,
            ["metadata", "ownerReferences"] => PatchStrategy::MergeByKey("uid".to_string()),
            ["metadata", "managedFields"] => PatchStrategy::Replace,
            _ => self.types.patch_strategy(p),
        })
    }
}

/// The path element that identifies `item` in a list of type `list_type`.
pub(super) fn item_element(
    list_type: &ListType,
    item: &Value,
    index: usize,
) -> Result<PathElement, String> {
    match list_type {
        ListType::Atomic => Ok(PathElement::Index(index)),
        ListType::Set => Ok(PathElement::Value(item.clone())),
        ListType::Map(keys) => {
            let map = match item {
                Value::Object(map) => map,
                Value::Null => {
                    return Err("associative list with keys may not have a null element".into());
                }
                _ => {
                    return Err("associative list with keys may not have non-map elements".into());
                }
            };
            let mut fields = Vec::with_capacity(keys.len());
            for key in keys {
                match map.get(key) {
                    Some(v) => fields.push((key.clone(), v.clone())),
                    // The only defaulted list-map key of the built-in kinds
                    // (ports of containers and Services).
                    None if key == "protocol" => fields.push((key.clone(), Value::from("TCP"))),
                    None => {
                        return Err(format!(
                            "associative list with keys has an element that omits key field {key:?} (and doesn't have default value)"
                        ));
                    }
                }
            }
            fields.sort_by(|a, b| a.0.cmp(&b.0));
            fields.dedup_by(|a, b| a.0 == b.0);
            Ok(PathElement::Key(fields))
        }
    }
}
