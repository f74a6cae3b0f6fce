//! The built-in Kubernetes kinds a controller can be made for with
//! `create api --resource=false`: where their k8s-openapi types live, their
//! resource names and whether they are namespaced.

/// One built-in kind.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct BuiltinKind {
    /// The group as given to `--group` (`core` for the legacy core group).
    pub group: &'static str,
    /// The API group as Kubernetes names it (`""` for core).
    pub api_group: &'static str,
    pub version: &'static str,
    pub kind: &'static str,
    /// The resource name (used in RBAC rules).
    pub plural: &'static str,
    pub namespaced: bool,
    /// The k8s-openapi module, e.g. `k8s_openapi::api::apps::v1`.
    pub module: &'static str,
}

const fn kind(
    group: &'static str,
    api_group: &'static str,
    version: &'static str,
    kind: &'static str,
    plural: &'static str,
    namespaced: bool,
    module: &'static str,
) -> BuiltinKind {
    BuiltinKind {
        group,
        api_group,
        version,
        kind,
        plural,
        namespaced,
        module,
    }
}

/// Every kind opctl knows, sorted by group, version and kind.
pub const BUILTIN_KINDS: &[BuiltinKind] = &[
    kind(
        "admissionregistration",
        "admissionregistration.k8s.io",
        "v1",
        "MutatingWebhookConfiguration",
        "mutatingwebhookconfigurations",
        false,
        "k8s_openapi::api::admissionregistration::v1",
    ),
    kind(
        "admissionregistration",
        "admissionregistration.k8s.io",
        "v1",
        "ValidatingWebhookConfiguration",
        "validatingwebhookconfigurations",
        false,
        "k8s_openapi::api::admissionregistration::v1",
    ),
    kind(
        "apiextensions",
        "apiextensions.k8s.io",
        "v1",
        "CustomResourceDefinition",
        "customresourcedefinitions",
        false,
        "k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1",
    ),
    kind(
        "apps",
        "apps",
        "v1",
        "DaemonSet",
        "daemonsets",
        true,
        "k8s_openapi::api::apps::v1",
    ),
    kind(
        "apps",
        "apps",
        "v1",
        "Deployment",
        "deployments",
        true,
        "k8s_openapi::api::apps::v1",
    ),
    kind(
        "apps",
        "apps",
        "v1",
        "ReplicaSet",
        "replicasets",
        true,
        "k8s_openapi::api::apps::v1",
    ),
    kind(
        "apps",
        "apps",
        "v1",
        "StatefulSet",
        "statefulsets",
        true,
        "k8s_openapi::api::apps::v1",
    ),
    kind(
        "autoscaling",
        "autoscaling",
        "v2",
        "HorizontalPodAutoscaler",
        "horizontalpodautoscalers",
        true,
        "k8s_openapi::api::autoscaling::v2",
    ),
    kind(
        "batch",
        "batch",
        "v1",
        "CronJob",
        "cronjobs",
        true,
        "k8s_openapi::api::batch::v1",
    ),
    kind(
        "batch",
        "batch",
        "v1",
        "Job",
        "jobs",
        true,
        "k8s_openapi::api::batch::v1",
    ),
    kind(
        "coordination",
        "coordination.k8s.io",
        "v1",
        "Lease",
        "leases",
        true,
        "k8s_openapi::api::coordination::v1",
    ),
    kind(
        "core",
        "",
        "v1",
        "ConfigMap",
        "configmaps",
        true,
        "k8s_openapi::api::core::v1",
    ),
    kind(
        "core",
        "",
        "v1",
        "Endpoints",
        "endpoints",
        true,
        "k8s_openapi::api::core::v1",
    ),
    kind(
        "core",
        "",
        "v1",
        "Event",
        "events",
        true,
        "k8s_openapi::api::core::v1",
    ),
    kind(
        "core",
        "",
        "v1",
        "Namespace",
        "namespaces",
        false,
        "k8s_openapi::api::core::v1",
    ),
    kind(
        "core",
        "",
        "v1",
        "Node",
        "nodes",
        false,
        "k8s_openapi::api::core::v1",
    ),
    kind(
        "core",
        "",
        "v1",
        "PersistentVolume",
        "persistentvolumes",
        false,
        "k8s_openapi::api::core::v1",
    ),
    kind(
        "core",
        "",
        "v1",
        "PersistentVolumeClaim",
        "persistentvolumeclaims",
        true,
        "k8s_openapi::api::core::v1",
    ),
    kind(
        "core",
        "",
        "v1",
        "Pod",
        "pods",
        true,
        "k8s_openapi::api::core::v1",
    ),
    kind(
        "core",
        "",
        "v1",
        "Secret",
        "secrets",
        true,
        "k8s_openapi::api::core::v1",
    ),
    kind(
        "core",
        "",
        "v1",
        "Service",
        "services",
        true,
        "k8s_openapi::api::core::v1",
    ),
    kind(
        "core",
        "",
        "v1",
        "ServiceAccount",
        "serviceaccounts",
        true,
        "k8s_openapi::api::core::v1",
    ),
    kind(
        "discovery",
        "discovery.k8s.io",
        "v1",
        "EndpointSlice",
        "endpointslices",
        true,
        "k8s_openapi::api::discovery::v1",
    ),
    kind(
        "events",
        "events.k8s.io",
        "v1",
        "Event",
        "events",
        true,
        "k8s_openapi::api::events::v1",
    ),
    kind(
        "networking",
        "networking.k8s.io",
        "v1",
        "Ingress",
        "ingresses",
        true,
        "k8s_openapi::api::networking::v1",
    ),
    kind(
        "networking",
        "networking.k8s.io",
        "v1",
        "IngressClass",
        "ingressclasses",
        false,
        "k8s_openapi::api::networking::v1",
    ),
    kind(
        "networking",
        "networking.k8s.io",
        "v1",
        "NetworkPolicy",
        "networkpolicies",
        true,
        "k8s_openapi::api::networking::v1",
    ),
    kind(
        "policy",
        "policy",
        "v1",
        "PodDisruptionBudget",
        "poddisruptionbudgets",
        true,
        "k8s_openapi::api::policy::v1",
    ),
    kind(
        "rbac",
        "rbac.authorization.k8s.io",
        "v1",
        "ClusterRole",
        "clusterroles",
        false,
        "k8s_openapi::api::rbac::v1",
    ),
    kind(
        "rbac",
        "rbac.authorization.k8s.io",
        "v1",
        "ClusterRoleBinding",
        "clusterrolebindings",
        false,
        "k8s_openapi::api::rbac::v1",
    ),
    kind(
        "rbac",
        "rbac.authorization.k8s.io",
        "v1",
        "Role",
        "roles",
        true,
        "k8s_openapi::api::rbac::v1",
    ),
    kind(
        "rbac",
        "rbac.authorization.k8s.io",
        "v1",
        "RoleBinding",
        "rolebindings",
        true,
        "k8s_openapi::api::rbac::v1",
    ),
    kind(
        "scheduling",
        "scheduling.k8s.io",
        "v1",
        "PriorityClass",
        "priorityclasses",
        false,
        "k8s_openapi::api::scheduling::v1",
    ),
    kind(
        "storage",
        "storage.k8s.io",
        "v1",
        "StorageClass",
        "storageclasses",
        false,
        "k8s_openapi::api::storage::v1",
    ),
];

/// Whether `group` (as given to `--group`, or its full form such as
/// `rbac.authorization.k8s.io`) is a built-in Kubernetes group.
pub fn is_builtin_group(group: &str) -> bool {
    BUILTIN_KINDS
        .iter()
        .any(|k| k.group == group || (!k.api_group.is_empty() && k.api_group == group))
}

/// The built-in kind `group/version kind`; `group` may be the short form
/// (`apps`, `core`, `rbac`), the full API group (`rbac.authorization.k8s.io`)
/// or empty for core.
pub fn find(group: &str, version: &str, kind: &str) -> Option<&'static BuiltinKind> {
    BUILTIN_KINDS.iter().find(|k| {
        let group_matches = k.group == group || k.api_group == group;
        group_matches && k.version == version && k.kind == kind
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_table_is_sorted_and_unique() {
        let keys: Vec<_> = BUILTIN_KINDS
            .iter()
            .map(|k| (k.group, k.version, k.kind))
            .collect();
        let mut sorted = keys.clone();
        sorted.sort();
        sorted.dedup();
        assert_eq!(keys, sorted);
    }

    #[test]
    fn kinds_are_found_by_short_or_full_group() {
        let deployment = find("apps", "v1", "Deployment").expect("Deployment");
        assert_eq!(deployment.plural, "deployments");
        assert_eq!(deployment.module, "k8s_openapi::api::apps::v1");
        let pod = find("core", "v1", "Pod").expect("Pod");
        assert_eq!(pod.api_group, "");
        assert_eq!(find("", "v1", "Pod"), Some(pod));
        assert!(find("rbac.authorization.k8s.io", "v1", "Role").is_some());
        assert!(find("apps", "v1", "Database").is_none());
        assert!(find("apps", "v2", "Deployment").is_none());
    }

    #[test]
    fn built_in_groups_are_recognised() {
        assert!(is_builtin_group("core"));
        assert!(is_builtin_group("apps"));
        assert!(is_builtin_group("networking.k8s.io"));
        assert!(!is_builtin_group("zalando"));
    }
}

#[cfg(test)]
mod openapi_tests {
    use super::*;
    use k8s_openapi::{NamespaceResourceScope, Resource};
    use std::any::TypeId;

    fn check<K: Resource>(module: &str)
    where
        K::Scope: 'static,
    {
        let kind = find(K::GROUP, K::VERSION, K::KIND).unwrap_or_else(|| {
            panic!(
                "{}/{} {} is missing from the table",
                K::GROUP,
                K::VERSION,
                K::KIND
            )
        });
        assert_eq!(kind.api_group, K::GROUP);
        assert_eq!(kind.plural, K::URL_PATH_SEGMENT, "{}", K::KIND);
        assert_eq!(kind.module, module, "{}", K::KIND);
        let namespaced = TypeId::of::<K::Scope>() == TypeId::of::<NamespaceResourceScope>();
        assert_eq!(kind.namespaced, namespaced, "{}", K::KIND);
    }

    macro_rules! check_all {
        ($($module:path => [$($kind:ident),+ $(,)?];)*) => {
            $({
                use $module as module;
                let name = stringify!($module).replace(' ', "");
                $(check::<module::$kind>(&name);)+
            })*
        };
    }

    /// Every row names a real k8s-openapi type with the same group, version,
    /// resource name and scope, so generated controllers compile.
    #[test]
    fn every_row_matches_k8s_openapi() {
        check_all! {
            k8s_openapi::api::admissionregistration::v1 => [MutatingWebhookConfiguration, ValidatingWebhookConfiguration];
            k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1 => [CustomResourceDefinition];
            k8s_openapi::api::apps::v1 => [DaemonSet, Deployment, ReplicaSet, StatefulSet];
            k8s_openapi::api::autoscaling::v2 => [HorizontalPodAutoscaler];
            k8s_openapi::api::batch::v1 => [CronJob, Job];
            k8s_openapi::api::coordination::v1 => [Lease];
            k8s_openapi::api::core::v1 => [ConfigMap, Endpoints, Event, Namespace, Node, PersistentVolume, PersistentVolumeClaim, Pod, Secret, Service, ServiceAccount];
            k8s_openapi::api::discovery::v1 => [EndpointSlice];
            k8s_openapi::api::events::v1 => [Event];
            k8s_openapi::api::networking::v1 => [Ingress, IngressClass, NetworkPolicy];
            k8s_openapi::api::policy::v1 => [PodDisruptionBudget];
            k8s_openapi::api::rbac::v1 => [ClusterRole, ClusterRoleBinding, Role, RoleBinding];
            k8s_openapi::api::scheduling::v1 => [PriorityClass];
            k8s_openapi::api::storage::v1 => [StorageClass];
        }
        assert_eq!(BUILTIN_KINDS.len(), 34);
    }
}
