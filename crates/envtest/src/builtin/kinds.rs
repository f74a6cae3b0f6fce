//! The table of built-in kinds: names, scope, short names, categories and
//! verbs as kube-apiserver's discovery documents list them.

use super::KindInfo;

const ALL_VERBS: &[&str] = &[
    "create",
    "delete",
    "deletecollection",
    "get",
    "list",
    "patch",
    "update",
    "watch",
];

/// Namespaces cannot be deleted as a collection.
const NAMESPACE_VERBS: &[&str] = &[
    "create", "delete", "get", "list", "patch", "update", "watch",
];

const ALL: &[&str] = &["all"];
const API_EXTENSIONS: &[&str] = &["api-extensions"];

#[allow(clippy::too_many_arguments)]
const fn kind(
    group: &'static str,
    kind: &'static str,
    plural: &'static str,
    singular: &'static str,
    namespaced: bool,
    short_names: &'static [&'static str],
    categories: &'static [&'static str],
    has_status: bool,
    has_scale: bool,
) -> KindInfo {
    KindInfo {
        group,
        version: "v1",
        kind,
        plural,
        singular,
        namespaced,
        short_names,
        categories,
        verbs: ALL_VERBS,
        has_status,
        has_scale,
    }
}

const NONE: &[&str] = &[];

const AUTHORIZATION: &str = "authorization.k8s.io";

/// A review (`kubectl auth can-i`, `kubectl auth whoami`): created and
/// answered, never stored.
const fn review(
    group: &'static str,
    kind: &'static str,
    plural: &'static str,
    namespaced: bool,
) -> KindInfo {
    KindInfo {
        group,
        version: "v1",
        kind,
        plural,
        singular: "",
        namespaced,
        short_names: NONE,
        categories: NONE,
        verbs: &["create"],
        has_status: false,
        has_scale: false,
    }
}

/// Ordered by group, then resource name, as discovery lists them.
pub(super) static KINDS: &[KindInfo] = &[
    // core/v1
    kind(
        "",
        "ConfigMap",
        "configmaps",
        "configmap",
        true,
        &["cm"],
        NONE,
        false,
        false,
    ),
    kind(
        "",
        "Endpoints",
        "endpoints",
        "endpoints",
        true,
        &["ep"],
        NONE,
        false,
        false,
    ),
    kind(
        "",
        "Event",
        "events",
        "event",
        true,
        &["ev"],
        NONE,
        false,
        false,
    ),
    kind(
        "",
        "LimitRange",
        "limitranges",
        "limitrange",
        true,
        &["limits"],
        NONE,
        false,
        false,
    ),
    KindInfo {
        verbs: NAMESPACE_VERBS,
        ..kind(
            "",
            "Namespace",
            "namespaces",
            "namespace",
            false,
            &["ns"],
            NONE,
            true,
            false,
        )
    },
    kind(
        "",
        "Node",
        "nodes",
        "node",
        false,
        &["no"],
        NONE,
        true,
        false,
    ),
    kind(
        "",
        "PersistentVolumeClaim",
        "persistentvolumeclaims",
        "persistentvolumeclaim",
        true,
        &["pvc"],
        NONE,
        true,
        false,
    ),
    kind("", "Pod", "pods", "pod", true, &["po"], ALL, true, false),
    kind(
        "",
        "PodTemplate",
        "podtemplates",
        "podtemplate",
        true,
        NONE,
        NONE,
        false,
        false,
    ),
    kind(
        "",
        "ResourceQuota",
        "resourcequotas",
        "resourcequota",
        true,
        &["quota"],
        NONE,
        true,
        false,
    ),
    kind(
        "", "Secret", "secrets", "secret", true, NONE, NONE, false, false,
    ),
    kind(
        "",
        "ServiceAccount",
        "serviceaccounts",
        "serviceaccount",
        true,
        &["sa"],
        NONE,
        false,
        false,
    ),
    kind(
        "",
        "Service",
        "services",
        "service",
        true,
        &["svc"],
        ALL,
        true,
        false,
    ),
    // admissionregistration.k8s.io/v1
    kind(
        "admissionregistration.k8s.io",
        "MutatingWebhookConfiguration",
        "mutatingwebhookconfigurations",
        "mutatingwebhookconfiguration",
        false,
        NONE,
        API_EXTENSIONS,
        false,
        false,
    ),
    kind(
        "admissionregistration.k8s.io",
        "ValidatingWebhookConfiguration",
        "validatingwebhookconfigurations",
        "validatingwebhookconfiguration",
        false,
        NONE,
        API_EXTENSIONS,
        false,
        false,
    ),
    // apiextensions.k8s.io/v1
    kind(
        "apiextensions.k8s.io",
        "CustomResourceDefinition",
        "customresourcedefinitions",
        "customresourcedefinition",
        false,
        &["crd", "crds"],
        API_EXTENSIONS,
        true,
        false,
    ),
    // apps/v1
    kind(
        "apps",
        "ControllerRevision",
        "controllerrevisions",
        "controllerrevision",
        true,
        NONE,
        NONE,
        false,
        false,
    ),
    kind(
        "apps",
        "DaemonSet",
        "daemonsets",
        "daemonset",
        true,
        &["ds"],
        ALL,
        true,
        false,
    ),
    kind(
        "apps",
        "Deployment",
        "deployments",
        "deployment",
        true,
        &["deploy"],
        ALL,
        true,
        true,
    ),
    kind(
        "apps",
        "ReplicaSet",
        "replicasets",
        "replicaset",
        true,
        &["rs"],
        ALL,
        true,
        true,
    ),
    kind(
        "apps",
        "StatefulSet",
        "statefulsets",
        "statefulset",
        true,
        &["sts"],
        ALL,
        true,
        true,
    ),
    // authentication.k8s.io/v1 and authorization.k8s.io/v1: reviews,
    // answered and never stored
    review(
        "authentication.k8s.io",
        "SelfSubjectReview",
        "selfsubjectreviews",
        false,
    ),
    review(
        "authentication.k8s.io",
        "TokenReview",
        "tokenreviews",
        false,
    ),
    review(
        AUTHORIZATION,
        "LocalSubjectAccessReview",
        "localsubjectaccessreviews",
        true,
    ),
    review(
        AUTHORIZATION,
        "SelfSubjectAccessReview",
        "selfsubjectaccessreviews",
        false,
    ),
    review(
        AUTHORIZATION,
        "SelfSubjectRulesReview",
        "selfsubjectrulesreviews",
        false,
    ),
    review(
        AUTHORIZATION,
        "SubjectAccessReview",
        "subjectaccessreviews",
        false,
    ),
    // batch/v1
    kind(
        "batch",
        "CronJob",
        "cronjobs",
        "cronjob",
        true,
        &["cj"],
        ALL,
        true,
        false,
    ),
    kind("batch", "Job", "jobs", "job", true, NONE, ALL, true, false),
    // coordination.k8s.io/v1
    kind(
        "coordination.k8s.io",
        "Lease",
        "leases",
        "lease",
        true,
        NONE,
        NONE,
        false,
        false,
    ),
    // events.k8s.io/v1
    kind(
        "events.k8s.io",
        "Event",
        "events",
        "event",
        true,
        &["ev"],
        NONE,
        false,
        false,
    ),
    // rbac.authorization.k8s.io/v1
    kind(
        "rbac.authorization.k8s.io",
        "ClusterRoleBinding",
        "clusterrolebindings",
        "clusterrolebinding",
        false,
        NONE,
        NONE,
        false,
        false,
    ),
    kind(
        "rbac.authorization.k8s.io",
        "ClusterRole",
        "clusterroles",
        "clusterrole",
        false,
        NONE,
        NONE,
        false,
        false,
    ),
    kind(
        "rbac.authorization.k8s.io",
        "RoleBinding",
        "rolebindings",
        "rolebinding",
        true,
        NONE,
        NONE,
        false,
        false,
    ),
    kind(
        "rbac.authorization.k8s.io",
        "Role",
        "roles",
        "role",
        true,
        NONE,
        NONE,
        false,
        false,
    ),
];

/// The `storageVersionHash` discovery shows for a kind: the first 8 bytes of
/// SHA-256 over `<group>/<version>/<kind>` of its storage version, base64.
/// Precomputed; events.k8s.io Events share core Events' storage.
pub fn storage_version_hash(kind: &KindInfo) -> Option<&'static str> {
    Some(match (kind.group, kind.kind) {
        ("", "ConfigMap") => "qFsyl6wFWjQ=",
        ("", "Endpoints") => "fWeeMqaN/OA=",
        ("", "Event") | ("events.k8s.io", "Event") => "r2yiGXH7wu8=",
        ("", "LimitRange") => "EBKMFVe6cwo=",
        ("", "Namespace") => "Q3oi5N2YM8M=",
        ("", "Node") => "XwShjMxG9Fs=",
        ("", "PersistentVolumeClaim") => "QWTyNDq0dC4=",
        ("", "Pod") => "xPOwRZ+Yhw8=",
        ("", "PodTemplate") => "LIXB2x4IFpk=",
        ("", "ResourceQuota") => "8uhSgffRX6w=",
        ("", "Secret") => "S6u1pOWzb84=",
        ("", "ServiceAccount") => "pbx9ZvyFpBE=",
        ("", "Service") => "0/CO1lhkEBI=",
        ("apps", "ControllerRevision") => "85nkx63pcBU=",
        ("apps", "DaemonSet") => "dd7pWHUlMKQ=",
        ("apps", "Deployment") => "8aSe+NMegvE=",
        ("apps", "ReplicaSet") => "P1RzHs8/mWQ=",
        ("apps", "StatefulSet") => "H+vl74LkKdo=",
        ("apiextensions.k8s.io", "CustomResourceDefinition") => "jfWCUB31mvA=",
        ("admissionregistration.k8s.io", "MutatingWebhookConfiguration") => "Sqi0GUgDaX0=",
        ("admissionregistration.k8s.io", "ValidatingWebhookConfiguration") => "B0wHjQmsGNk=",
        ("batch", "CronJob") => "sd5LIXh4Fjs=",
        ("batch", "Job") => "mudhfqk/qZY=",
        ("coordination.k8s.io", "Lease") => "gqkMMb/YqFM=",
        ("rbac.authorization.k8s.io", "ClusterRoleBinding") => "48tpQ8gZHFc=",
        ("rbac.authorization.k8s.io", "ClusterRole") => "bYE5ZWDrJ44=",
        ("rbac.authorization.k8s.io", "RoleBinding") => "eGsCzGH6b1g=",
        ("rbac.authorization.k8s.io", "Role") => "7FuwZcIIItM=",
        _ => return None,
    })
}

/// Finds a kind by group and resource name (`apps`, `deployments`).
pub fn find(group: &str, plural: &str) -> Option<&'static KindInfo> {
    KINDS
        .iter()
        .find(|k| k.group == group && k.plural == plural)
}

/// Finds a kind by group and kind name (`apps`, `Deployment`).
pub fn find_kind(group: &str, kind: &str) -> Option<&'static KindInfo> {
    KINDS.iter().find(|k| k.group == group && k.kind == kind)
}
