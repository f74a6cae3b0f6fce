//! What a webhook is told about one request, and the `AdmissionRequest` built from it.

use std::collections::BTreeMap;

use serde_json::{Map, Value, json};

use crate::user::UserInfo;

/// The admission operation (`request.operation`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Operation {
    /// A create (`CREATE`).
    Create,
    /// An update or patch (`UPDATE`).
    Update,
    /// A delete (`DELETE`).
    Delete,
}

impl Operation {
    /// The wire form: `CREATE`, `UPDATE`, `DELETE`, `CONNECT`.
    pub fn as_str(self) -> &'static str {
        match self {
            Operation::Create => "CREATE",
            Operation::Update => "UPDATE",
            Operation::Delete => "DELETE",
        }
    }
}

/// A group, version and kind (`request.kind`). The core group is `""`.
#[derive(Debug, Clone, Default, PartialEq, Eq, Hash)]
pub struct GroupVersionKind {
    /// The API group.
    pub group: String,
    /// The version.
    pub version: String,
    /// The kind, e.g. `Deployment`.
    pub kind: String,
}

/// `object` of kind `from` as an object of kind `to`: the `apiVersion` is
/// rewritten when it is `from`'s (a Scale stays a Scale).
pub(crate) fn convert(object: &Value, from: &GroupVersionKind, to: &GroupVersionKind) -> Value {
    let mut object = object.clone();
    if from != to
        && let Some(map) = object.as_object_mut()
        && map.get("apiVersion").and_then(Value::as_str) == Some(from.api_version().as_str())
    {
        map.insert("apiVersion".into(), Value::String(to.api_version()));
    }
    object
}

impl GroupVersionKind {
    /// `group/version`, or `version` for the core group.
    pub fn api_version(&self) -> String {
        if self.group.is_empty() {
            self.version.clone()
        } else {
            format!("{}/{}", self.group, self.version)
        }
    }

    /// A group, version and kind.
    pub fn new(group: &str, version: &str, kind: &str) -> Self {
        GroupVersionKind {
            group: group.to_string(),
            version: version.to_string(),
            kind: kind.to_string(),
        }
    }

    fn to_json(&self) -> Value {
        json!({"group": self.group, "version": self.version, "kind": self.kind})
    }
}

/// A group, version and resource (`request.resource`). The core group is `""`.
#[derive(Debug, Clone, Default, PartialEq, Eq, Hash)]
pub struct GroupVersionResource {
    /// The API group.
    pub group: String,
    /// The version.
    pub version: String,
    /// The resource (plural), e.g. `deployments`.
    pub resource: String,
}

impl GroupVersionResource {
    /// A group, version and resource.
    pub fn new(group: &str, version: &str, resource: &str) -> Self {
        GroupVersionResource {
            group: group.to_string(),
            version: version.to_string(),
            resource: resource.to_string(),
        }
    }

    /// `resource.group` (or `resource` for the core group), as Go's `GroupResource.String()`.
    pub fn group_resource(&self) -> String {
        if self.group.is_empty() {
            self.resource.clone()
        } else {
            format!("{}.{}", self.resource, self.group)
        }
    }

    fn to_json(&self) -> Value {
        json!({"group": self.group, "version": self.version, "resource": self.resource})
    }

    pub(crate) fn is_core_namespaces(&self) -> bool {
        self.group.is_empty() && self.version == "v1" && self.resource == "namespaces"
    }
}

/// Everything a webhook call needs to know about one API request.
///
/// `kind` and `resource` are those of the request as received, sent as
/// `kind`/`resource` and as `requestKind`/`requestResource`, unless the
/// webhook is called for an equivalent version (`for_equivalent`). `object` is the object being
/// admitted as it would be stored (`None` for DELETE), `old_object` the stored
/// object on UPDATE and DELETE. `options` is the `CreateOptions` /
/// `UpdateOptions` / `DeleteOptions` object (with `kind` and `apiVersion`
/// `meta.k8s.io/v1`), as kube-apiserver sends it.
///
/// For requests on a `Namespace` itself, `namespace` must be the namespace's
/// own name, as kube-apiserver sets it; [`AdmissionAttributes::new`] does this.
#[derive(Debug, Clone, PartialEq)]
pub struct AdmissionAttributes {
    /// What the request does.
    pub operation: Operation,
    /// The kind of the object, as the request addresses it.
    pub kind: GroupVersionKind,
    /// The resource the request addresses.
    pub resource: GroupVersionResource,
    /// `""`, `status`, `scale`, ...
    pub subresource: String,
    /// The object's name (empty for a create that generates one).
    pub name: String,
    /// `""` for cluster-scoped resources.
    pub namespace: String,
    /// The object as it would be stored (`None` for DELETE).
    pub object: Option<Value>,
    /// The stored object, on UPDATE and DELETE.
    pub old_object: Option<Value>,
    /// Whether the request is a dry run (`dryRun=All`).
    pub dry_run: bool,
    /// The `CreateOptions`, `UpdateOptions` or `DeleteOptions` object.
    pub options: Option<Value>,
    /// Who asks.
    pub user_info: UserInfo,
    /// The other served versions of the same resource (with the kind each
    /// serves), in the order `matchPolicy: Equivalent` tries them: envtest
    /// fills them in for custom resources served in several versions.
    pub equivalents: Vec<(GroupVersionKind, GroupVersionResource)>,
    /// The kind and resource of the request as received, when the webhook is
    /// called for an equivalent version (`requestKind`/`requestResource`).
    pub request: Option<(GroupVersionKind, GroupVersionResource)>,
}

impl AdmissionAttributes {
    /// Attributes for `operation` on `name` in `namespace`, with no objects,
    /// no options, no dry run and envtest's admin user.
    pub fn new(
        operation: Operation,
        kind: GroupVersionKind,
        resource: GroupVersionResource,
        namespace: &str,
        name: &str,
    ) -> Self {
        // kube-apiserver reports a Namespace request's namespace as the namespace's name.
        let namespace = if resource.is_core_namespaces() && namespace.is_empty() {
            name
        } else {
            namespace
        };
        AdmissionAttributes {
            operation,
            kind,
            resource,
            subresource: String::new(),
            name: name.to_string(),
            namespace: namespace.to_string(),
            object: None,
            old_object: None,
            dry_run: false,
            options: None,
            user_info: UserInfo::default(),
            equivalents: Vec::new(),
            request: None,
        }
    }

    // For tests, which build attributes without a server.
    #[cfg(any(test, feature = "testing"))]
    /// These attributes with the equivalent versions `matchPolicy: Equivalent` tries.
    pub fn with_equivalents(
        mut self,
        equivalents: Vec<(GroupVersionKind, GroupVersionResource)>,
    ) -> Self {
        self.equivalents = equivalents;
        self
    }

    /// The attributes a webhook sees when it is called for the equivalent
    /// `kind`/`resource` of this request: objects converted to that version
    /// (envtest converts the versions of a resource by rewriting
    /// `apiVersion`), the request's own kind and resource kept as
    /// `requestKind`/`requestResource`.
    pub(crate) fn for_equivalent(
        &self,
        kind: &GroupVersionKind,
        resource: &GroupVersionResource,
    ) -> AdmissionAttributes {
        let mut converted = self.clone();
        converted.object = self.object.as_ref().map(|o| self.convert(o, kind));
        converted.old_object = self.old_object.as_ref().map(|o| self.convert(o, kind));
        converted.kind = kind.clone();
        converted.resource = resource.clone();
        converted.request = Some((self.kind.clone(), self.resource.clone()));
        converted.equivalents = Vec::new();
        converted
    }

    /// `object` (of this request's kind) as an object of kind `to`.
    pub(crate) fn convert(&self, object: &Value, to: &GroupVersionKind) -> Value {
        convert(object, &self.kind, to)
    }

    /// These attributes for a request on `subresource`.
    pub fn with_subresource(mut self, subresource: &str) -> Self {
        self.subresource = subresource.to_string();
        self
    }

    // For tests, which build attributes without a server.
    #[cfg(any(test, feature = "testing"))]
    /// These attributes with `object`.
    pub fn with_object(mut self, object: Value) -> Self {
        self.object = Some(object);
        self
    }

    // For tests, which build attributes without a server.
    #[cfg(any(test, feature = "testing"))]
    /// These attributes with `old_object`.
    pub fn with_old_object(mut self, old_object: Value) -> Self {
        self.old_object = Some(old_object);
        self
    }

    /// These attributes for a dry run, or not.
    pub fn with_dry_run(mut self, dry_run: bool) -> Self {
        self.dry_run = dry_run;
        self
    }

    /// These attributes with the request's options object.
    pub fn with_options(mut self, options: Value) -> Self {
        self.options = Some(options);
        self
    }

    /// The `AdmissionRequest` for one webhook call, with `object` standing for
    /// the object as mutated so far. `Object`/`OldObject`/`Options` are sent
    /// as `null` when absent, as Go's `RawExtension` does.
    pub(crate) fn review_request(&self, uid: &str, object: Option<&Value>) -> Value {
        let mut map = Map::new();
        map.insert("uid".into(), json!(uid));
        map.insert("kind".into(), self.kind.to_json());
        map.insert("resource".into(), self.resource.to_json());
        if !self.subresource.is_empty() {
            map.insert("subResource".into(), json!(self.subresource));
        }
        let (request_kind, request_resource) = match &self.request {
            Some((kind, resource)) => (kind, resource),
            None => (&self.kind, &self.resource),
        };
        map.insert("requestKind".into(), request_kind.to_json());
        map.insert("requestResource".into(), request_resource.to_json());
        if !self.subresource.is_empty() {
            map.insert("requestSubResource".into(), json!(self.subresource));
        }
        if !self.name.is_empty() {
            map.insert("name".into(), json!(self.name));
        }
        if !self.namespace.is_empty() {
            map.insert("namespace".into(), json!(self.namespace));
        }
        map.insert("operation".into(), json!(self.operation.as_str()));
        map.insert("userInfo".into(), self.user_info.to_json());
        map.insert("object".into(), object.cloned().unwrap_or(Value::Null));
        map.insert(
            "oldObject".into(),
            self.old_object.clone().unwrap_or(Value::Null),
        );
        map.insert("dryRun".into(), json!(self.dry_run));
        map.insert(
            "options".into(),
            self.options.clone().unwrap_or(Value::Null),
        );
        Value::Object(map)
    }

    /// The labels of an object (`metadata.labels`), empty when absent or malformed.
    pub(crate) fn labels_of(object: Option<&Value>) -> Option<BTreeMap<String, String>> {
        let object = object?;
        if !object.is_object() {
            return None;
        }
        let labels = object
            .pointer("/metadata/labels")
            .and_then(Value::as_object)
            .map(|m| {
                m.iter()
                    .filter_map(|(k, v)| v.as_str().map(|v| (k.clone(), v.to_string())))
                    .collect()
            })
            .unwrap_or_default();
        Some(labels)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn namespace_requests_carry_their_own_name_as_namespace() {
        let attrs = AdmissionAttributes::new(
            Operation::Create,
            GroupVersionKind::new("", "v1", "Namespace"),
            GroupVersionResource::new("", "v1", "namespaces"),
            "",
            "team-a",
        );
        assert_eq!(attrs.namespace, "team-a");
    }

    #[test]
    fn request_has_null_raw_extensions_and_omits_empty_strings() {
        let attrs = AdmissionAttributes::new(
            Operation::Delete,
            GroupVersionKind::new("apps", "v1", "Deployment"),
            GroupVersionResource::new("apps", "v1", "deployments"),
            "default",
            "web",
        )
        .with_old_object(json!({"kind": "Deployment"}));
        let req = attrs.review_request("u1", None);
        assert_eq!(req["object"], Value::Null);
        assert_eq!(req["options"], Value::Null);
        assert_eq!(req["oldObject"]["kind"], "Deployment");
        assert_eq!(req["operation"], "DELETE");
        assert!(req.get("subResource").is_none());
        assert_eq!(req["userInfo"]["username"], "system:admin");
        assert_eq!(req["requestResource"]["resource"], "deployments");
    }
}
