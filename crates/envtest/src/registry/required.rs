//! Kinds the server's own machinery depends on (the namespace lifecycle, the
//! serviceaccount controller, the CRD registry, event lookups). They come from
//! `builtin::kinds()`; these entries are only a fallback used when that table
//! does not list them, so the server always works end to end.

use crate::builtin::KindInfo;

const ALL: &[&str] = &[
    "create",
    "delete",
    "deletecollection",
    "get",
    "list",
    "patch",
    "update",
    "watch",
];

pub static REQUIRED: &[KindInfo] = &[
    KindInfo {
        group: "",
        version: "v1",
        kind: "Namespace",
        plural: "namespaces",
        singular: "namespace",
        namespaced: false,
        short_names: &["ns"],
        categories: &[],
        verbs: &[
            "create", "delete", "get", "list", "patch", "update", "watch",
        ],
        has_status: true,
        has_scale: false,
    },
    KindInfo {
        group: "",
        version: "v1",
        kind: "ServiceAccount",
        plural: "serviceaccounts",
        singular: "serviceaccount",
        namespaced: true,
        short_names: &["sa"],
        categories: &[],
        verbs: ALL,
        has_status: false,
        has_scale: false,
    },
    KindInfo {
        group: "",
        version: "v1",
        kind: "Event",
        plural: "events",
        singular: "event",
        namespaced: true,
        short_names: &["ev"],
        categories: &[],
        verbs: ALL,
        has_status: false,
        has_scale: false,
    },
    KindInfo {
        group: "apiextensions.k8s.io",
        version: "v1",
        kind: "CustomResourceDefinition",
        plural: "customresourcedefinitions",
        singular: "customresourcedefinition",
        namespaced: false,
        short_names: &["crd", "crds"],
        categories: &["api-extensions"],
        verbs: ALL,
        has_status: true,
        has_scale: false,
    },
];
