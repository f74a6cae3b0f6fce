//! Built-in kinds: the table of kinds served, their typed decoding (which
//! prunes unknown fields), defaults, validation, Table columns and
//! shape information for patches.

use serde_json::Value;

use crate::error::{ApiResult, Cause};
use crate::typeinfo::{TypeInfo, Untyped};

/// One built-in kind and how it is served.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct KindInfo {
    /// API group; empty for the core group.
    pub group: &'static str,
    pub version: &'static str,
    pub kind: &'static str,
    /// Resource name in URLs, e.g. `configmaps`.
    pub plural: &'static str,
    pub singular: &'static str,
    pub namespaced: bool,
    pub short_names: &'static [&'static str],
    pub categories: &'static [&'static str],
    pub verbs: &'static [&'static str],
    pub has_status: bool,
    pub has_scale: bool,
}

impl KindInfo {
    /// `v1` or `apps/v1`.
    pub fn api_version(&self) -> String {
        if self.group.is_empty() {
            self.version.to_string()
        } else {
            format!("{}/{}", self.group, self.version)
        }
    }
}

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

/// Every built-in kind the server serves.
pub fn kinds() -> &'static [KindInfo] {
    &[KindInfo {
        group: "",
        version: "v1",
        kind: "ConfigMap",
        plural: "configmaps",
        singular: "configmap",
        namespaced: true,
        short_names: &["cm"],
        categories: &[],
        verbs: ALL_VERBS,
        has_status: false,
        has_scale: false,
    }]
}

/// Decodes a request body object as the typed kind: fields the type does not
/// know are dropped and their paths returned (sorted) for warnings or the
/// Strict error; values of the wrong type are a 400 shaped like the real
/// server's (`<Kind> in version "<v>" cannot be handled as a <Kind>: ...`).
pub fn decode(kind: &KindInfo, obj: Value) -> ApiResult<(Value, Vec<String>)> {
    let _ = kind;
    Ok((obj, Vec::new()))
}

/// Fills in the defaults kube-apiserver applies to `kind` on create and update.
pub fn apply_defaults(kind: &KindInfo, obj: &mut Value) {
    let _ = (kind, obj);
}

/// Create-time changes the real server's registry strategies and admission
/// plugins make before validation: `generation: 1` where the kind tracks it,
/// Secret `stringData` folded into `data`, a Job's generated selector and
/// labels, a Pod's `serviceAccountName` and `kube-api-access-<suffix>`
/// volume, status cleared where a status subresource exists, and the like.
pub fn prepare_for_create(kind: &KindInfo, obj: &mut Value) {
    let _ = (kind, obj);
}

/// Update-time changes before validation. On the main resource of a kind with
/// a status subresource, status is kept from `old` and `generation` is bumped
/// when the spec changed; on the `status` subresource only status is taken from
/// `obj`. `subresource` is `None` or `Some("status")`.
pub fn prepare_for_update(
    kind: &KindInfo,
    obj: &mut Value,
    old: &Value,
    subresource: Option<&str>,
) {
    let _ = (kind, obj, old, subresource);
}

/// Validates metadata (name rules per kind, labels, annotations, finalizers,
/// ownerReferences) and the kind's own fields. `old` is set on update.
pub fn validate(kind: &KindInfo, obj: &Value, old: Option<&Value>) -> Vec<Cause> {
    let _ = (kind, obj, old);
    Vec::new()
}

/// Shape information (list keys) for strategic merge patch and apply.
pub fn type_info(kind: &KindInfo) -> &'static dyn TypeInfo {
    let _ = kind;
    &Untyped
}

/// Validates the metadata every object carries (name rules, generateName,
/// labels, annotations, finalizers, ownerReferences). Used for custom resources
/// too; [`validate`] calls it for built-in kinds. `name_is_path_segment` selects
/// the looser rule custom resources use (any name valid as a path segment)
/// instead of a DNS-1123 subdomain.
pub fn validate_metadata(obj: &Value, namespaced: bool, name_is_path_segment: bool) -> Vec<Cause> {
    let _ = (obj, namespaced, name_is_path_segment);
    Vec::new()
}

/// `kubectl get` columns for a built-in kind: the `columnDefinitions` and one
/// row of cells per object, as the real server's Table. `None` when the kind has
/// no special columns (the caller then serves Name and Age).
pub fn table(
    kind: &KindInfo,
    objects: &[Value],
    now: jiff::Timestamp,
) -> Option<(Vec<Value>, Vec<Vec<Value>>)> {
    let _ = (kind, objects, now);
    None
}

/// Cluster IPs (10.96.0.0/12) and node ports (30000–32767) handed out to Services.
#[derive(Debug, Default)]
pub struct Allocator {
    _private: (),
}

impl Allocator {
    /// Assigns `spec.clusterIP(s)` and node ports a Service needs, honouring
    /// requested values (422 causes when taken or out of range). On dry run the
    /// values are shown but not reserved.
    pub fn allocate_service(&mut self, svc: &mut Value, dry_run: bool) -> Result<(), Vec<Cause>> {
        let _ = (svc, dry_run);
        Ok(())
    }

    /// Frees what a deleted Service held.
    pub fn release_service(&mut self, svc: &Value) {
        let _ = svc;
    }
}

/// Events are stored once and served through two APIs. The store keeps the
/// core/v1 shape; these convert for `events.k8s.io/v1` requests and responses.
pub mod events {
    use serde_json::Value;

    /// core/v1 Event → events.k8s.io/v1 Event.
    pub fn core_to_events_v1(obj: &Value) -> Value {
        obj.clone()
    }

    /// events.k8s.io/v1 Event → core/v1 Event.
    pub fn events_v1_to_core(obj: &Value) -> Value {
        obj.clone()
    }
}
