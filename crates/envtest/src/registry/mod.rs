//! The resources the server serves: built-in kinds (from `builtin::kinds()`)
//! plus the versions of every established CustomResourceDefinition. A
//! registry is immutable; CRD changes build a new one that replaces the old
//! atomically (readers keep the `Arc` they took).

pub(crate) mod crd;
mod crd_conversion;
pub(crate) mod discovery;

use std::collections::HashMap;
use std::sync::{Arc, RwLock};

use serde_json::Value;

pub(crate) use crate::builtin::Subresource;
use crate::builtin::{self, KindInfo, StoredAs};
use crate::schema::Structural;
use crate::store::ResKey;

pub(crate) use crd::{CustomResource, PrinterColumn, ScalePaths};
pub(crate) use crd_conversion::{Strategy, Webhook};

/// Where a served resource's behaviour comes from.
#[derive(Debug, Clone)]
pub(crate) enum Source {
    Builtin(&'static KindInfo),
    Custom(Arc<CustomResource>),
}

/// One served group/version/resource.
#[derive(Debug, Clone)]
pub(crate) struct Resource {
    pub group: String,
    pub version: String,
    pub kind: String,
    pub list_kind: String,
    pub plural: String,
    pub singular: String,
    pub namespaced: bool,
    pub short_names: Vec<String>,
    pub categories: Vec<String>,
    pub verbs: Vec<String>,
    pub has_status: bool,
    pub scale: Option<ScalePaths>,
    pub source: Source,
    /// Shared by every version of a resource (and by both Event APIs).
    pub store_key: ResKey,
}

impl Resource {
    pub(crate) fn api_version(&self) -> String {
        crate::meta::api_version(&self.group, &self.version)
    }

    pub(crate) fn builtin(&self) -> Option<&'static KindInfo> {
        match &self.source {
            Source::Builtin(k) => Some(k),
            Source::Custom(_) => None,
        }
    }

    pub(crate) fn custom(&self) -> Option<&Arc<CustomResource>> {
        match &self.source {
            Source::Custom(c) => Some(c),
            Source::Builtin(_) => None,
        }
    }

    pub(crate) fn is_custom(&self) -> bool {
        matches!(self.source, Source::Custom(_))
    }

    /// The structural schema of this served version (custom resources).
    pub(crate) fn schema(&self) -> Option<&Structural> {
        self.custom()
            .and_then(|c| c.version(&self.version))
            .and_then(|v| v.schema.as_deref())
    }

    pub(crate) fn supports(&self, verb: &str) -> bool {
        self.verbs.iter().any(|v| v == verb)
    }

    /// The verbs of subresource `sub`, or `None` when this resource has no
    /// such subresource.
    pub(crate) fn subresource_verbs(&self, sub: &str) -> Option<&'static [&'static str]> {
        self.subresources()
            .into_iter()
            .find(|s| s.name == sub)
            .map(|s| s.verbs)
    }

    /// The subresources served beside this resource, as kube-apiserver v1.32
    /// serves (and lists in discovery) them, by name: `scale` and `status`
    /// where the resource has them, a built-in kind's others from its row of
    /// the kinds table.
    pub(crate) fn subresources(&self) -> Vec<Subresource> {
        const READ_WRITE: &[&str] = &["get", "patch", "update"];
        let mut out = Vec::new();
        if self.scale.is_some() {
            out.push(Subresource {
                name: "scale",
                group: Some(("autoscaling", "v1")),
                kind: Some("Scale"),
                verbs: READ_WRITE,
            });
        }
        if self.has_status {
            out.push(Subresource {
                name: "status",
                group: None,
                kind: None,
                verbs: READ_WRITE,
            });
        }
        if let Some(kind) = self.builtin() {
            out.extend(kind.other_subresources.iter().cloned());
        }
        out.sort_by_key(|s| s.name);
        out
    }

    /// Whether this is `certificatesigningrequests`, which also serves `/approval`.
    pub(crate) fn is_certificate_signing_requests(&self) -> bool {
        self.group == "certificates.k8s.io" && self.plural == "certificatesigningrequests"
    }

    /// The kind whose storage a built-in kind is a view of, if any (its row
    /// of the kinds table says).
    pub(crate) fn stored_as(&self) -> Option<StoredAs> {
        self.builtin().and_then(|k| k.stored_as)
    }

    /// Converts a stored object to what this version serves.
    // Named for the direction of the conversion (storage to this version).
    #[allow(clippy::wrong_self_convention)]
    pub(crate) fn from_storage(&self, stored: &Arc<Value>) -> Arc<Value> {
        if let Some(storage) = self.stored_as() {
            let mut out = storage.read_stored(stored);
            set_type_meta(&mut out, &self.api_version(), &self.kind);
            return Arc::new(out);
        }
        if let Some(custom) = self.custom() {
            return Arc::new(custom.read_as(stored, &self.version));
        }
        stored.clone()
    }

    /// Converts an object of this version to its stored form.
    pub(crate) fn to_storage(&self, obj: Value) -> Value {
        if let Some(storage) = self.stored_as() {
            let mut out = storage.to_storage(&obj);
            set_type_meta(&mut out, storage.api_version(), storage.kind());
            return out;
        }
        match self.custom() {
            Some(custom) => custom.storage_form(obj, &self.version),
            None => {
                let mut obj = obj;
                crate::meta::type_meta_first(&mut obj);
                obj
            }
        }
    }
}

pub(crate) fn set_type_meta(obj: &mut Value, api_version: &str, kind: &str) {
    if let Value::Object(map) = obj {
        map.insert("apiVersion".into(), Value::String(api_version.to_string()));
        map.insert("kind".into(), Value::String(kind.to_string()));
    }
    crate::meta::type_meta_first(obj);
}

/// Whether `group/version` `kind` is a built-in kind this server knows.
pub(crate) fn is_builtin_kind(group: &str, version: &str, kind: &str) -> bool {
    builtin::kinds()
        .iter()
        .chain(builtin::older_versions())
        .any(|b| b.group == group && b.version == version && b.kind == kind)
}

/// Built-in kinds in their storage: `configmaps`, `apps/deployments`.
pub(crate) fn builtin_store_key(kind: &KindInfo) -> ResKey {
    let (group, plural) = match kind.stored_as {
        Some(storage) => (storage.group(), storage.plural()),
        None => (kind.group, kind.plural),
    };
    if group.is_empty() {
        Arc::from(plural)
    } else {
        Arc::from(format!("{group}/{plural}"))
    }
}

/// Storage of a custom resource (all its versions).
pub(crate) fn custom_store_key(group: &str, plural: &str) -> ResKey {
    Arc::from(format!("{group}/{plural}"))
}

/// An immutable set of served resources.
#[derive(Debug, Default)]
pub(crate) struct Registry {
    resources: Vec<Arc<Resource>>,
    by_gvr: HashMap<(String, String, String), Arc<Resource>>,
    /// Group versions served, in discovery order (groups) and preference order (versions).
    groups: Vec<(String, Vec<String>)>,
    /// CRDs by name, including ones not (yet) served.
    crds: HashMap<String, Arc<CustomResource>>,
}

impl Registry {
    pub(crate) fn new(crds: Vec<Arc<CustomResource>>) -> Registry {
        let mut resources: Vec<Arc<Resource>> = builtin::kinds()
            .iter()
            .chain(builtin::older_versions())
            .map(|k| Arc::new(Resource::from_builtin(k)))
            .collect();
        let mut crd_map = HashMap::new();
        for crd in crds {
            if crd.established {
                for v in crd.versions.iter().filter(|v| v.served) {
                    resources.push(Arc::new(crd.resource(v)));
                }
            }
            crd_map.insert(crd.crd_name.clone(), crd);
        }
        let mut by_gvr = HashMap::new();
        for r in &resources {
            by_gvr
                .entry((r.group.clone(), r.version.clone(), r.plural.clone()))
                .or_insert_with(|| r.clone());
        }
        let groups = discovery::group_order(&resources);
        Registry {
            resources,
            by_gvr,
            groups,
            crds: crd_map,
        }
    }

    pub(crate) fn resources(&self) -> &[Arc<Resource>] {
        &self.resources
    }

    pub(crate) fn groups(&self) -> &[(String, Vec<String>)] {
        &self.groups
    }

    pub(crate) fn get(&self, group: &str, version: &str, plural: &str) -> Option<Arc<Resource>> {
        self.by_gvr
            .get(&(group.to_string(), version.to_string(), plural.to_string()))
            .cloned()
    }

    pub(crate) fn serves_group_version(&self, group: &str, version: &str) -> bool {
        self.groups
            .iter()
            .any(|(g, vs)| g == group && vs.iter().any(|v| v == version))
    }

    /// The resource of `kind` in `group/version` (for owner references and events).
    pub(crate) fn by_kind(&self, group: &str, version: &str, kind: &str) -> Option<Arc<Resource>> {
        self.resources
            .iter()
            .find(|r| r.group == group && r.version == version && r.kind == kind)
            .cloned()
    }

    /// Any served version of the storage `key`, preferring the storage version.
    pub(crate) fn by_store_key(&self, key: &str) -> Option<Arc<Resource>> {
        let mut found: Option<&Arc<Resource>> = None;
        for r in self.resources.iter().filter(|r| &*r.store_key == key) {
            let preferred = match &r.source {
                Source::Custom(c) => c.storage_version == r.version,
                Source::Builtin(k) => {
                    k.group != "events.k8s.io" && (k.group, k.version) != ("autoscaling", "v1")
                }
            };
            if found.is_none() || preferred {
                found = Some(r);
                if preferred {
                    break;
                }
            }
        }
        found.cloned()
    }

    pub(crate) fn crd(&self, name: &str) -> Option<&Arc<CustomResource>> {
        self.crds.get(name)
    }

    pub(crate) fn crds(&self) -> impl Iterator<Item = &Arc<CustomResource>> {
        self.crds.values()
    }
}

impl Resource {
    fn from_builtin(k: &'static KindInfo) -> Resource {
        Resource {
            group: k.group.to_string(),
            version: k.version.to_string(),
            kind: k.kind.to_string(),
            list_kind: format!("{}List", k.kind),
            plural: k.plural.to_string(),
            singular: k.singular.to_string(),
            namespaced: k.namespaced,
            short_names: k.short_names.iter().map(|s| s.to_string()).collect(),
            categories: k.categories.iter().map(|s| s.to_string()).collect(),
            verbs: k.verbs.iter().map(|s| s.to_string()).collect(),
            has_status: k.has_status,
            scale: k.has_scale.then(ScalePaths::builtin),
            source: Source::Builtin(k),
            store_key: builtin_store_key(k),
        }
    }
}

/// The live registry shared by the HTTP layer and the controllers.
#[derive(Default)]
pub(crate) struct SharedRegistry {
    current: RwLock<Arc<Registry>>,
}

impl SharedRegistry {
    pub(crate) fn new(reg: Registry) -> SharedRegistry {
        SharedRegistry {
            current: RwLock::new(Arc::new(reg)),
        }
    }

    pub(crate) fn load(&self) -> Arc<Registry> {
        self.current
            .read()
            .unwrap_or_else(|e| e.into_inner())
            .clone()
    }

    pub(crate) fn replace(&self, reg: Registry) {
        *self.current.write().unwrap_or_else(|e| e.into_inner()) = Arc::new(reg);
    }
}
