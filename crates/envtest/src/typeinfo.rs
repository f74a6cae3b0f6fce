//! What the patch and apply machinery needs to know about a kind's shape.
//!
//! Strategic merge patch and server-side apply both depend on how lists and
//! maps are identified: a list of containers merges by `name`, a list of
//! finalizers is a set, most other lists are replaced whole. Built-in kinds
//! answer from a table (`builtin`), custom resources from their structural
//! schema (`x-kubernetes-list-type`, `x-kubernetes-list-map-keys`,
//! `x-kubernetes-map-type`) in `schema`.
//!
//! Paths are field names from the object root with list positions left out:
//! `spec.template.spec.containers[3].ports` is `["spec", "template", "spec",
//! "containers", "ports"]`.

/// How the elements of a list are identified (server-side apply semantics).
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum ListType {
    /// The list is one value: replaced whole, owned whole (`x-kubernetes-list-type: atomic`).
    Atomic,
    /// A list of unique scalars, merged by value (`set`).
    Set,
    /// A list of objects identified by these key fields (`map`).
    Map(Vec<String>),
}

/// How strategic merge patch treats a list (only built-in kinds support SMP).
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum PatchStrategy {
    /// Replace the whole list (no `patchStrategy`).
    Replace,
    /// `patchStrategy: merge` on a list of scalars: union of values.
    MergeScalars,
    /// `patchStrategy: merge` with `patchMergeKey`: merge elements by that key.
    MergeByKey(String),
}

/// Shape information for one kind.
pub(crate) trait TypeInfo: Send + Sync {
    /// The list at `path` (apply semantics). Unknown paths are `Atomic`.
    fn list_type(&self, path: &[&str]) -> ListType;

    /// Whether the map (object) at `path` is atomic (`x-kubernetes-map-type: atomic`,
    /// or a built-in struct marked atomic such as a LabelSelector's `matchLabels`
    /// is *not*). Default: granular.
    fn map_is_atomic(&self, path: &[&str]) -> bool {
        let _ = path;
        false
    }

    /// The list at `path` (strategic merge patch semantics). Unknown paths replace.
    fn patch_strategy(&self, path: &[&str]) -> PatchStrategy {
        match self.list_type(path) {
            ListType::Map(keys) => match keys.first() {
                Some(key) => PatchStrategy::MergeByKey(key.clone()),
                None => PatchStrategy::Replace,
            },
            ListType::Set => PatchStrategy::MergeScalars,
            ListType::Atomic => PatchStrategy::Replace,
        }
    }
}

/// A kind about which nothing is known: every list atomic, every map granular.
/// Used for custom resources whose schema says nothing and as a safe fallback.
#[derive(Debug, Default, Clone, Copy)]
pub(crate) struct Untyped;

impl TypeInfo for Untyped {
    fn list_type(&self, path: &[&str]) -> ListType {
        // metadata lists are the same for every kind.
        match path {
            ["metadata", "finalizers"] => ListType::Set,
            ["metadata", "ownerReferences"] => ListType::Map(vec!["uid".to_string()]),
            ["metadata", "managedFields"] => ListType::Atomic,
            _ => ListType::Atomic,
        }
    }
}
