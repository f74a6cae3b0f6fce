//! Built-in kinds: the table of kinds served, their typed decoding (which
//! prunes unknown fields), defaults, validation, Table columns and
//! shape information for patches.
//!
//! Ground truth: the transcripts recorded from kube-apiserver v1.32
//! (`tests/fixtures/transcripts`), then the Kubernetes sources of that version.

pub(crate) mod certificates;
mod decode;
mod defaults;
pub(crate) mod events;
pub(crate) mod hpa;
mod kinds;
mod listtypes;
mod prepare;
mod service_allocators;
mod shape;
mod tables;
pub(crate) mod validation;
pub(crate) mod warnings;

#[cfg(test)]
mod tests;
#[cfg(test)]
mod tests_kinds;
#[cfg(test)]
mod tests_props;

use std::sync::LazyLock;

use serde_json::Value;

use crate::error::{ApiResult, Cause};
use crate::typeinfo::{TypeInfo, Untyped};

/// The fields of a Pod volume that name its source; exactly one is set.
const VOLUME_SOURCES: &[&str] = &[
    "hostPath",
    "emptyDir",
    "gcePersistentDisk",
    "awsElasticBlockStore",
    "gitRepo",
    "secret",
    "nfs",
    "iscsi",
    "glusterfs",
    "persistentVolumeClaim",
    "rbd",
    "flexVolume",
    "cinder",
    "cephfs",
    "flocker",
    "downwardAPI",
    "fc",
    "azureFile",
    "configMap",
    "vsphereVolume",
    "quobyte",
    "azureDisk",
    "photonPersistentDisk",
    "projected",
    "portworxVolume",
    "scaleIO",
    "storageos",
    "csi",
    "ephemeral",
    "image",
];

#[cfg(test)]
pub(crate) use kinds::{find, find_kind};
pub(crate) use service_allocators::Allocator;
pub(crate) use tables::sort_for_printing;

/// A subresource of a served resource.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Subresource {
    pub name: &'static str,
    /// The group and version of the kind it answers, when not the resource's.
    pub group: Option<(&'static str, &'static str)>,
    /// The kind it answers, when not the resource's.
    pub kind: Option<&'static str>,
    /// Its verbs, sorted as discovery lists them.
    pub verbs: &'static [&'static str],
}

/// Where a kind's objects are stored when not as themselves: kube-apiserver
/// serves some kinds as a second view of another kind's storage, converting
/// on every read and write.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum StoredAs {
    /// As core/v1 Events (`events.k8s.io/v1` Events).
    CoreEvents,
    /// As `autoscaling/v2` HorizontalPodAutoscalers (`autoscaling/v1` ones).
    AutoscalingV2,
}

impl StoredAs {
    /// The stored objects' `apiVersion`.
    pub(crate) fn api_version(self) -> &'static str {
        match self {
            StoredAs::CoreEvents => "v1",
            StoredAs::AutoscalingV2 => "autoscaling/v2",
        }
    }

    /// The stored objects' group.
    pub(crate) fn group(self) -> &'static str {
        match self {
            StoredAs::CoreEvents => "",
            StoredAs::AutoscalingV2 => "autoscaling",
        }
    }

    /// The stored objects' kind.
    pub(crate) fn kind(self) -> &'static str {
        match self {
            StoredAs::CoreEvents => "Event",
            StoredAs::AutoscalingV2 => "HorizontalPodAutoscaler",
        }
    }

    /// The plural of the stored resource.
    pub(crate) fn plural(self) -> &'static str {
        match self {
            StoredAs::CoreEvents => "events",
            StoredAs::AutoscalingV2 => "horizontalpodautoscalers",
        }
    }

    /// A stored object as the viewing kind shows it (type meta not set).
    pub(crate) fn read_stored(self, stored: &Value) -> Value {
        match self {
            StoredAs::CoreEvents => events::core_to_events_v1(stored),
            StoredAs::AutoscalingV2 => hpa::v2_to_v1(stored),
        }
    }

    /// An object of the viewing kind in its stored shape (type meta not set).
    pub(crate) fn to_storage(self, obj: &Value) -> Value {
        match self {
            StoredAs::CoreEvents => events::events_v1_to_core(obj),
            StoredAs::AutoscalingV2 => hpa::v1_to_v2(obj),
        }
    }
}

/// One built-in kind and how it is served.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct KindInfo {
    /// API group; empty for the core group.
    pub group: &'static str,
    /// The version, e.g. `v1`.
    pub version: &'static str,
    /// The kind, e.g. `ConfigMap`.
    pub kind: &'static str,
    /// Resource name in URLs, e.g. `configmaps`.
    pub plural: &'static str,
    /// The singular resource name, e.g. `configmap`.
    pub singular: &'static str,
    /// Whether objects live in a namespace.
    pub namespaced: bool,
    /// The short names (`cm`), as discovery lists them.
    pub short_names: &'static [&'static str],
    /// The categories (`all`), as discovery lists them.
    pub categories: &'static [&'static str],
    /// The verbs the resource serves, sorted.
    pub verbs: &'static [&'static str],
    /// Served with a `/status` subresource.
    pub has_status: bool,
    /// Served with a `/scale` subresource.
    pub has_scale: bool,
    /// The subresources served beside `status` and `scale` (`pods/exec`,
    /// `namespaces/finalize`, ...), as kube-apiserver v1.32 lists them.
    pub(crate) other_subresources: &'static [Subresource],
    /// Stored as another kind's objects, which this kind is a view of.
    pub(crate) stored_as: Option<StoredAs>,
    /// The Warning kube-apiserver sends with every request of a deprecated
    /// built-in resource.
    pub(crate) deprecation: Option<&'static str>,
    /// The kind's update strategy lets a PUT create a missing object
    /// (`AllowCreateOnUpdate`).
    pub(crate) create_on_update: bool,
    /// The kind's update strategy lets a PUT without a resourceVersion
    /// through (`AllowUnconditionalUpdate`).
    pub(crate) unconditional_update: bool,
    /// A DELETE answers with the deleted object, not a Status (the
    /// registry's `ReturnDeletedObject`).
    pub(crate) returns_deleted_object: bool,
    /// The typed round trip through the kind's k8s-openapi type.
    codec: decode::Codec,
}

impl KindInfo {
    /// The `$ref` to the kind's schema, which `generator` now defines.
    pub(crate) fn schema(&self, generator: &mut schemars::SchemaGenerator) -> schemars::Schema {
        self.codec.schema(generator)
    }

    /// `v1` or `apps/v1`.
    pub fn api_version(&self) -> String {
        if self.group.is_empty() {
            self.version.to_string()
        } else {
            format!("{}/{}", self.group, self.version)
        }
    }

    /// The group as `opctl create api --group` takes it: `core` for the
    /// core group, else the first part of the API group (`apps`, `rbac`).
    pub fn short_group(&self) -> &'static str {
        match self.group {
            "" => "core",
            group => group.split('.').next().unwrap_or(group),
        }
    }

    /// The k8s-openapi module that holds the kind's type, e.g.
    /// `k8s_openapi::api::apps::v1` (a test checks it against the type).
    pub fn rust_module(&self) -> String {
        match self.group {
            "apiextensions.k8s.io" => format!(
                "k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::{}",
                self.version
            ),
            "apiregistration.k8s.io" => format!(
                "k8s_openapi::kube_aggregator::pkg::apis::apiregistration::{}",
                self.version
            ),
            _ => format!("k8s_openapi::api::{}::{}", self.short_group(), self.version),
        }
    }

    /// Whether a controller can watch the kind (reviews cannot: they are
    /// only created).
    pub fn is_watchable(&self) -> bool {
        self.verbs.contains(&"watch")
    }

    /// Whether objects of the kind are stored: reviews and component
    /// statuses are answers made on the spot (and discovery gives them no
    /// storage version hash). Every stored kind can be watched.
    pub fn is_stored(&self) -> bool {
        self.is_watchable()
    }
}

/// Every built-in kind the server serves, each in its preferred version.
pub fn kinds() -> &'static [KindInfo] {
    kinds::KINDS
}

/// Older versions of [`kinds`] the server serves too (`autoscaling/v1`).
pub(crate) fn older_versions() -> &'static [KindInfo] {
    kinds::OLDER_VERSIONS
}

/// Decodes a request body object as the typed kind: fields the type does not
/// know are dropped and their paths returned for warnings or the Strict
/// error; values of the wrong type are a 400 shaped like the real
/// server's (`<Kind> in version "<v>" cannot be handled as a <Kind>: ...`).
///
/// The paths come in the order the real server reports them for a JSON
/// body: depth first in document order, each once, at most 100. (For a YAML
/// body the real server's YAML-to-JSON step sorts keys first, so the order
/// follows sorted keys at each level.) `apiVersion`
/// and `kind` of the result are the kind's own (the server checks the body's
/// against the URL first). Values are canonicalised as Go writes them back
/// (quantities, times, base64) and empty maps and lists are dropped where Go
/// omits them.
pub(crate) fn decode(kind: &KindInfo, obj: Value) -> ApiResult<(Value, Vec<String>)> {
    decode::decode(kind, obj)
}

/// Fills in the defaults kube-apiserver applies to `kind` on create and update,
/// including what its v1 conversion does (a Secret's `stringData` folded into
/// `data`, a PodSpec's deprecated `serviceAccount` mirrored).
pub(crate) fn apply_defaults(kind: &KindInfo, obj: &mut Value) {
    defaults::apply(kind, obj);
}

/// The server's own mutating admission plugins on create: for a Pod,
/// ServiceAccount (`serviceAccountName`, the `kube-api-access-<suffix>`
/// volume mounted in every container that has nothing at its path),
/// Priority and DefaultTolerationSeconds. kube-apiserver runs them before
/// the mutating webhooks, and once more after them when a webhook changed
/// the object (it reinvokes its in-tree plugins), so a container a webhook
/// adds gets the token too. Running them again changes nothing else.
///
/// `service_account` is the Pod's ServiceAccount as stored (see
/// [`pod_service_account_name`]); `None` stands for one with no settings.
pub(crate) fn admit_create(kind: &KindInfo, obj: &mut Value, service_account: Option<&Value>) {
    prepare::admit_create(kind, obj, service_account);
}

/// The ServiceAccount a Pod runs as: the one it names, else `default`.
pub(crate) fn pod_service_account_name(pod: &Value) -> &str {
    prepare::pod_service_account_name(pod)
}

/// Create-time changes the real server's registry strategies make before
/// validation (after admission): `generation: 1` where the kind tracks it,
/// a Job's generated selector and labels, status cleared where a status
/// subresource exists, and the like.
///
/// As in kube-apiserver, the server fills in `metadata.uid` and the name
/// generated from `generateName` before calling this: a Job's generated
/// selector and labels use both.
pub(crate) fn prepare_for_create(kind: &KindInfo, obj: &mut Value) {
    prepare::for_create(kind, obj);
}

/// Update-time changes before validation. On the main resource of a kind with
/// a status subresource, status is kept from `old` and `generation` is bumped
/// when the spec changed; on the `status` subresource only status is taken from
/// `obj`. `subresource` is `None`, `Some("status")` or, for namespaces,
/// `Some("finalize")` (only `spec.finalizers` taken from `obj`). As
/// `rest.BeforeUpdate` does, the stored uid (when `obj` has none), creation
/// and deletion timestamps and grace period are kept, and `generation` is
/// the stored one (bumped where the kind tracks spec changes).
pub(crate) fn prepare_for_update(
    kind: &KindInfo,
    obj: &mut Value,
    old: &Value,
    subresource: Option<&str>,
) {
    prepare::for_update(kind, obj, old, subresource);
}

/// [`validate`] of an update through a subresource that has rules of its
/// own (a CertificateSigningRequest's `status` and `approval`).
pub(crate) fn validate_subresource(
    kind: &KindInfo,
    obj: &Value,
    old: &Value,
    subresource: &str,
) -> Vec<Cause> {
    validation::validate_through(kind, obj, Some(old), Some(subresource))
}

/// Validates metadata (name rules per kind, labels, annotations, finalizers,
/// ownerReferences) and the kind's own fields. `old` is set on update.
///
/// `obj` carries its namespace (set from the URL by the server). Errors come
/// in the order kube-apiserver reports them (metadata first).
/// CustomResourceDefinitions are validated by `schema::validate_crd`
/// (metadata included); Events of both APIs may be given in either shape.
/// The 422 for an events.k8s.io/v1 Event names the core kind (`Event "x" is
/// invalid`, no group), as the real server does. Whether an update carries
/// `metadata.resourceVersion` is the server's business.
pub(crate) fn validate(kind: &KindInfo, obj: &Value, old: Option<&Value>) -> Vec<Cause> {
    validation::validate(kind, obj, old)
}

static TYPE_INFOS: LazyLock<Vec<listtypes::BuiltinTypeInfo>> = LazyLock::new(|| {
    kinds::KINDS
        .iter()
        .chain(kinds::OLDER_VERSIONS)
        .map(listtypes::BuiltinTypeInfo::new)
        .collect()
});

/// Shape information (list keys) for strategic merge patch and apply.
pub(crate) fn type_info(kind: &KindInfo) -> &'static dyn TypeInfo {
    let index = kinds::KINDS
        .iter()
        .chain(kinds::OLDER_VERSIONS)
        .position(|k| k.group == kind.group && k.version == kind.version && k.kind == kind.kind);
    match index.and_then(|i| TYPE_INFOS.get(i)) {
        Some(info) => info,
        None => &Untyped,
    }
}

/// Validates the metadata every object carries (name rules, generateName,
/// labels, annotations, finalizers, ownerReferences). Used for custom resources
/// too; [`validate`] calls it for built-in kinds. `name_is_path_segment` selects
/// the looser rule custom resources use (any name valid as a path segment)
/// instead of a DNS-1123 subdomain.
pub(crate) fn validate_metadata(
    obj: &Value,
    namespaced: bool,
    name_is_path_segment: bool,
) -> Vec<Cause> {
    validation::validate_metadata(obj, namespaced, name_is_path_segment)
}

#[cfg(test)]
/// The metadata rules of an update (`ValidateObjectMetaUpdate`): name,
/// namespace, uid and timestamps immutable, no new finalizers while the
/// object is being deleted, generation not decremented, plus the label,
/// annotation, ownerReference and finalizer rules. Used for custom resources
/// too; [`validate`] calls it for built-in kinds.
pub(crate) fn validate_metadata_update(obj: &Value, old: &Value) -> Vec<Cause> {
    validation::meta::object_meta_update(obj, old)
}

/// `kubectl get` columns for a built-in kind: the `columnDefinitions` and one
/// row of cells per object, as the real server's Table. `None` when the kind has
/// no special columns (the caller then serves Name and Age).
pub(crate) fn table<'a>(
    kind: &KindInfo,
    objects: impl IntoIterator<Item = &'a Value>,
    now: jiff::Timestamp,
) -> Option<(Vec<Value>, Vec<Vec<Value>>)> {
    tables::table(kind, objects, now)
}
