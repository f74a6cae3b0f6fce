//! Discovery documents: the legacy `/api`, `/apis`, group and group-version
//! documents (shaped as kube-apiserver v1.32 serves them, checked against the
//! recorded transcripts) and aggregated discovery
//! (`apidiscovery.k8s.io/v2`), which current kubectl requests first.

use std::cmp::Ordering;
use std::sync::Arc;

use base64::Engine;
use serde_json::{Value, json};
use sha2::{Digest, Sha256};

use super::{Registry, Resource, Source};
use crate::builtin::KindInfo;

/// Built-in groups in the order kube-apiserver lists them; other groups
/// (custom resources) follow alphabetically.
const GROUP_ORDER: &[&str] = &[
    "",
    "apiregistration.k8s.io",
    "apps",
    "events.k8s.io",
    "authentication.k8s.io",
    "authorization.k8s.io",
    "autoscaling",
    "batch",
    "certificates.k8s.io",
    "networking.k8s.io",
    "policy",
    "rbac.authorization.k8s.io",
    "storage.k8s.io",
    "admissionregistration.k8s.io",
    "apiextensions.k8s.io",
    "scheduling.k8s.io",
    "coordination.k8s.io",
    "node.k8s.io",
    "discovery.k8s.io",
    "flowcontrol.apiserver.k8s.io",
];

/// Kubernetes' version ordering: GA before beta before alpha, higher numbers
/// first, anything else last and alphabetical.
pub(crate) fn compare_versions(a: &str, b: &str) -> Ordering {
    fn parse(v: &str) -> Option<(u32, u8, u32)> {
        let rest = v.strip_prefix('v')?;
        let digits: String = rest.chars().take_while(char::is_ascii_digit).collect();
        let major: u32 = digits.parse().ok()?;
        let tail = &rest[digits.len()..];
        if tail.is_empty() {
            return Some((major, 2, 0));
        }
        let (stage, num) = if let Some(n) = tail.strip_prefix("beta") {
            (1, n)
        } else if let Some(n) = tail.strip_prefix("alpha") {
            (0, n)
        } else {
            return None;
        };
        Some((major, stage, num.parse().ok()?))
    }
    match (parse(a), parse(b)) {
        (Some((ma, sa, na)), Some((mb, sb, nb))) => sb.cmp(&sa).then(mb.cmp(&ma)).then(nb.cmp(&na)),
        (Some(_), None) => Ordering::Less,
        (None, Some(_)) => Ordering::Greater,
        (None, None) => a.cmp(b),
    }
}

pub(super) fn group_order(resources: &[Arc<Resource>]) -> Vec<(String, Vec<String>)> {
    let mut groups: Vec<(String, Vec<String>)> = Vec::new();
    for r in resources {
        match groups.iter_mut().find(|(g, _)| *g == r.group) {
            Some((_, versions)) => {
                if !versions.contains(&r.version) {
                    versions.push(r.version.clone());
                }
            }
            None => groups.push((r.group.clone(), vec![r.version.clone()])),
        }
    }
    let rank = |g: &str| {
        GROUP_ORDER
            .iter()
            .position(|k| *k == g)
            .unwrap_or(usize::MAX)
    };
    groups.sort_by(|(a, _), (b, _)| rank(a).cmp(&rank(b)).then(a.cmp(b)));
    for (_, versions) in &mut groups {
        versions.sort_by(|a, b| compare_versions(a, b));
    }
    groups
}

/// `storageVersionHash`: the first 8 bytes of SHA-256("group/version/Kind"), base64.
pub(crate) fn storage_version_hash(group: &str, version: &str, kind: &str) -> String {
    let digest = Sha256::digest(format!("{group}/{version}/{kind}").as_bytes());
    base64::engine::general_purpose::STANDARD.encode(&digest[..8])
}

fn storage_hash_for(r: &Resource) -> String {
    match &r.source {
        Source::Custom(c) => storage_version_hash(&c.group, &c.storage_version, &c.kind),
        Source::Builtin(kind) => builtin_storage_hash(kind),
    }
}

/// Built-in kinds hash their storage version: CRDs are stored as v1beta1,
/// events.k8s.io Events as core/v1 Events.
pub(crate) fn builtin_storage_hash(kind: &KindInfo) -> String {
    match (kind.group, kind.kind) {
        ("apiextensions.k8s.io", "CustomResourceDefinition") => {
            storage_version_hash(kind.group, "v1beta1", kind.kind)
        }
        ("events.k8s.io", "Event") => storage_version_hash("", "v1", "Event"),
        ("autoscaling", _) => storage_version_hash(kind.group, "v2", kind.kind),
        _ => storage_version_hash(kind.group, kind.version, kind.kind),
    }
}

fn gv_doc(group: &str, version: &str) -> Value {
    json!({"groupVersion": crate::meta::api_version(group, version), "version": version})
}

/// `GET /api`.
pub(crate) fn api_versions(server_address: &str) -> Value {
    json!({
        "kind": "APIVersions",
        "versions": ["v1"],
        "serverAddressByClientCIDRs": [{"clientCIDR": "0.0.0.0/0", "serverAddress": server_address}],
    })
}

fn group_doc(group: &str, versions: &[String]) -> Value {
    let list: Vec<Value> = versions.iter().map(|v| gv_doc(group, v)).collect();
    let preferred = versions
        .first()
        .map(|v| gv_doc(group, v))
        .unwrap_or(Value::Null);
    json!({"name": group, "versions": list, "preferredVersion": preferred})
}

/// `GET /apis`.
pub(crate) fn api_group_list(reg: &Registry) -> Value {
    let groups: Vec<Value> = reg
        .groups()
        .iter()
        .filter(|(g, _)| !g.is_empty())
        .map(|(g, vs)| group_doc(g, vs))
        .collect();
    json!({"kind": "APIGroupList", "apiVersion": "v1", "groups": groups})
}

/// `GET /apis/<group>`.
pub(crate) fn api_group(reg: &Registry, group: &str) -> Option<Value> {
    let (g, vs) = reg.groups().iter().find(|(g, _)| g == group)?;
    let mut doc = json!({"kind": "APIGroup", "apiVersion": "v1"});
    if let (Value::Object(out), Value::Object(body)) = (&mut doc, group_doc(g, vs)) {
        out.extend(body);
    }
    Some(doc)
}

fn resource_entries(r: &Resource) -> Vec<Value> {
    // kube-apiserver names a resource without a declared singular by its
    // lower-cased kind.
    let singular = if r.singular.is_empty() {
        r.kind.to_lowercase()
    } else {
        r.singular.clone()
    };
    let mut main = json!({
        "name": r.plural, "singularName": singular, "namespaced": r.namespaced,
        "kind": r.kind, "verbs": r.verbs,
    });
    if let Value::Object(m) = &mut main {
        if !r.short_names.is_empty() {
            m.insert("shortNames".into(), json!(r.short_names));
        }
        if !r.categories.is_empty() {
            m.insert("categories".into(), json!(r.categories));
        }
        if r.builtin().is_none_or(KindInfo::is_stored) {
            m.insert("storageVersionHash".into(), json!(storage_hash_for(r)));
        }
    }
    let mut out = vec![main];
    for sub in r.subresources() {
        let mut entry = json!({
            "name": format!("{}/{}", r.plural, sub.name), "singularName": "",
            "namespaced": r.namespaced,
        });
        if let (Value::Object(m), Some((group, version))) = (&mut entry, sub.group) {
            m.insert("group".into(), json!(group));
            m.insert("version".into(), json!(version));
        }
        if let Value::Object(m) = &mut entry {
            m.insert("kind".into(), json!(sub.kind.unwrap_or(&r.kind)));
            m.insert("verbs".into(), json!(sub.verbs));
        }
        out.push(entry);
    }
    out
}

/// `GET /api/v1` or `GET /apis/<group>/<version>`.
pub(crate) fn api_resource_list(reg: &Registry, group: &str, version: &str) -> Option<Value> {
    if !reg.serves_group_version(group, version) {
        return None;
    }
    let mut entries: Vec<Value> = reg
        .resources()
        .iter()
        .filter(|r| r.group == group && r.version == version)
        .flat_map(|r| resource_entries(r))
        .collect();
    entries.sort_by(|a, b| {
        let name = |v: &Value| v["name"].as_str().unwrap_or("").to_string();
        name(a).cmp(&name(b))
    });
    let gv = crate::meta::api_version(group, version);
    Some(if group.is_empty() {
        json!({"kind": "APIResourceList", "groupVersion": gv, "resources": entries})
    } else {
        json!({"kind": "APIResourceList", "apiVersion": "v1", "groupVersion": gv, "resources": entries})
    })
}

fn aggregated_resource(r: &Resource) -> Value {
    let subresources: Vec<Value> = r
        .subresources()
        .into_iter()
        .map(|sub| {
            let (group, version) = sub.group.unwrap_or((&r.group, &r.version));
            json!({
                "subresource": sub.name,
                "responseKind": {"group": group, "version": version, "kind": sub.kind.unwrap_or(&r.kind)},
                "verbs": sub.verbs,
            })
        })
        .collect();
    let mut doc = json!({
        "resource": r.plural,
        "responseKind": {"group": r.group, "version": r.version, "kind": r.kind},
        "scope": if r.namespaced { "Namespaced" } else { "Cluster" },
        "singularResource": r.singular,
        "verbs": r.verbs,
    });
    if let Value::Object(m) = &mut doc {
        if !r.short_names.is_empty() {
            m.insert("shortNames".into(), json!(r.short_names));
        }
        if !r.categories.is_empty() {
            m.insert("categories".into(), json!(r.categories));
        }
        if !subresources.is_empty() {
            m.insert("subresources".into(), Value::Array(subresources));
        }
    }
    doc
}

/// Aggregated discovery for `/api` (`core = true`) or `/apis`.
pub(crate) fn aggregated(reg: &Registry, core: bool, api_version: &str) -> Value {
    let items: Vec<Value> = reg
        .groups()
        .iter()
        .filter(|(g, _)| g.is_empty() == core)
        .map(|(g, versions)| {
            let versions: Vec<Value> = versions
                .iter()
                .map(|v| {
                    let mut resources: Vec<&Arc<Resource>> = reg
                        .resources()
                        .iter()
                        .filter(|r| &r.group == g && &r.version == v)
                        .collect();
                    resources.sort_by(|a, b| a.plural.cmp(&b.plural));
                    let resources: Vec<Value> = resources
                        .into_iter()
                        .map(|r| aggregated_resource(r))
                        .collect();
                    json!({"version": v, "resources": resources, "freshness": "Current"})
                })
                .collect();
            let metadata = if g.is_empty() {
                json!({"creationTimestamp": null})
            } else {
                json!({"name": g, "creationTimestamp": null})
            };
            json!({"metadata": metadata, "versions": versions})
        })
        .collect();
    json!({
        "kind": "APIGroupDiscoveryList",
        "apiVersion": api_version,
        "metadata": {},
        "items": items,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn storage_hash_matches_kube_apiserver() {
        assert_eq!(storage_version_hash("", "v1", "ConfigMap"), "qFsyl6wFWjQ=");
        assert_eq!(
            storage_version_hash("apps", "v1", "Deployment"),
            "8aSe+NMegvE="
        );
        assert_eq!(
            storage_version_hash("example.com", "v1", "Widget"),
            "gIwvi5rymmg="
        );
    }

    #[test]
    fn versions_sort_kube_aware() {
        let mut vs = vec!["v1alpha1", "foo", "v1", "v2beta1", "v2", "v1beta1"];
        vs.sort_by(|a, b| compare_versions(a, b));
        assert_eq!(
            vs,
            vec!["v2", "v1", "v2beta1", "v1beta1", "v1alpha1", "foo"]
        );
    }
}
