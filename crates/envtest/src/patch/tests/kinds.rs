//! Shape information for the kinds the transcripts use, as the built-in
//! table describes them (the real table lives in `builtin`).

use crate::typeinfo::{ListType, TypeInfo};

/// Containers by name, ports by (port, protocol), env by name, conditions by
/// type, label selectors and object references atomic; everything else atomic
/// lists and granular maps.
pub(super) struct TranscriptKinds;

fn keys(names: &[&str]) -> ListType {
    ListType::Map(names.iter().map(|s| s.to_string()).collect())
}

impl TypeInfo for TranscriptKinds {
    fn list_type(&self, path: &[&str]) -> ListType {
        match path {
            [
                ..,
                "containers" | "initContainers" | "ephemeralContainers",
                "ports",
            ] => keys(&["containerPort", "protocol"]),
            [
                ..,
                "containers" | "initContainers" | "ephemeralContainers",
                "env",
            ] => keys(&["name"]),
            [
                ..,
                "containers" | "initContainers" | "ephemeralContainers",
                "volumeMounts",
            ] => keys(&["mountPath"]),
            [.., "containers" | "initContainers" | "ephemeralContainers"] => keys(&["name"]),
            [.., "spec", "volumes"] | [.., "imagePullSecrets"] => keys(&["name"]),
            ["spec", "ports"] => keys(&["port", "protocol"]),
            ["status", "conditions"] => keys(&["type"]),
            _ => ListType::Atomic,
        }
    }

    fn map_is_atomic(&self, path: &[&str]) -> bool {
        matches!(
            path,
            // LabelSelector (workloads) and the Service selector map.
            ["spec", "selector"]
                | ["involvedObject"]
                | ["regarding"]
                | ["related"]
                | [.., "fieldRef"]
                | [.., "resourceFieldRef"]
        )
    }
}
