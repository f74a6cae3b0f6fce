//! List and map semantics of built-in kinds, from Kubernetes' OpenAPI:
//! `x-kubernetes-list-type` / `x-kubernetes-list-map-keys` for server-side
//! apply and `x-kubernetes-patch-strategy` / `x-kubernetes-patch-merge-key`
//! for strategic merge patch. The two can differ (a Job's status conditions
//! are atomic for apply but merged by `type` by strategic merge patch).

use crate::typeinfo::{ListType, PatchStrategy, TypeInfo, Untyped};

use super::KindInfo;

/// Shape information of one built-in kind.
#[derive(Debug, Clone, Copy)]
pub(crate) struct BuiltinTypeInfo {
    kind: &'static KindInfo,
}

impl BuiltinTypeInfo {
    pub(crate) fn new(kind: &'static KindInfo) -> Self {
        BuiltinTypeInfo { kind }
    }
}

fn map(keys: &[&str]) -> ListType {
    ListType::Map(keys.iter().map(|k| k.to_string()).collect())
}

fn merge(key: &str) -> PatchStrategy {
    PatchStrategy::MergeByKey(key.to_string())
}

type Shape = (ListType, PatchStrategy);

fn keyed(keys: &[&str]) -> Shape {
    (map(keys), merge(keys.first().copied().unwrap_or_default()))
}

/// Where the PodSpec of a kind starts.
fn pod_spec_prefix(kind: &KindInfo) -> &'static [&'static str] {
    match (kind.group, kind.kind) {
        ("", "Pod") => &["spec"],
        ("", "PodTemplate") => &["template", "spec"],
        ("apps", _) | ("batch", "Job") => &["spec", "template", "spec"],
        ("batch", "CronJob") => &["spec", "jobTemplate", "spec", "template", "spec"],
        _ => &[],
    }
}

fn pod_spec(path: &[&str]) -> Option<Shape> {
    const CONTAINERS: &[&str] = &["containers", "initContainers", "ephemeralContainers"];
    Some(match path {
        [c] if CONTAINERS.contains(c) => keyed(&["name"]),
        [c, "ports"] if CONTAINERS.contains(c) => {
            (map(&["containerPort", "protocol"]), merge("containerPort"))
        }
        [c, "env"] if CONTAINERS.contains(c) => keyed(&["name"]),
        [c, "volumeMounts"] if CONTAINERS.contains(c) => keyed(&["mountPath"]),
        [c, "volumeDevices"] if CONTAINERS.contains(c) => keyed(&["devicePath"]),
        [c, "resources", "claims"] if CONTAINERS.contains(c) => {
            (map(&["name"]), PatchStrategy::Replace)
        }
        ["volumes"] | ["imagePullSecrets"] | ["schedulingGates"] | ["resourceClaims"] => {
            keyed(&["name"])
        }
        ["hostAliases"] => keyed(&["ip"]),
        ["topologySpreadConstraints"] => (
            map(&["topologyKey", "whenUnsatisfiable"]),
            merge("topologyKey"),
        ),
        _ => return None,
    })
}

/// The semantics of the list at `path`, when the kind's schema says more
/// than "atomic".
fn lookup(kind: &KindInfo, path: &[&str]) -> Option<Shape> {
    let prefix = pod_spec_prefix(kind);
    if !prefix.is_empty()
        && path.len() > prefix.len()
        && path.starts_with(prefix)
        && let Some(shape) = pod_spec(&path[prefix.len()..])
    {
        return Some(shape);
    }
    let conditions = || keyed(&["type"]);
    Some(match ((kind.group, kind.kind), path) {
        (("", "Pod"), ["status", "conditions"]) => conditions(),
        (("", "Pod"), ["status", "podIPs" | "hostIPs"]) => keyed(&["ip"]),
        (("", "Pod"), ["status", "resourceClaimStatuses"]) => keyed(&["name"]),
        (("", "Service"), ["spec", "ports"]) => (map(&["port", "protocol"]), merge("port")),
        (("", "Service" | "Namespace" | "PersistentVolumeClaim"), ["status", "conditions"]) => {
            conditions()
        }
        (("", "Node"), ["status", "conditions" | "addresses"]) => conditions(),
        (("", "Node"), ["spec", "podCIDRs"]) => (ListType::Set, PatchStrategy::MergeScalars),
        (("", "ServiceAccount"), ["secrets"]) => keyed(&["name"]),
        (("apps", _), ["status", "conditions"]) => conditions(),
        // Apply treats Job conditions as atomic; strategic merge merges them by type.
        (("batch", "Job"), ["status", "conditions"]) => (ListType::Atomic, merge("type")),
        (("admissionregistration.k8s.io", _), ["webhooks"]) => keyed(&["name"]),
        (("admissionregistration.k8s.io", _), ["webhooks", "matchConditions"]) => keyed(&["name"]),
        (("apiextensions.k8s.io", _), ["status", "conditions"]) => conditions(),
        (("policy", "PodDisruptionBudget"), ["status", "conditions"]) => conditions(),
        _ => return None,
    })
}

impl TypeInfo for BuiltinTypeInfo {
    fn list_type(&self, path: &[&str]) -> ListType {
        match lookup(self.kind, path) {
            Some((list_type, _)) => list_type,
            None => Untyped.list_type(path),
        }
    }

    fn map_is_atomic(&self, path: &[&str]) -> bool {
        // ObjectReferences (an Event's involvedObject/regarding and related)
        // are atomic structs.
        if self.kind.kind == "Event" && matches!(path, ["involvedObject" | "regarding" | "related"])
        {
            return true;
        }
        // A ControllerRevision's data is a RawExtension: one value.
        if self.kind.kind == "ControllerRevision" && path == ["data"] {
            return true;
        }
        // A binding's RoleRef is `structType=atomic`.
        if self.kind.group == "rbac.authorization.k8s.io" && path == ["roleRef"] {
            return true;
        }
        // LabelSelectors and NodeSelectors are atomic structs; a Service's
        // selector and a PodSpec's nodeSelector are atomic maps.
        matches!(
            path.last(),
            Some(
                &("selector"
                    | "labelSelector"
                    | "podSelector"
                    | "namespaceSelector"
                    | "objectSelector"
                    | "nodeSelector")
            )
        ) && !matches!(path.first(), Some(&"metadata"))
    }

    fn patch_strategy(&self, path: &[&str]) -> PatchStrategy {
        match lookup(self.kind, path) {
            Some((_, strategy)) => strategy,
            None => match path {
                ["metadata", "finalizers"] => PatchStrategy::MergeScalars,
                ["metadata", "ownerReferences"] => merge("uid"),
                _ => PatchStrategy::Replace,
            },
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::builtin::kinds::find_kind;

    fn info(group: &str, kind: &str) -> BuiltinTypeInfo {
        BuiltinTypeInfo::new(find_kind(group, kind).expect("kind served"))
    }

    #[test]
    fn deployment_containers_merge_by_name() {
        let t = info("apps", "Deployment");
        let path = ["spec", "template", "spec", "containers"];
        assert_eq!(t.list_type(&path), ListType::Map(vec!["name".into()]));
        assert_eq!(
            t.patch_strategy(&path),
            PatchStrategy::MergeByKey("name".into())
        );
        let ports = ["spec", "template", "spec", "containers", "ports"];
        assert_eq!(
            t.list_type(&ports),
            ListType::Map(vec!["containerPort".into(), "protocol".into()])
        );
        assert_eq!(
            t.patch_strategy(&ports),
            PatchStrategy::MergeByKey("containerPort".into())
        );
        assert_eq!(
            t.list_type(&["spec", "template", "spec", "tolerations"]),
            ListType::Atomic
        );
        assert!(t.map_is_atomic(&["spec", "selector"]));
        let core_event = info("", "Event");
        assert!(core_event.map_is_atomic(&["involvedObject"]));
        assert!(core_event.map_is_atomic(&["related"]));
        assert!(info("events.k8s.io", "Event").map_is_atomic(&["regarding"]));
        assert!(!t.map_is_atomic(&["spec", "template", "metadata", "labels"]));
    }

    #[test]
    fn service_ports_and_metadata() {
        let t = info("", "Service");
        assert_eq!(
            t.list_type(&["spec", "ports"]),
            ListType::Map(vec!["port".into(), "protocol".into()])
        );
        assert_eq!(
            t.patch_strategy(&["spec", "ports"]),
            PatchStrategy::MergeByKey("port".into())
        );
        assert_eq!(t.list_type(&["metadata", "finalizers"]), ListType::Set);
        assert_eq!(
            t.patch_strategy(&["metadata", "finalizers"]),
            PatchStrategy::MergeScalars
        );
        assert_eq!(
            t.patch_strategy(&["metadata", "ownerReferences"]),
            PatchStrategy::MergeByKey("uid".into())
        );
    }

    #[test]
    fn job_conditions_differ_between_apply_and_patch() {
        let t = info("batch", "Job");
        assert_eq!(t.list_type(&["status", "conditions"]), ListType::Atomic);
        assert_eq!(
            t.patch_strategy(&["status", "conditions"]),
            PatchStrategy::MergeByKey("type".into())
        );
        let cron = info("batch", "CronJob");
        assert_eq!(
            cron.list_type(&[
                "spec",
                "jobTemplate",
                "spec",
                "template",
                "spec",
                "containers",
                "env"
            ]),
            ListType::Map(vec!["name".into()])
        );
        let role = info("rbac.authorization.k8s.io", "Role");
        assert_eq!(role.list_type(&["rules"]), ListType::Atomic);
        let pod = info("", "Pod");
        assert_eq!(
            pod.list_type(&["spec", "containers", "volumeMounts"]),
            ListType::Map(vec!["mountPath".into()])
        );
        assert_eq!(
            pod.patch_strategy(&["spec", "hostAliases"]),
            PatchStrategy::MergeByKey("ip".into())
        );
    }
}
