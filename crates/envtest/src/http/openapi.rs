//! A minimal OpenAPI v3 surface. kubectl reads `/openapi/v3` to learn whether
//! the server supports `fieldValidation` on PATCH of a kind (to choose
//! server-side validation) and refuses to apply when the download fails. The
//! documents list every served kind's PATCH operation with its query
//! parameters; they carry no schemas (kubectl then falls back to its built-in
//! types for strategic merge patches, and to JSON merge patches for custom
//! resources, exactly as with a server whose schema lacks a kind).

use serde_json::{Map, Value, json};

use crate::registry::Registry;

fn gv_path(group: &str, version: &str) -> String {
    if group.is_empty() {
        format!("api/{version}")
    } else {
        format!("apis/{group}/{version}")
    }
}

/// `GET /openapi/v3`.
pub fn root(reg: &Registry) -> Value {
    let mut paths = Map::new();
    for (group, versions) in reg.groups() {
        for v in versions {
            let p = gv_path(group, v);
            paths.insert(
                p.clone(),
                json!({"serverRelativeURL": format!("/openapi/v3/{p}?hash=envtest")}),
            );
        }
    }
    json!({"paths": paths})
}

fn param(name: &str, type_: &str) -> Value {
    json!({"name": name, "in": "query", "schema": {"type": type_, "uniqueItems": true}})
}

/// `GET /openapi/v3/<api/v1 | apis/group/version>`; `None` for unknown paths.
pub fn group_version(reg: &Registry, path: &str) -> Option<Value> {
    let (group, version) = match path.split('/').collect::<Vec<_>>().as_slice() {
        ["api", v] => (String::new(), v.to_string()),
        ["apis", g, v] => (g.to_string(), v.to_string()),
        _ => return None,
    };
    if !reg.serves_group_version(&group, &version) {
        return None;
    }
    let mut paths = Map::new();
    for r in reg
        .resources()
        .iter()
        .filter(|r| r.group == group && r.version == version)
    {
        let prefix = format!("/{}", gv_path(&group, &version));
        let item = if r.namespaced {
            format!("{prefix}/namespaces/{{namespace}}/{}/{{name}}", r.plural)
        } else {
            format!("{prefix}/{}/{{name}}", r.plural)
        };
        let gvk = json!({"group": r.group, "version": r.version, "kind": r.kind});
        paths.insert(
            item,
            json!({
                "patch": {
                    "operationId": format!("patch{}", r.kind),
                    "x-kubernetes-action": "patch",
                    "x-kubernetes-group-version-kind": gvk,
                    "parameters": [
                        param("dryRun", "string"),
                        param("fieldManager", "string"),
                        param("fieldValidation", "string"),
                        param("force", "boolean"),
                    ],
                    "responses": {"200": {"description": "OK"}},
                }
            }),
        );
    }
    Some(json!({
        "openapi": "3.0.0",
        "info": {"title": "Kubernetes", "version": "v1.33.0"},
        "paths": paths,
        "components": {"schemas": {}},
    }))
}
