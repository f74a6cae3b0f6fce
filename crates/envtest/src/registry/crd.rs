//! What a CustomResourceDefinition object says about the resource it defines.

use std::sync::Arc;

use serde_json::Value;

use super::discovery::compare_versions;
use super::{Resource, Source, custom_store_key};
use crate::schema::Structural;

/// One `additionalPrinterColumns` entry.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct PrinterColumn {
    pub name: String,
    pub type_: String,
    pub format: String,
    pub description: String,
    pub priority: i64,
    pub json_path: String,
}

/// Where a `/scale` subresource reads and writes replicas.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct ScalePaths {
    pub spec_replicas: String,
    pub status_replicas: String,
    pub label_selector: Option<String>,
    /// Built-in workloads: the selector is `spec.selector` (a LabelSelector)
    /// rendered as a string, not a string field.
    pub selector_from_spec: bool,
}

impl ScalePaths {
    pub(crate) fn builtin() -> ScalePaths {
        ScalePaths {
            spec_replicas: ".spec.replicas".into(),
            status_replicas: ".status.replicas".into(),
            label_selector: None,
            selector_from_spec: true,
        }
    }
}

#[derive(Debug, Clone)]
pub(crate) struct CustomVersion {
    pub name: String,
    pub served: bool,
    pub storage: bool,
    pub schema: Option<Arc<Structural>>,
    pub columns: Vec<PrinterColumn>,
    pub status: bool,
    pub scale: Option<ScalePaths>,
    pub selectable_fields: Vec<String>,
    /// `deprecated: true`: requests through this version get a Warning.
    pub deprecated: bool,
    pub deprecation_warning: Option<String>,
}

#[derive(Debug, Clone)]
pub(crate) struct CustomResource {
    pub crd_name: String,
    pub group: String,
    pub kind: String,
    pub list_kind: String,
    pub plural: String,
    pub singular: String,
    pub short_names: Vec<String>,
    pub categories: Vec<String>,
    pub namespaced: bool,
    pub storage_version: String,
    pub versions: Vec<CustomVersion>,
    pub established: bool,
    pub terminating: bool,
    /// `spec.conversion`: how objects change version.
    pub conversion: super::Strategy,
}

fn str_at<'a>(v: &'a Value, path: &[&str]) -> &'a str {
    crate::meta::get_path(v, path)
        .and_then(Value::as_str)
        .unwrap_or("")
}

fn strings_at(v: &Value, path: &[&str]) -> Vec<String> {
    crate::meta::get_path(v, path)
        .and_then(Value::as_array)
        .map(|a| {
            a.iter()
                .filter_map(Value::as_str)
                .map(str::to_string)
                .collect()
        })
        .unwrap_or_default()
}

/// The columns a CRD version gets when it declares none: Age.
fn default_columns() -> Vec<PrinterColumn> {
    vec![PrinterColumn {
        name: "Age".into(),
        type_: "date".into(),
        format: String::new(),
        description: String::new(),
        priority: 0,
        json_path: ".metadata.creationTimestamp".into(),
    }]
}

fn parse_columns(v: &Value) -> Vec<PrinterColumn> {
    let Some(cols) = v.get("additionalPrinterColumns").and_then(Value::as_array) else {
        return default_columns();
    };
    if cols.is_empty() {
        return default_columns();
    }
    cols.iter()
        .map(|c| PrinterColumn {
            name: str_at(c, &["name"]).to_string(),
            type_: str_at(c, &["type"]).to_string(),
            format: str_at(c, &["format"]).to_string(),
            description: str_at(c, &["description"]).to_string(),
            priority: c.get("priority").and_then(Value::as_i64).unwrap_or(0),
            json_path: str_at(c, &["jsonPath"]).to_string(),
        })
        .collect()
}

fn parse_scale(v: &Value) -> Option<ScalePaths> {
    let scale = crate::meta::get_path(v, &["subresources", "scale"])?;
    Some(ScalePaths {
        spec_replicas: str_at(scale, &["specReplicasPath"]).to_string(),
        status_replicas: str_at(scale, &["statusReplicasPath"]).to_string(),
        label_selector: scale
            .get("labelSelectorPath")
            .and_then(Value::as_str)
            .map(str::to_string),
        selector_from_spec: false,
    })
}

impl CustomResource {
    /// Reads a stored CRD. Schemas that fail to compile are left out (the CRD
    /// validator refuses them on create, so this only guards old objects).
    pub(crate) fn from_crd(crd: &Value) -> CustomResource {
        let spec = crd.get("spec").cloned().unwrap_or(Value::Null);
        let kind = str_at(&spec, &["names", "kind"]).to_string();
        let list_kind = match str_at(&spec, &["names", "listKind"]) {
            "" => format!("{kind}List"),
            lk => lk.to_string(),
        };
        let plural = str_at(&spec, &["names", "plural"]).to_string();
        let singular = match str_at(&spec, &["names", "singular"]) {
            "" => kind.to_lowercase(),
            s => s.to_string(),
        };
        let versions: Vec<CustomVersion> = spec
            .get("versions")
            .and_then(Value::as_array)
            .map(|vs| {
                vs.iter()
                    .map(|v| CustomVersion {
                        name: str_at(v, &["name"]).to_string(),
                        served: v.get("served").and_then(Value::as_bool).unwrap_or(false),
                        storage: v.get("storage").and_then(Value::as_bool).unwrap_or(false),
                        schema: crate::meta::get_path(v, &["schema", "openAPIV3Schema"])
                            .and_then(|s| Structural::compile(s).ok())
                            .map(Arc::new),
                        columns: parse_columns(v),
                        status: crate::meta::get_path(v, &["subresources", "status"]).is_some(),
                        scale: parse_scale(v),
                        selectable_fields: v
                            .get("selectableFields")
                            .and_then(Value::as_array)
                            .map(|fs| {
                                fs.iter()
                                    .filter_map(|f| f.get("jsonPath").and_then(Value::as_str))
                                    .map(|p| p.trim_start_matches('.').to_string())
                                    .collect()
                            })
                            .unwrap_or_default(),
                        deprecated: v.get("deprecated").and_then(Value::as_bool) == Some(true),
                        deprecation_warning: v
                            .get("deprecationWarning")
                            .and_then(Value::as_str)
                            .map(str::to_string),
                    })
                    .collect()
            })
            .unwrap_or_default();
        let storage_version = versions
            .iter()
            .find(|v| v.storage)
            .or(versions.first())
            .map(|v| v.name.clone())
            .unwrap_or_default();
        let conditions = crate::meta::get_path(crd, &["status", "conditions"])
            .and_then(Value::as_array)
            .cloned()
            .unwrap_or_default();
        let established = conditions.iter().any(|c| {
            c.get("type").and_then(Value::as_str) == Some("Established")
                && c.get("status").and_then(Value::as_str) == Some("True")
        });
        CustomResource {
            crd_name: crate::meta::name(crd).to_string(),
            group: str_at(&spec, &["group"]).to_string(),
            kind,
            list_kind,
            plural,
            singular,
            short_names: strings_at(&spec, &["names", "shortNames"]),
            categories: strings_at(&spec, &["names", "categories"]),
            namespaced: str_at(&spec, &["scope"]) != "Cluster",
            storage_version,
            versions,
            established,
            terminating: crate::meta::is_deleting(crd),
            conversion: super::Strategy::from_spec(crate::meta::name(crd), &spec),
        }
    }

    pub(crate) fn version(&self, name: &str) -> Option<&CustomVersion> {
        self.versions.iter().find(|v| v.name == name)
    }

    /// The Warning every request through a deprecated `version` gets: its
    /// own `deprecationWarning`, else one naming the newest served version
    /// that is not deprecated and newer than it.
    pub(crate) fn deprecation_warning(&self, version: &str) -> Option<String> {
        let v = self.version(version).filter(|v| v.deprecated)?;
        if let Some(text) = &v.deprecation_warning {
            return Some(text.clone());
        }
        let mut text = format!("{}/{version} {} is deprecated", self.group, self.kind);
        let newer = self
            .versions
            .iter()
            .filter(|o| o.served && !o.deprecated)
            .filter(|o| compare_versions(&o.name, version).is_lt())
            .min_by(|a, b| compare_versions(&a.name, &b.name));
        if let Some(newer) = newer {
            text.push_str(&format!(
                "; use {}/{} {}",
                self.group, newer.name, self.kind
            ));
        }
        Some(text)
    }

    fn schema_of(&self, version: &str) -> Option<&Structural> {
        self.version(version).and_then(|v| v.schema.as_deref())
    }

    /// What a read through `version` shows of a stored object, as
    /// kube-apiserver's storage codec decodes it (conversion strategy None):
    /// pruned and defaulted against the schema of the version it was stored
    /// in, then given `version`'s apiVersion and pruned against its schema.
    /// So a field the storage version lacks never reads back, and a default
    /// added to a schema shows on objects stored before. With a conversion
    /// webhook the object stays in its version: the API operations convert it
    /// (`conversion::for_read`).
    pub(crate) fn read_as(&self, stored: &Value, version: &str) -> Value {
        let stored_version = crate::meta::split_api_version(
            stored
                .get("apiVersion")
                .and_then(Value::as_str)
                .unwrap_or(""),
        )
        .1
        .to_string();
        let mut obj = stored.clone();
        if let Some(schema) = self.schema_of(&stored_version) {
            schema.prune(&mut obj);
            schema.apply_defaults(&mut obj);
        }
        if stored_version != version && self.conversion.webhook().is_none() {
            let api_version = crate::meta::api_version(&self.group, version);
            super::set_type_meta(&mut obj, &api_version, &self.kind);
            self.prune_as(&mut obj, version);
        }
        obj
    }

    /// Prunes `obj` against the schema of `version`.
    pub(crate) fn prune_as(&self, obj: &mut Value, version: &str) {
        if let Some(schema) = self.schema_of(version) {
            schema.prune(obj);
        }
    }

    /// What a write of `obj` (already pruned and defaulted for its own
    /// version) stores: the storage version's apiVersion, and only the
    /// fields that version's schema keeps. With a conversion webhook the
    /// object is stored in the version it is in: the API operations convert
    /// it first (`conversion::for_storage`).
    pub(crate) fn storage_form(&self, obj: Value, version: &str) -> Value {
        if version == self.storage_version || self.conversion.webhook().is_some() {
            return obj;
        }
        let mut obj = obj;
        let api_version = crate::meta::api_version(&self.group, &self.storage_version);
        super::set_type_meta(&mut obj, &api_version, &self.kind);
        self.prune_as(&mut obj, &self.storage_version);
        obj
    }

    pub(super) fn resource(self: &Arc<Self>, v: &CustomVersion) -> Resource {
        Resource {
            group: self.group.clone(),
            version: v.name.clone(),
            kind: self.kind.clone(),
            list_kind: self.list_kind.clone(),
            plural: self.plural.clone(),
            singular: self.singular.clone(),
            namespaced: self.namespaced,
            short_names: self.short_names.clone(),
            categories: self.categories.clone(),
            verbs: [
                "delete",
                "deletecollection",
                "get",
                "list",
                "patch",
                "create",
                "update",
                "watch",
            ]
            .iter()
            .map(|s| s.to_string())
            .collect(),
            has_status: v.status,
            scale: v.scale.clone(),
            source: Source::Custom(self.clone()),
            store_key: custom_store_key(&self.group, &self.plural),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn reads_names_versions_and_defaults() {
        let crd = json!({
            "metadata": {"name": "widgets.example.com", "uid": "u"},
            "spec": {"group": "example.com", "scope": "Namespaced",
                "names": {"kind": "Widget", "plural": "widgets", "shortNames": ["wd"]},
                "versions": [
                    {"name": "v1beta1", "served": true, "storage": false},
                    {"name": "v1", "served": true, "storage": true,
                     "subresources": {"status": {}, "scale": {"specReplicasPath": ".spec.replicas", "statusReplicasPath": ".status.replicas"}},
                     "additionalPrinterColumns": [{"name": "Color", "type": "string", "jsonPath": ".spec.color"}]}
                ]},
            "status": {"conditions": [{"type": "Established", "status": "True"}]}
        });
        let cr = CustomResource::from_crd(&crd);
        assert_eq!(cr.list_kind, "WidgetList");
        assert_eq!(cr.singular, "widget");
        assert_eq!(cr.storage_version, "v1");
        assert!(cr.established && cr.namespaced);
        assert_eq!(cr.versions[0].columns[0].name, "Age");
        assert_eq!(cr.versions[1].columns[0].json_path, ".spec.color");
        assert!(cr.versions[1].status && cr.versions[1].scale.is_some());
    }
}
